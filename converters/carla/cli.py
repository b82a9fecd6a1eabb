"""CARLA commands registered on the `nanorec` CLI."""

from __future__ import annotations

import io
import json
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, cast

import numpy as np
import typer

from nanorec.cli import app, fail, run
from nanorec.errors import NanorecError

from .ids import FAMILIES

if TYPE_CHECKING:
    from .query import HashOrderName, Labels

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
    codec_only: Annotated[
        bool,
        typer.Option("--codec-only", help="Skip the native -> archive -> native check."),
    ] = False,
) -> None:
    """Decode each CARLA recording fully, encode it back in memory, compare the bytes;
    then convert it into an archive and export it back, and compare again.

    Per file: the release family (detected, with the evidence, or forced), frames, packets,
    packets carried raw by id, truncation, whether the bytes are identical, and whether
    they are identical through the archive (with the archive's size).

    Exit status: 0 all identical, 1 some file not identical, 2 some file unreadable.

    Example: nanorec roundtrip recordings/*.log --family 0.9.15 --json
    """
    from .roundtrip import format_report, roundtrip, via_archive

    if family is not None and family not in FAMILIES:
        fail(f"unknown CARLA release family {family!r}; known: {', '.join(FAMILIES)}")
    reports = []
    unreadable = False
    for path in files:
        try:
            report = roundtrip(path, family=family, strict=strict)
            if not codec_only:
                report = via_archive(report, family=family)
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
    if not all(report.identical and report.via_archive is not False for report in reports):
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

    from .convert import convert

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
        from .convert import export

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
    from .clip import export_clip
    from .recording import CarlaRecording

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


# --------------------------------------------------------------------------- queries (issue 5)

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
    from .convert import native_file

    if not path.is_file():
        fail(f"{path}: no such file" if not path.exists() else f"{path}: not a regular file")

    def action() -> bool:
        try:
            with native_file(path) as native:
                if make_json is not _NO_JSON:
                    typer.echo(json.dumps(make_json(native), indent=2, allow_nan=False))
                    return True
                return _write_chunks(make(native))
        except ValueError as error:
            fail(str(error))

    if not run(action):
        fail(f"{path}: not a CARLA recorder file (the magic string CARLA_RECORDER is missing)")


def _NO_JSON(_: Path) -> object:  # a marker: plain text wanted
    return None


def _check_family(family: str | None) -> None:
    if family is not None and family not in FAMILIES:
        fail(f"unknown CARLA release family {family!r}; known: {', '.join(FAMILIES)}")


@app.command("info")
def info_command(
    file: Annotated[
        Path, typer.Argument(help="CARLA recorder file (.log/.rec) or its nanorec archive.")
    ],
    show_all: Annotated[
        bool, typer.Option("--show-all", help="Every packet of every frame, as show_all=True.")
    ] = False,
    tz: Annotated[str | None, typer.Option("--tz", help=_TZ_HELP, metavar="ZONE")] = None,
    windows: Annotated[bool, typer.Option("--windows", help=_WINDOWS_HELP)] = False,
    as_json: Annotated[
        bool,
        typer.Option(
            "--json",
            help="A JSON document instead: header, frames, duration, actors spawned and "
            "destroyed with blueprint, type, attributes, frame and time; packet counts.",
        ),
    ] = False,
    family: Annotated[
        str | None, typer.Option("--family", "-f", help=_FAMILY_HELP, metavar="NAME")
    ] = None,
    labels: Annotated[
        str | None,
        typer.Option(
            "--labels",
            help="Label form: old (`Rotation (`, `Brake `; 0.9.6-0.9.14) or new "
            "(`Rotation: (`, `Brake: `; 0.9.15+). Default: by release family.",
            metavar="old|new",
        ),
    ] = None,
    form: Annotated[str | None, typer.Option("--form", help=_FORM_HELP, metavar="FORM")] = None,
) -> None:
    """Print exactly what CARLA's client.show_recorder_file_info(FILE, show_all) prints.

    Labels follow the release that wrote the file; numbers and the date follow the
    server's C library and time zone (glibc and UTC unless --windows / --tz).

    Example: nanorec info town03.log --show-all --tz Europe/Berlin
    """
    from .query import file_info_json, iter_file_info

    _check_family(family)
    if labels not in (None, "old", "new"):
        fail(f"--labels takes old or new, not {labels!r}")
    chosen = cast("Labels | None", labels)
    _query(
        file,
        lambda native: iter_file_info(
            native,
            show_all=show_all,
            tz=tz,
            windows=windows,
            family=family,
            labels=chosen,
            form=form,
        ),
        (lambda native: file_info_json(native, tz=tz, family=family)) if as_json else _NO_JSON,
    )


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
    family: Annotated[
        str | None, typer.Option("--family", "-f", help=_FAMILY_HELP, metavar="NAME")
    ] = None,
    form: Annotated[str | None, typer.Option("--form", help=_FORM_HELP, metavar="FORM")] = None,
) -> None:
    """Print exactly what CARLA's client.show_recorder_collisions(FILE, type1, type2) prints.

    A collision lasting several frames prints once; CARLA's quirks are kept (category
    letters h/a for traffic signs/sensors, the trailer's Duration without decimals after
    a row).

    Example: nanorec collisions town03.log --type1 v --type2 a
    """
    from .query import collisions_json, iter_collisions

    _check_family(family)
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
    family: Annotated[
        str | None, typer.Option("--family", "-f", help=_FAMILY_HELP, metavar="NAME")
    ] = None,
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
    from .hashorder import ORDERS
    from .query import actors_blocked_json, iter_actors_blocked

    _check_family(family)
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


# ------------------------------------------------------------------ cat, play, plot (issue 5)

_RECORDING_HELP = "A CARLA recording: a nanorec archive (*.nanover.zip) or a CARLA .log/.rec file."


def _guarded(action: Callable[[], None]) -> None:
    """Run `action`: library, OS and option errors become one line and exit status 2; a
    closed stdout (`| head`) ends quietly."""

    def checked() -> None:
        try:
            action()
        except ValueError as error:
            fail(str(error))
        except BrokenPipeError:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            raise typer.Exit(0) from None

    run(checked)


@app.command("cat")
def cat_command(
    file: Annotated[Path, typer.Argument(help=_RECORDING_HELP)],
    kind: Annotated[
        str,
        typer.Option(
            "--type",
            "-t",
            help="Record type: position, state, anim_vehicle, kinematics, bounding_box, "
            "collision, event_add, wheels... or a short alias (pos, tl, veh, kin, bbox, hit).",
            metavar="TYPE",
        ),
    ],
    actor: Annotated[
        int | None,
        typer.Option("--actor", "-a", help="Only records naming this actor id.", metavar="ID"),
    ] = None,
    start: Annotated[
        float | None, typer.Option("--start", help="From this elapsed time (seconds).")
    ] = None,
    end: Annotated[
        float | None, typer.Option("--end", help="Up to this elapsed time (seconds, included).")
    ] = None,
    fmt: Annotated[
        str,
        typer.Option(
            "--format", "-F", help="ndjson (one JSON object per line) or csv.", metavar="FMT"
        ),
    ] = "ndjson",
) -> None:
    """Print the records of one kind as a table: one row per record, streamed.

    Columns: frame (CARLA frame id), index (archive frame), time (elapsed s), then the
    record's fields in the file's units: location_x/y/z in cm, pitch/yaw/roll in degrees
    (the file stores roll, pitch, yaw), velocity in m/s.

    Example: nanorec cat town03.log --type position --actor 6 --format csv > hero.csv
    """
    from .recording import CarlaRecording
    from .table import columns, iter_rows, parse_kind, write_csv, write_ndjson

    if fmt not in ("ndjson", "csv"):
        fail(f"--format takes ndjson or csv, not {fmt!r}")

    def action() -> None:
        chosen = parse_kind(kind)
        header = columns(chosen)
        # Strings in a recording are bytes that are usually UTF-8: write them back as found.
        if isinstance(sys.stdout, io.TextIOWrapper):
            sys.stdout.reconfigure(errors="surrogateescape")
        with CarlaRecording.open(file) as rec:
            rows = iter_rows(rec, chosen, actor=actor, start_s=start, stop_s=end)
            if fmt == "csv":
                write_csv(rows, sys.stdout, header)
            else:
                write_ndjson(rows, sys.stdout)
            sys.stdout.flush()

    _guarded(action)


@app.command("play")
def play_command(
    file: Annotated[Path, typer.Argument(help=_RECORDING_HELP)],
    rate: Annotated[
        float, typer.Option("--rate", "-r", help="Speed factor: 2 plays twice as fast.")
    ] = 1.0,
    start: Annotated[
        float | None,
        typer.Option("--start", "-s", help="Start at this elapsed time (seconds)."),
    ] = None,
    duration: Annotated[
        float | None,
        typer.Option("--duration", "-u", help="Play only this many seconds of the recording."),
    ] = None,
    loop: Annotated[
        bool, typer.Option("--loop", "-l", help="Start over from --start after the end.")
    ] = False,
    types: Annotated[
        list[str] | None,
        typer.Option(
            "--types",
            help="Parts of the state to print, comma-separated or repeated: actors, "
            "traffic_lights, scene_lights, weather, events (default: all but scene_lights).",
            metavar="PARTS",
        ),
    ] = None,
    immediate: Annotated[
        bool, typer.Option("--immediate", "-i", help="Print every frame at once, no waiting.")
    ] = False,
    pause: Annotated[
        bool,
        typer.Option("--pause", help="Start paused (needs a terminal: space resumes, s steps)."),
    ] = False,
) -> None:
    """Print each frame's state as one JSON line, at the recorded pace (like rosbag play).

    On a terminal, space pauses and resumes, s steps one frame while paused, q quits.
    Each line has index, frame, time and the chosen parts; units are the file's (cm,
    degrees, seconds).

    Example: nanorec play town03.log --rate 2 --start 10 --duration 5 --types actors,events
    """
    import contextlib

    from .play import DEFAULT_PARTS, Player, TerminalKeys, check_parts
    from .recording import CarlaRecording

    parts = (
        [part.strip() for item in types for part in item.split(",") if part.strip()]
        if types
        else list(DEFAULT_PARTS)
    )
    interactive = sys.stdin.isatty()
    if pause and not interactive:
        fail("--pause needs a terminal on stdin (space resumes, s steps one frame)")

    def action() -> None:
        check_parts(parts)
        with contextlib.ExitStack() as stack:
            rec = stack.enter_context(CarlaRecording.open(file))
            terminal = (
                stack.enter_context(TerminalKeys(sys.stdin.fileno())) if interactive else None
            )
            player: Player

            def keys(seconds: float) -> None:
                assert terminal is not None
                key = terminal.wait(seconds)
                if key is not None:
                    player.handle_key(key)
                if key == " ":
                    when = "-" if player.time_s is None else f"{player.time_s:.3f} s"
                    state = "PAUSED" if player.paused else "RUNNING"
                    typer.echo(f"[{state}] frame {player.index}, {when}", err=True)

            player = Player(
                rec,
                rate=rate,
                start_s=start,
                duration_s=duration,
                loop=loop,
                immediate=immediate,
                paused=pause,
                keys=keys if terminal is not None else None,
            )
            if terminal is not None:
                typer.echo(
                    "nanorec: space pauses/resumes, s steps one frame while paused, q quits"
                    + (" [PAUSED]" if pause else ""),
                    err=True,
                )
            out = sys.stdout
            for item in player.iter_dicts(parts):
                out.write(json.dumps(item, allow_nan=False) + "\n")
                if not immediate:
                    out.flush()
            out.flush()

    _guarded(action)


@app.command("plot")
def plot_command(
    file: Annotated[Path, typer.Argument(help=_RECORDING_HELP)],
    output: Annotated[
        Path, typer.Option("--output", "-o", help="Picture to write: .png, .svg or .pdf.")
    ],
    frame: Annotated[
        int | None,
        typer.Option(
            "--frame",
            "-n",
            help="Draw footprints at this archive frame (0-based; default: the last one "
            "of the range).",
            metavar="N",
        ),
    ] = None,
    start: Annotated[
        float | None, typer.Option("--start", help="Paths from this elapsed time (seconds).")
    ] = None,
    end: Annotated[
        float | None, typer.Option("--end", help="Paths up to this elapsed time (seconds).")
    ] = None,
    actors: Annotated[
        list[int] | None,
        typer.Option(
            "--actor",
            "-a",
            help="Draw only this actor id (repeat for more; default: vehicles and walkers).",
            metavar="ID",
        ),
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing output.")] = False,
) -> None:
    """Draw a bird's-eye view: vehicle and walker paths, footprints, traffic lights.

    Axes in metres, y pointing down as in CARLA's top view. Needs matplotlib, the
    optional plot extra of nanorec (pip install matplotlib).

    Example: nanorec plot town03.log -o town03.png --start 10 --end 25 --actor 6 --actor 7
    """
    from .plot import plot
    from .recording import CarlaRecording

    def action() -> None:
        with CarlaRecording.open(file) as rec:
            report = plot(
                rec,
                output,
                frame=frame,
                start_s=start,
                stop_s=end,
                actors=actors,
                overwrite=force,
            )
        typer.echo(
            f"{report.output}: {report.size} bytes; paths over frames "
            f"{report.start}-{report.stop - 1}, {report.actors} actors drawn at frame "
            f"{report.frame}"
        )

    _guarded(action)
