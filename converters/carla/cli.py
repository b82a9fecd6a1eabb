"""`nanorec carla ...`: what only CARLA recordings have (the server's query texts, tables of
record kinds, world-state play, bird's-eye plots), and CARLA's own convert and roundtrip.

The generic verbs hand a CARLA file to the command of the same name here (see `nanorec.cli`),
and `nanorec collisions` / `nanorec blocked` answer as aliases.
"""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from nanorec.cli import fail, run
from nanorec.cli.inputs import check_input
from nanorec.cli.options import (
    Duration,
    End,
    ExportFormat,
    Force,
    Immediate,
    Kinds,
    Loop,
    Messages,
    OptionalOutput,
    Output,
    Pause,
    Rate,
    Start,
    Storage,
    Stored,
    TableFormat,
)
from nanorec.cli.surface import check_choice, verb_command
from nanorec.contract import ConvertRequest
from nanorec.errors import NanorecError, UsageError
from nanorec.selection import Selection

from .converter import CarlaConvertOptions
from .ids import FAMILIES

app = typer.Typer(
    name="carla",
    help="CARLA recorder files: the server's query texts, tables, play, plots.",
    no_args_is_help=True,
    rich_markup_mode=None,
)

if TYPE_CHECKING:
    from .recording import CarlaRecording

_FAMILY_HELP = "Force a release family instead of detecting it: " + ", ".join(FAMILIES) + "."


@app.command("roundtrip")
def roundtrip_command(
    files: Annotated[list[Path], typer.Argument(help="CARLA recorder files (.log/.rec) to check.")],
    family: Annotated[
        str | None, typer.Option("--family", help=_FAMILY_HELP, metavar="NAME")
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print one JSON array of the whole reports instead.")
    ] = False,
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="The whole report of each file, as text.")
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

    One line per file, as the generic roundtrip prints (family, frames, archive size, the
    verdict). The whole report (--verbose, or --json): the release family (detected, with
    the evidence, or forced), frames, packets, packets carried raw by id, truncation,
    whether the bytes are identical, and whether they are through the archive.

    Exit status: 0 all identical, 1 some file not identical, 2 some file unreadable.

    Example: nanorec roundtrip recordings/*.log --family 0.9.15 --json
    """
    from .roundtrip import format_report, roundtrip, summary_line, via_archive

    _check_family(family)
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
            typer.echo(format_report(report) if verbose else summary_line(report))
    if as_json:
        typer.echo(json.dumps([report.as_dict() for report in reports], indent=2))
    if unreadable:
        raise typer.Exit(2)
    if not all(report.identical and report.via_archive is not False for report in reports):
        raise typer.Exit(1)


def _check_family(family: str | None) -> None:
    if family is not None and family not in FAMILIES:
        fail(f"unknown CARLA release family {family!r}; known: {', '.join(FAMILIES)}")


_FAMILY = Annotated[str | None, typer.Option("--family", help=_FAMILY_HELP, metavar="NAME")]


@app.command("convert")
def convert_command(
    source: Annotated[Path, typer.Argument(help="CARLA recorder file (.log/.rec).")],
    output: OptionalOutput = None,
    force: Force = False,
    family: _FAMILY = None,
    keep_going: Annotated[
        bool,
        typer.Option("--keep-going", help="Exit 0 even when the input was damaged or warned."),
    ] = False,
    stored: Stored = False,
) -> None:
    """Convert a CARLA recording into an indexed, seekable nanorec archive.

    One archive message per CARLA frame; a crashed recording converts every complete
    frame and keeps the rest, so `nanorec export` gives the exact file back.

    Example: nanorec convert town03.log -o town03.nanover.zip --family 0.9.15
    """
    from nanorec.archive.layout import COMPACT, STORED, use_layout
    from nanorec.cli.convert import convert_report_lines
    from nanorec.cli.inputs import check_input, check_output, native_converter, progress_bar

    def action() -> int:
        _check_family(family)
        check_input(source)
        converter = native_converter(source, "carla")
        out = output or source.with_name(source.name + ".nanover.zip")
        check_output(out, source)
        with (
            use_layout(STORED if stored else COMPACT),
            progress_bar("converting", source.stat().st_size) as update,
        ):
            wanted = ConvertRequest(force, update, CarlaConvertOptions(family))
            report = converter.convert(source, out, wanted)
        typer.echo("\n".join(convert_report_lines(report)))
        return 0 if report.clean or keep_going else 1

    raise typer.Exit(run(action))


@verb_command(app, "export")
def export_command(
    file: Annotated[Path, typer.Argument(help="A CARLA archive, or a .log/.rec file.")],
    output: Output,
    force: Force = False,
    start: Start = None,
    end: End = None,
    duration: Duration = None,
    messages: Messages = None,
    kinds: Kinds = None,
    fmt: ExportFormat = "native",
    storage: Storage = None,
    family: _FAMILY = None,
) -> None:
    """Write the CARLA file back byte for byte, or a clip CARLA replays (its first frame
    spawns every actor alive at the start; frame ids restart at 1, elapsed at 0).

    Example: nanorec export run.nanover.zip -o clip.log --start 10 --end 25
    """
    from nanorec.cli.export import export_file

    def action() -> int:
        _check_family(family)
        if kinds and fmt == "native":
            raise UsageError("a CARLA clip keeps whole frames: --type does not apply to export")
        selection = Selection.make(
            start=start, end=end, duration=duration, messages=messages, kinds=kinds
        )
        options = {"family": family} if family else None
        return export_file(
            file,
            output,
            selection,
            force=force,
            to=fmt,
            storage=storage,
            convert_options=options,
        )

    raise typer.Exit(run(action))


# ------------------------------------------------------------------ cat, play, plot (issue 5)

_RECORDING_HELP = "A CARLA recording: a nanorec archive (*.nanover.zip) or a CARLA .log/.rec file."


def _frames(
    rec: CarlaRecording,
    start: float | None,
    end: float | None,
    duration: float | None,
    messages: str | None,
) -> range:
    """The archive frames the common options choose (`EmptySelectionError` for none): a
    CARLA message is a frame, and `--type` says what of each frame, never which frames."""
    selection = Selection.make(start=start, end=end, duration=duration, messages=messages)
    numbers = selection.chosen(rec.reader.index)
    return range(int(numbers[0]), int(numbers[-1]) + 1)


@verb_command(
    app,
    "cat",
    kinds="Record type: position, state, anim_vehicle, kinematics, bounding_box, collision, "
    "event_add, wheels... or a short alias (pos, tl, veh, kin, bbox, hit); repeatable "
    "(NDJSON). Without it: each frame as one NDJSON message line (its world state).",
)
def cat_command(
    file: Annotated[Path, typer.Argument(help=_RECORDING_HELP)],
    kinds: Kinds = None,
    actor: Annotated[
        int | None,
        typer.Option("--actor", "-a", help="Only records naming this actor id.", metavar="ID"),
    ] = None,
    start: Start = None,
    end: End = None,
    duration: Duration = None,
    messages: Messages = None,
    fmt: TableFormat = "ndjson",
    family: _FAMILY = None,
) -> None:
    """Print the records of one kind as a table: one row per record, streamed.

    Columns: frame (CARLA frame id), index (archive frame), time (elapsed s), then the
    record's fields in the file's units: location_x/y/z in cm, pitch/yaw/roll in degrees
    (the file stores roll, pitch, yaw), velocity in m/s.

    Example: nanorec cat town03.log --type position --actor 6 --format csv > hero.csv
    """
    from .recording import CarlaRecording
    from .table import columns, iter_rows, parse_kind, write_csv, write_ndjson

    def action() -> None:
        check_choice("--format", fmt, ("ndjson", "csv"))
        check_input(file)
        chosen = [parse_kind(kind) for kind in kinds or ()]
        if fmt == "csv" and len(chosen) != 1:
            raise UsageError("CSV holds one table: give one --type (NDJSON takes them all)")
        Selection.make(start=start, end=end, duration=duration, messages=messages)  # checks
        # Strings in a recording are bytes that are usually UTF-8: write them back as found.
        if isinstance(sys.stdout, io.TextIOWrapper):
            sys.stdout.reconfigure(errors="surrogateescape")
        with CarlaRecording.open(file, family=family) as rec:
            frames = _frames(rec, start, end, duration, messages)
            if not chosen:
                _cat_frames(rec, frames)
            for kind in chosen:
                rows = iter_rows(rec, kind, actor=actor, frames=frames)
                if fmt == "csv":
                    write_csv(rows, sys.stdout, columns(kind))
                else:
                    write_ndjson(rows, sys.stdout)
            sys.stdout.flush()

    run(action)


def _cat_frames(rec: CarlaRecording, frames: range) -> None:
    """Each frame as the generic cat prints a message: number, time, kind, value (here
    the world state, as play prints it)."""
    from nanorec.cli.inputs import message_dict
    from nanorec.contract import Message
    from nanorec.outputs.tables import dumps

    from .play import DEFAULT_PARTS, world_dict

    for number in frames:
        world = world_dict(rec.frame(number), DEFAULT_PARTS)
        message = Message(number, rec.time_of(number), rec.kind_of(number), world)
        sys.stdout.write(dumps(message_dict(message)) + "\n")


@verb_command(
    app,
    "play",
    kinds="Parts of the state to print, comma-separated or repeated: actors, traffic_lights, "
    "scene_lights, weather, events (default: all but scene_lights).",
)
def play_command(
    file: Annotated[Path, typer.Argument(help=_RECORDING_HELP)],
    rate: Rate = 1.0,
    start: Start = None,
    end: End = None,
    duration: Duration = None,
    messages: Messages = None,
    loop: Loop = False,
    kinds: Kinds = None,
    parts: Annotated[
        list[str] | None,
        typer.Option(
            "--parts", "--types", help="Same as --type (its older spelling).", metavar="PARTS"
        ),
    ] = None,
    immediate: Immediate = False,
    pause: Pause = False,
    family: _FAMILY = None,
) -> None:
    """Print each frame's state as one JSON line, at the recorded pace (like rosbag play).

    On a terminal, space pauses and resumes, s steps one frame while paused, q quits.
    Each line has index, frame, time and the chosen parts; units are the file's (cm,
    degrees, seconds).

    Example: nanorec play town03.log --rate 2 --start 10 --duration 5 --type actors,events
    """
    from nanorec.cli.verbs import terminal_player
    from nanorec.outputs.tables import dumps

    from .play import DEFAULT_PARTS, check_parts, iter_dicts
    from .recording import CarlaRecording

    given = [*(kinds or ()), *(parts or ())]
    chosen = [part.strip() for item in given for part in item.split(",") if part.strip()]

    def action() -> None:
        check_input(file)
        check_parts(chosen)
        selection = Selection.make(start=start, end=end, duration=duration, messages=messages)
        options: dict[str, Any] = dict(rate=rate, selection=selection)
        with (
            CarlaRecording.open(file, family=family) as rec,
            terminal_player(rec, pause, loop=loop, immediate=immediate, **options) as player,
        ):
            out = sys.stdout
            for item in iter_dicts(player, chosen or DEFAULT_PARTS):
                out.write(dumps(item) + "\n")
                if not immediate:
                    out.flush()
            out.flush()

    run(action)


@verb_command(
    app,
    "plot",
    output="Picture to write: .png, .svg or .pdf.",
    kinds="Draw only actors of this kind: vehicle, bike, walker or other; repeatable "
    "(default: all but other).",
)
def plot_command(
    file: Annotated[Path, typer.Argument(help=_RECORDING_HELP)],
    output: Output,
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
    start: Start = None,
    end: End = None,
    duration: Duration = None,
    messages: Messages = None,
    kinds: Kinds = None,
    actors: Annotated[
        list[int] | None,
        typer.Option(
            "--actor",
            "-a",
            help="Draw only this actor id (repeat for more; default: vehicles and walkers).",
            metavar="ID",
        ),
    ] = None,
    follow: Annotated[
        int | None,
        typer.Option("--follow", help="Frame the view around this actor's path.", metavar="ID"),
    ] = None,
    force: Force = False,
    family: _FAMILY = None,
) -> None:
    """Draw a bird's-eye view: vehicle and walker paths framed with a margin, footprints,
    collisions (where and when, with the two actors), the hero, nearby traffic lights.

    Axes in metres, y pointing down as in CARLA's top view. Prints one line saying what it
    drew. Needs matplotlib, the optional plot extra of nanorec (pip install matplotlib).

    Example: nanorec plot town03.log -o town03.png --start 10 --end 25 --actor 6 --actor 7
    """
    from nanorec.cli.inputs import check_output

    from .plot import plot
    from .recording import CarlaRecording

    def action() -> None:
        check_input(file)
        check_output(output, file)
        Selection.make(start=start, end=end, duration=duration, messages=messages)  # checks
        with CarlaRecording.open(file, family=family) as rec:
            report = plot(
                rec,
                output,
                frame=frame,
                frames=_frames(rec, start, end, duration, messages),
                actors=actors,
                types=kinds,
                follow=follow,
                overwrite=force,
            )
        typer.echo(report.line())

    run(action)
