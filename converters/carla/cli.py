"""CARLA commands registered on the `nanorec` CLI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from converters.carla.ids import FAMILIES
from nanorec.cli import app, fail
from nanorec.errors import NanorecError

_FAMILY_HELP = "Force a release family instead of detecting it: " + ", ".join(FAMILIES) + "."


@app.command("roundtrip")
def roundtrip_command(
    files: Annotated[list[Path], typer.Argument(help="CARLA recorder files (.log/.rec) to check.")],
    family: Annotated[
        str | None, typer.Option("--family", "-f", help=_FAMILY_HELP, metavar="NAME")
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print one JSON array of reports instead of text.")
    ] = False,
    strict: Annotated[
        bool,
        typer.Option(
            "--strict",
            help="Fail on a known packet whose body does not fit, instead of carrying it raw.",
        ),
    ] = False,
) -> None:
    """Decode each CARLA recording fully, encode it back in memory, compare the bytes.

    Prints per file the release family detected (and why), frames, packets, packets
    carried raw by id, whether the file is truncated and whether the bytes are identical.
    Exit status 1 if any file is not byte-identical, 2 if any file is unreadable.

    Example: nanorec roundtrip recordings/*.log --json
    """
    from converters.carla.roundtrip import format_report, roundtrip

    if family is not None and family not in FAMILIES:
        fail(f"unknown CARLA release family {family!r}; known: {', '.join(FAMILIES)}")
    reports = []
    unreadable = False
    for path in files:
        try:
            report = roundtrip(path, family=family, strict=strict)
        except NanorecError as error:
            typer.echo(f"nanorec: {path}: {error}", err=True)
            unreadable = True
            continue
        except OSError as error:
            typer.echo(f"nanorec: {path}: {error.strerror or error}", err=True)
            unreadable = True
            continue
        reports.append(report)
        if not as_json:
            typer.echo(format_report(report))
    if as_json:
        typer.echo(json.dumps([report.as_dict() for report in reports], indent=2))
    if unreadable:
        raise typer.Exit(2)
    if not all(report.identical for report in reports):
        raise typer.Exit(1)
