"""Container commands: `nanorec verify ARCHIVE` and `nanorec recover FILE -o OUT`.

Thin shells over `nanorec.verify.verify` and `nanorec.recover.recover`. Exit status: 0 when
all is well, 1 when `verify` finds a problem, 2 when the input cannot be read at all (missing
file, nothing recoverable, output exists without `--force`).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from nanorec.cli import app, fail, run
from nanorec.errors import OutputExistsError
from nanorec.recover import recover as recover_archive
from nanorec.verify import verify as verify_archive

EXIT_PROBLEM = 1


@app.command()
def verify(
    archive: Annotated[Path, typer.Argument(help="Archive to check (.nanover.zip).")],
    quiet: Annotated[
        bool, typer.Option("--quiet", "-q", help="Print nothing when the archive is fine.")
    ] = False,
) -> None:
    """Check zip structure, CRCs, index, per-message checksums and side members."""

    def action() -> int:
        if not archive.is_file():
            fail(f"{archive}: no such file")
        show = not quiet and sys.stderr.isatty()
        with typer.progressbar(
            length=1, label="verifying", file=sys.stderr, hidden=not show
        ) as bar:

            def progress(done: int, total: int) -> None:
                bar.length = max(total, 1)
                bar.update(done - bar.pos)

            report = verify_archive(archive, progress=progress)
        if report.ok:
            if not quiet:
                count = report.message_count
                kind = "nanorec" if report.has_description else "NanoVer"
                typer.echo(f"{archive}: OK ({count} messages, {kind} archive)")
            return 0
        for problem in report.problems:
            typer.echo(f"{archive}: {problem}", err=True)
        return EXIT_PROBLEM

    code = run(action)
    if code:
        raise typer.Exit(code)


@app.command()
def recover(
    file: Annotated[Path, typer.Argument(help="Partial or damaged archive (e.g. .x.partial).")],
    output: Annotated[Path, typer.Option("--output", "-o", help="Archive to write.")],
    force: Annotated[
        bool, typer.Option("--force", "-f", help="Overwrite OUTPUT if it exists.")
    ] = False,
) -> None:
    """Rebuild a valid archive from every complete message of a killed writer's file."""

    def action() -> None:
        try:
            result = recover_archive(file, output, overwrite=force)
        except OutputExistsError:
            fail(f"{output} exists; pass --force to replace it")
        except ValueError as error:
            fail(str(error))
        typer.echo(
            f"{result.output}: {result.messages} messages recovered "
            f"({result.recovered_bytes} bytes kept, {result.discarded_bytes} dropped: "
            f"{result.stop_reason})"
        )
        if result.unknown_timestamps:
            typer.echo(
                f"nanorec: warning: {result.unknown_timestamps} messages had no embedded "
                "timestamp (written by another tool); each got the previous message's time",
                err=True,
            )

    run(action)
