"""`nanorec carla ...`: what only CARLA recordings have (the server's query texts, tables of
record kinds, world-state play, bird's-eye plots), and CARLA's own roundtrip.

The core's verbs call the hooks here on a CARLA file (`nanorec.cli.hooks`; their options in
`verb_options.py`), and `nanorec collisions` / `nanorec blocked` answer as aliases.
"""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Protocol

import typer

from nanorec.cli import fail
from nanorec.cli.hooks import VerbCall, verb_hook
from nanorec.cli.surface import check_choice
from nanorec.errors import NanorecError, UsageError

from .ids import FAMILIES
from .verb_options import (
    FAMILY_HELP,
    CarlaCatOptions,
    CarlaFamilyOptions,
    CarlaPlayOptions,
    CarlaPlotOptions,
)

app = typer.Typer(
    name="carla",
    help="CARLA recorder files: the server's query texts, tables, play, plots.",
    no_args_is_help=True,
    rich_markup_mode=None,
)

if TYPE_CHECKING:
    from .recording import CarlaRecording

_FAMILY_HELP = FAMILY_HELP


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

    check_family(family)
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


def check_family(family: str | None) -> None:
    if family is not None and family not in FAMILIES:
        fail(f"unknown CARLA release family {family!r}; known: {', '.join(FAMILIES)}")


FamilyOption = Annotated[str | None, typer.Option("--family", help=_FAMILY_HELP, metavar="NAME")]


class _WithFamily(Protocol):
    """A verb's options naming a release family (`--family`)."""

    @property
    def family(self) -> str | None: ...


def _open(call: VerbCall[_WithFamily]) -> CarlaRecording:
    """The call's input as a CARLA recording, converted with its --family when native (as
    CARLA's commands always opened it: no damage warnings of the generic open)."""
    from .recording import CarlaRecording

    check_family(call.extra.family)
    return CarlaRecording.open(call.source, family=call.extra.family)


def _frames(rec: CarlaRecording, call: VerbCall[object]) -> range:
    """The archive frames the common options choose (`EmptySelectionError` for none): a
    CARLA message is a frame, and `--type` says what of each frame, never which frames."""
    numbers = call.selecting(None).chosen(rec.reader.index)
    return range(int(numbers[0]), int(numbers[-1]) + 1)


@verb_hook(app, "export", options=CarlaFamilyOptions)
def export_hook(call: VerbCall[CarlaFamilyOptions]) -> int:
    """Write the CARLA file back byte for byte, or a clip CARLA replays (its first frame
    spawns every actor alive at the start; frame ids restart at 1, elapsed at 0).

    Example: nanorec export run.nanover.zip -o clip.log --start 10 --end 25
    """
    from nanorec.cli.export import export_file

    family, form = call.extra.family, call.form or "native"
    check_family(family)
    if call.kinds and form == "native":
        raise UsageError("a CARLA clip keeps whole frames: --type does not apply to export")
    assert call.output is not None and call.selection is not None
    return export_file(
        call.source,
        call.output,
        call.selection,
        force=call.force,
        to=form,
        storage=call.storage,
        convert_options={"family": family} if family else None,
    )


@verb_hook(app, "cat", options=CarlaCatOptions)
def cat_hook(call: VerbCall[CarlaCatOptions]) -> int:
    """Print the records of one kind as a table: one row per record, streamed.

    Columns: frame (CARLA frame id), index (archive frame), time (elapsed s), then the
    record's fields in the file's units: location_x/y/z in cm, pitch/yaw/roll in degrees
    (the file stores roll, pitch, yaw), velocity in m/s.

    Example: nanorec cat town03.log --type position --actor 6 --format csv > hero.csv
    """
    from .table import columns, iter_rows, parse_kind, write_csv, write_ndjson

    fmt = call.form or "ndjson"
    check_choice("--format", fmt, ("ndjson", "csv"))
    chosen = [parse_kind(kind) for kind in call.kinds]
    if fmt == "csv" and len(chosen) != 1:
        raise UsageError("CSV holds one table: give one --type (NDJSON takes them all)")
    # Strings in a recording are bytes that are usually UTF-8: write them back as found.
    if isinstance(sys.stdout, io.TextIOWrapper):
        sys.stdout.reconfigure(errors="surrogateescape")
    with _open(call) as rec:
        frames = _frames(rec, call)
        if not chosen:
            _cat_frames(rec, frames)
        for kind in chosen:
            rows = iter_rows(rec, kind, actor=call.extra.actor, frames=frames)
            if fmt == "csv":
                write_csv(rows, sys.stdout, columns(kind))
            else:
                write_ndjson(rows, sys.stdout)
        sys.stdout.flush()
    return 0


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


@verb_hook(app, "play", options=CarlaPlayOptions)
def play_hook(call: VerbCall[CarlaPlayOptions]) -> int:
    """Print each frame's state as one JSON line, at the recorded pace (like rosbag play).

    On a terminal, space pauses and resumes, s steps one frame while paused, q quits.
    Each line has index, frame, time and the chosen parts (--type: actors, traffic_lights,
    scene_lights, weather, events; default all but scene_lights); units are the file's (cm,
    degrees, seconds).

    Example: nanorec play town03.log --rate 2 --start 10 --duration 5 --type actors,events
    """
    from nanorec.cli.verbs import terminal_player
    from nanorec.outputs.tables import dumps

    from .play import DEFAULT_PARTS, check_parts, iter_dicts

    chosen = [part.strip() for item in call.kinds for part in item.split(",") if part.strip()]
    check_parts(chosen)
    pace = call.pace
    with (
        _open(call) as rec,
        terminal_player(
            rec,
            pace.pause,
            loop=pace.loop,
            immediate=pace.immediate,
            rate=pace.rate,
            selection=call.selecting(None),
        ) as player,
    ):
        out = sys.stdout
        for item in iter_dicts(player, chosen or DEFAULT_PARTS):
            out.write(dumps(item) + "\n")
            if not pace.immediate:
                out.flush()
        out.flush()
    return 0


@verb_hook(app, "plot", options=CarlaPlotOptions)
def plot_hook(call: VerbCall[CarlaPlotOptions]) -> int:
    """Draw a bird's-eye view: vehicle and walker paths framed with a margin, footprints,
    collisions (where and when, with the two actors), the hero, nearby traffic lights
    (--type: only actors of this kind: vehicle, bike, walker or other).

    Axes in metres, y pointing down as in CARLA's top view. Prints one line saying what it
    drew. Needs matplotlib, the optional plot extra of nanorec (pip install matplotlib).

    Example: nanorec plot town03.log -o town03.png --start 10 --end 25 --actor 6 --actor 7
    """
    from .plot import plot

    extra = call.extra
    assert call.output is not None
    with _open(call) as rec:
        report = plot(
            rec,
            call.output,
            frame=extra.frame,
            frames=_frames(rec, call),
            actors=extra.actors,
            types=list(call.kinds) or None,
            follow=extra.follow,
            overwrite=call.force,
        )
    typer.echo(report.line())
    return 0
