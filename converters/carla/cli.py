"""CARLA commands registered on the `nanorec` CLI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import numpy as np
import typer

from converters.carla.ids import FAMILIES
from nanorec.cli import app, fail, run
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


@app.command("convert")
def convert_command(
    source: Annotated[Path, typer.Argument(help="CARLA recorder file (.log/.rec).")],
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="Archive to write (default: SOURCE.nanover.zip)."),
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing output.")] = False,
    family: Annotated[
        str | None, typer.Option("--family", "-f", help=_FAMILY_HELP, metavar="NAME")
    ] = None,
) -> None:
    """Convert a CARLA recording into an indexed, seekable nanorec archive.

    One archive message per CARLA frame; a crashed recording converts every complete
    frame and keeps the rest, so `nanorec export` gives the exact file back.

    Example: nanorec convert town03.log -o town03.nanover.zip
    """
    import io
    import sys

    from converters.carla.convert import convert

    if family is not None and family not in FAMILIES:
        fail(f"unknown CARLA release family {family!r}; known: {', '.join(FAMILIES)}")
    size = source.stat().st_size if source.exists() else 0
    with typer.progressbar(
        length=max(size, 1),
        label="converting",
        file=sys.stderr if sys.stderr.isatty() else io.StringIO(),
        show_eta=True,
    ) as bar:
        done = [0]

        def progress(position: int) -> None:
            bar.update(position - done[0])
            done[0] = position

        report = run(
            lambda: convert(source, output, family=family, overwrite=force, progress=progress)
        )
    raw = ", ".join(f"id {pid}: {n}" for pid, n in sorted(report.raw_packets.items())) or "none"
    cut = (
        "no"
        if report.truncation is None
        else (
            f"yes at byte {report.truncation.offset} ({report.truncation.reason}); "
            f"{report.tail_bytes} bytes kept verbatim"
        )
    )
    typer.echo(
        f"{report.source} -> {report.output}\n"
        f"  family {report.family}, {report.frames} frames, "
        f"{report.archive_size} bytes ({report.archive_size / max(report.source_size, 1):.3f}x)\n"
        f"  packets kept raw: {raw}\n  truncated: {cut}\n  sha256 {report.sha256}"
    )


def _parse_frames(spec: str) -> tuple[int | None, int | None]:
    start, sep, stop = spec.partition(":")
    if not sep:
        fail(f"--frames takes A:B (0-based, B excluded), not {spec!r}")
    try:
        return (int(start) if start else None, int(stop) if stop else None)
    except ValueError:
        fail(f"--frames takes whole numbers A:B, not {spec!r}")


@app.command("export")
def export_command(
    archive: Annotated[Path, typer.Argument(help="nanorec archive of a CARLA recording.")],
    output: Annotated[Path, typer.Option("--output", "-o", help="CARLA file to write.")],
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing output.")] = False,
    start: Annotated[
        float | None, typer.Option("--start", help="Clip from this time (seconds).")
    ] = None,
    end: Annotated[
        float | None, typer.Option("--end", help="Clip up to this time (seconds).")
    ] = None,
    frames: Annotated[
        str | None,
        typer.Option("--frames", help="Clip frames A:B (0-based archive frames, B excluded)."),
    ] = None,
) -> None:
    """Write the native CARLA file back, byte for byte, or a replayable clip of it.

    Without --start/--end/--frames the whole recording is written and checked against
    the sha256 recorded at conversion. With them, a standalone clip: its first frame
    spawns every actor alive at the start, frame ids restart at 1 and elapsed at 0.

    Example: nanorec export run.nanover.zip --start 10 --end 25 -o clip.log
    """
    if frames is None and start is None and end is None:
        from converters.carla.convert import export

        report = run(lambda: export(archive, output, overwrite=force))
        verdict = (
            "no source hash recorded"
            if report.identical is None
            else "identical to the source"
            if report.identical
            else "DIFFERS from the source"
        )
        typer.echo(f"{report.output}: {report.size} bytes, sha256 {report.sha256} ({verdict})")
        if report.identical is False:
            raise typer.Exit(1)
        return
    if frames is not None and (start is not None or end is not None):
        fail("use either --frames or --start/--end, not both")
    from converters.carla.clip import export_clip
    from converters.carla.recording import CarlaRecording

    def clip() -> str:
        with CarlaRecording.open(archive) as rec:
            count = len(rec)
            if frames is not None:
                first, stop = _parse_frames(frames)
                lo, hi, _ = slice(first, stop).indices(count)
            else:
                times = rec.reader.index.timestamp_us
                lo = (
                    0
                    if start is None
                    else max(0, int(np.searchsorted(times, round(start * 1e6), "right")) - 1)
                )
                hi = (
                    count if end is None else int(np.searchsorted(times, round(end * 1e6), "right"))
                )
            if lo >= hi:
                fail(f"the range selects no frame (the recording has {count} frames)")
            report = export_clip(rec, output, start=lo, stop=hi, overwrite=force)
        return (
            f"{report.output}: frames {report.start}:{report.stop} ({report.frames} frames, "
            f"{report.actors} actors spawned in frame 1), {report.size} bytes"
        )

    typer.echo(run(clip))
