"""`nanorec verify FILE`, `nanorec recover FILE -o OUT` and `nanorec repack A -o B`.

`verify` checks an archive (zip structure, CRCs, index, per-message checksums, members);
given a native file it checks it as its format: converted into a temporary archive, which is
verified and exported back, and the bytes compared with the file. Exit status: 0 when all is
well, 1 when a problem is found, 2 when the input cannot be read at all.
"""

from __future__ import annotations

import io
import sys
from pathlib import Path
from typing import Annotated

import typer

from nanorec import registry
from nanorec.archive.layout import COMPACT, STORED, use_layout
from nanorec.cli.app import EXIT_PROBLEM, app, run
from nanorec.cli.convert import roundtrip_one
from nanorec.cli.inputs import check_input, check_output, input_path, staged_output
from nanorec.cli.options import Force, Json, Output, Stored
from nanorec.contract import ChecksMembers
from nanorec.errors import NanorecError
from nanorec.untyped import JsonObject


@app.command()
def verify(
    typed: Annotated[
        str,
        typer.Argument(
            help="An archive (local or by URL), or a native recording.",
            metavar="FILE",
            show_default=False,
        ),
    ],
    quiet: Annotated[
        bool, typer.Option("--quiet", "-q", help="Print nothing when all is well.")
    ] = False,
    as_json: Json = False,
) -> None:
    """Check an archive's zip structure, CRCs, index, checksums and members; or check a
    native file by converting it and exporting it back byte for byte.

    Example: nanorec verify run.nanover.zip --json
    """
    from nanorec.outputs.tables import dumps

    file = input_path(typed)

    def action() -> int:
        check_input(file)
        if registry.is_archive(registry.read_head(file)):
            result = _verify_archive(file, quiet or as_json)
        else:
            result = _verify_native(file)
        if as_json:
            typer.echo(dumps(result))
        elif result["ok"]:
            if not quiet:
                typer.echo(f"{file}: OK ({result['summary']})")
        else:
            for problem in result["problems"]:
                typer.echo(f"{file}: {problem}", err=True)
        return 0 if result["ok"] else EXIT_PROBLEM

    raise typer.Exit(run(action))


def _verify_archive(path: Path, quiet: bool) -> JsonObject:
    from nanorec.maintain.verify import verify as verify_archive  # numpy: not for `nanorec --help`

    show = not quiet and sys.stderr.isatty()
    with typer.progressbar(
        length=1, label="verifying", file=sys.stderr if show else io.StringIO()
    ) as bar:

        def progress(done: int, total: int) -> None:
            bar.length = max(total, 1)
            bar.update(done - bar.pos)

        report = verify_archive(path, progress=progress)
    kind = "nanorec" if report.has_description else "NanoVer"
    problems = [str(problem) for problem in report.problems]
    if report.ok and report.has_description:
        problems += _format_problems(path)
    return {
        "file": str(path),
        "kind": "archive",
        "ok": not problems,
        "messages": report.message_count,
        "problems": problems,
        "summary": f"{report.message_count} messages, {kind} archive",
    }


def _format_problems(path: Path) -> list[str]:
    """What the archive's format finds wrong in its own members (why: a whole zip with a
    short or hostile side member would pass every check above, then fail on first read).
    The archive is opened as its format's recording, and a recording offering
    `check_members()` reads each of its side members once."""
    try:
        with registry.open(path) as recording:
            if isinstance(recording, ChecksMembers):
                recording.check_members()
    except NanorecError as error:
        return [f"format: {error.message}"]
    return []


def _verify_native(path: Path) -> JsonObject:
    result = roundtrip_one(path)
    problems = [f"damaged: {region}" for region in result["damaged"]]
    if not result["identical"]:
        problems.append("the archive does not give the file back byte for byte")
    return {
        "file": str(path),
        "kind": result["format"],
        "ok": not problems,
        "messages": result["messages"],
        "problems": problems,
        "cut": result["cut"],
        "summary": f"{result['format']}, {result['messages']} messages, converts and exports "
        "back byte for byte" + (f"; cut short: {result['cut']}" if result["cut"] else ""),
    }


@app.command()
def recover(
    file: Annotated[Path, typer.Argument(help="Partial or damaged archive (e.g. .x.partial).")],
    output: Output,
    force: Force = False,
    stored: Stored = False,
) -> None:
    """Rebuild a valid archive from every complete message of a killed writer's file; an
    archive a converter was writing becomes that format's archive again (export, queries).

    Example: nanorec recover .run.nanover.zip.partial -o run.nanover.zip
    """
    from nanorec.maintain.adopt import adopt
    from nanorec.maintain.recover import recover as recover_archive

    def action() -> None:
        check_input(file)
        check_output(output, file)
        with staged_output(output, force) as written, use_layout(STORED if stored else COMPACT):
            result = recover_archive(file, written or output, overwrite=force)
            name = adopt(result.output)
            typer.echo(
                f"{result.output}: {result.messages} messages recovered "
                f"({result.recovered_bytes} bytes kept, {result.discarded_bytes} dropped: "
                f"{result.stop_reason})" + (f"; a {name} archive again" if name else "")
            )
        if result.failed_checksums:
            typer.echo(
                f"nanorec: warning: {result.failed_checksums} damaged messages dropped (they "
                "fail the CRC-32 the archive recorded for them)",
                err=True,
            )
        if result.unknown_timestamps:
            typer.echo(
                f"nanorec: warning: {result.unknown_timestamps} messages had no embedded "
                "timestamp (written by another tool); each got the previous message's time",
                err=True,
            )

    run(action)


@app.command()
def repack(
    file: Annotated[Path, typer.Argument(help="An archive.")],
    output: Output,
    stored: Stored = False,
    force: Force = False,
) -> None:
    """Write an archive again in the compact layout (or the stored one with --stored): the
    same messages, index and members, so it exports the same bytes; its index in pages, so
    that an archive written before them reads by URL with a few requests.

    Example: nanorec repack old.nanover.zip -o small.nanover.zip
    """
    from nanorec.maintain.repack import repack as repack_archive

    def action() -> None:
        check_input(file)
        check_output(output, file)
        with staged_output(output, force) as written:
            result = repack_archive(file, written or output, compact=not stored, overwrite=force)
            layout = "compact" if result.compact else "stored"
            ratio = result.output_size / max(result.input_size, 1)
            typer.echo(
                f"{result.output}: {result.messages} messages, {layout} layout, "
                f"{result.output_size} bytes ({ratio:.3f}x the input)"
            )

    run(action)
