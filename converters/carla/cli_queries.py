"""`nanorec carla info | collisions | blocked`: CARLA's recorder queries, byte for byte.

What `client.show_recorder_file_info`, `show_recorder_collisions` and
`show_recorder_actors_blocked` print, from a CARLA file or the native bytes of its archive,
with options for what depends on the server (time zone, C library, hash-map order).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, cast

import typer

from nanorec.cli import fail, run
from nanorec.cli.hooks import VerbCall, verb_hook
from nanorec.cli.inputs import check_input
from nanorec.outputs.tables import json_safe
from nanorec.selection import check_number, check_seconds

from .cli import FamilyOption, app, check_family
from .verb_options import CarlaInfoOptions

if TYPE_CHECKING:
    from .query import HashOrderName, Labels

_TZ_HELP = (
    "The server's local time zone for the Date line: an IANA name (Europe/Berlin) or an "
    "offset (+02:00). CARLA prints local time; default UTC."
)
_WINDOWS_HELP = (
    "Format as a Windows server does: exact ties round half away from zero "
    "(-9144.125 -> -9144.13), NaNs print the MSVC way; blocked rows use MSVC's hash order."
)
_FORM_HELP = "Force a whole text form: 0.9.4, 0.9.5, 0.9.6, 0.9.15 or 2026 (default: by family)."


def _write_chunks(chunks: Iterator[str]) -> bool:
    """Stream query text to stdout as bytes; False if it was CARLA's not-a-recorder line."""
    from .query import NOT_A_RECORDER

    out = sys.stdout.buffer
    first = True
    try:
        for chunk in chunks:
            out.write(chunk.encode("utf-8", "surrogateescape"))
            if first and chunk == NOT_A_RECORDER:
                out.flush()
                return False
            first = False
        out.flush()
    except BrokenPipeError:  # `nanorec info --show-all big.log | head`
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        raise typer.Exit(0) from None
    return True


def _query(
    path: Path, make: Callable[[Path], Iterator[str]], make_json: Callable[[Path], object]
) -> None:
    """Run a query on a CARLA file or on the native bytes of a nanorec archive."""
    from .export import native_file

    run(lambda: check_input(path))  # one wording for missing, non-regular and empty files

    def action() -> bool:
        try:
            with native_file(path) as native:
                if make_json is not _NO_JSON:
                    typer.echo(json.dumps(json_safe(make_json(native)), indent=2, allow_nan=False))
                    return True
                return _write_chunks(make(native))
        except ValueError as error:
            fail(str(error))

    if not run(action):
        fail(f"{path}: not a CARLA recorder file (the magic string CARLA_RECORDER is missing)")


def _NO_JSON(_: Path) -> object:  # a marker: plain text wanted
    return None


@verb_hook(app, "info", options=CarlaInfoOptions)
def info_hook(call: VerbCall[CarlaInfoOptions]) -> int:
    """Print exactly what CARLA's client.show_recorder_file_info(FILE, show_all) prints.

    Labels follow the release that wrote the file; numbers and the date follow the
    server's C library and time zone (glibc and UTC unless --windows / --tz).

    Example: nanorec info town03.log --show-all --tz Europe/Berlin
    """
    from . import query  # its JSON documents imported for --json only

    extra = call.extra
    check_family(extra.family)
    if extra.labels not in (None, "old", "new"):
        fail(f"--labels takes old or new, not {extra.labels!r}")
    chosen = cast("Labels | None", extra.labels)
    _query(
        call.source,
        lambda native: query.iter_file_info(
            native,
            show_all=extra.show_all,
            tz=extra.tz,
            windows=extra.windows,
            family=extra.family,
            labels=chosen,
            form=extra.form,
        ),
        (lambda native: query.file_info_json(native, tz=extra.tz, family=extra.family))
        if call.as_json
        else _NO_JSON,
    )
    return 0


@app.command("collisions")
def collisions_command(
    file: Annotated[Path, typer.Argument(help="CARLA recorder file (.log/.rec) or its archive.")],
    type1: Annotated[
        str,
        typer.Option(
            "--type1",
            help="Category of actor 1: o other, v vehicle, w walker, t traffic light, "
            "h hero, a any.",
            metavar="LETTER",
        ),
    ] = "a",
    type2: Annotated[
        str, typer.Option("--type2", help="Category of actor 2 (same letters).", metavar="LETTER")
    ] = "a",
    tz: Annotated[str | None, typer.Option("--tz", help=_TZ_HELP, metavar="ZONE")] = None,
    windows: Annotated[bool, typer.Option("--windows", help=_WINDOWS_HELP)] = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="A JSON document of the collision rows instead.")
    ] = False,
    family: FamilyOption = None,
    form: Annotated[str | None, typer.Option("--form", help=_FORM_HELP, metavar="FORM")] = None,
) -> None:
    """Print exactly what CARLA's client.show_recorder_collisions(FILE, type1, type2) prints.

    A collision lasting several frames prints once; CARLA's quirks are kept (category
    letters h/a for traffic signs/sensors, the trailer's Duration without decimals after
    a row).

    Example: nanorec collisions town03.log --type1 v --type2 a
    """
    from .query import collisions_json, iter_collisions

    check_family(family)
    _query(
        file,
        lambda native: iter_collisions(
            native, type1, type2, tz=tz, windows=windows, family=family, form=form
        ),
        (lambda native: collisions_json(native, type1, type2, tz=tz, family=family))
        if as_json
        else _NO_JSON,
    )


@app.command("blocked")
def blocked_command(
    file: Annotated[Path, typer.Argument(help="CARLA recorder file (.log/.rec) or its archive.")],
    min_time: Annotated[
        float, typer.Option("--min-time", help="Seconds an actor must stay stopped.")
    ] = 60.0,
    min_distance: Annotated[
        float, typer.Option("--min-distance", help="Centimetres it may move and count as stopped.")
    ] = 100.0,
    tz: Annotated[str | None, typer.Option("--tz", help=_TZ_HELP, metavar="ZONE")] = None,
    windows: Annotated[bool, typer.Option("--windows", help=_WINDOWS_HELP)] = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="A JSON document of the blocked rows instead.")
    ] = False,
    family: FamilyOption = None,
    form: Annotated[str | None, typer.Option("--form", help=_FORM_HELP, metavar="FORM")] = None,
    hash_order: Annotated[
        str | None,
        typer.Option(
            "--hash-order",
            help="Order of equal-duration rows of actors stopped until the end: libc++ "
            "(Linux servers, default), msvc (default with --windows), libstdc++, or file.",
            metavar="NAME",
        ),
    ] = None,
) -> None:
    """Print exactly what CARLA's client.show_recorder_actors_blocked(FILE, ...) prints.

    Rows are actors that moved less than --min-distance cm for at least --min-time
    seconds, longest first; an actor stopped until the end counts the last frame's
    duration of -1 s, as CARLA does.

    Example: nanorec blocked town03.log --min-time 60 --min-distance 100
    """
    from nanorec.hashorder import ORDERS

    from .query import actors_blocked_json, iter_actors_blocked

    check_family(family)
    run(
        lambda: (
            check_seconds("--min-time", min_time),
            check_number("--min-distance", min_distance),
        )
    )
    if hash_order is not None and hash_order not in ORDERS:
        fail(f"--hash-order takes one of {', '.join(ORDERS)}, not {hash_order!r}")
    order = cast("HashOrderName | None", hash_order)
    _query(
        file,
        lambda native: iter_actors_blocked(
            native,
            min_time,
            min_distance,
            tz=tz,
            windows=windows,
            family=family,
            form=form,
            hash_order=order,
        ),
        (
            lambda native: actors_blocked_json(
                native, min_time, min_distance, tz=tz, family=family, hash_order=order
            )
        )
        if as_json
        else _NO_JSON,
    )
