"""`nanorec rosbag ...`, and `nanorec info|cat|play x.bag` routed here: rosbag's own
commands without ROS, each taking its verb's common options (`nanorec.cli.surface`) plus
rosbag's spellings (`--topics`, merged into the common `--topic`)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from nanorec import registry
from nanorec.cli import run, say
from nanorec.cli.inputs import check_input, opened
from nanorec.cli.options import (
    Duration,
    End,
    Force,
    Immediate,
    Json,
    Kinds,
    Loop,
    Messages,
    Output,
    Pause,
    Rate,
    Start,
    TableFormat,
)
from nanorec.cli.surface import check_choice, verb_command
from nanorec.cli.verbs import terminal_player
from nanorec.errors import NanorecError, UsageError
from nanorec.selection import Selection
from nanorec.timezones import parse_zone

from ..common.topics import Undecodable, decoded_line, play_lines
from .info import Facts, facts_of_archive, facts_of_index, text, yaml

app = typer.Typer(
    help="ROS1 bags: rosbag info, cat, play without ROS; plots.", no_args_is_help=True
)

_KINDS = "Only this topic; repeatable."
_TOPICS = Annotated[
    list[str] | None,
    typer.Option("--topics", help="Same as --topic (rosbag play's spelling).", metavar="TOPIC"),
]
_BAG = Annotated[Path, typer.Argument(help="A ROS bag (.bag, .bag.active) or its archive.")]


def facts(file: Path, freq: bool) -> Facts:
    """From the bag's own index when it has one (fast, as rosbag reads it); else from a
    conversion (a crashed bag: what it holds), saying so on stderr."""
    from .index import read_index
    from .scan import check_version

    check_input(file)
    head = registry.read_head(file)
    if not registry.is_archive(head):
        check_version(head)  # no index and no records to read in another version's bag
        try:
            return facts_of_index(str(file), read_index(file, entries=freq))
        except NanorecError as error:
            say(f"nanorec: {file}: {error}; reading its records instead")
    with opened(file) as recording:
        from .recording import BagRecording

        if not isinstance(recording, BagRecording):
            raise UsageError(f"{file} is not a ROS bag")
        found = facts_of_archive(recording, str(file))
        if not freq:
            found.times = None
        return found


@verb_command(app, "info", as_json="The facts as JSON (start, end: first and last message).")
def info_command(
    file: _BAG,
    freq: Annotated[
        bool, typer.Option("--freq", help="Topic frequencies (reads the index).")
    ] = False,
    as_yaml: Annotated[bool, typer.Option("--yaml", "-y", help="As rosbag info --yaml.")] = False,
    as_json: Json = False,
    tz: Annotated[
        str | None,
        typer.Option(
            "--tz", help="Time zone of the dates (default: this machine's, as ROS).", metavar="ZONE"
        ),
    ] = None,
) -> None:
    """Print exactly what `rosbag info` prints (--freq, --yaml as rosbag's).

    Example: nanorec info run.bag --freq --tz UTC
    """

    def action() -> None:
        zone = None if tz is None else parse_zone(tz)
        found = facts(file, freq or as_json)
        if as_json:
            typer.echo(json.dumps(found.to_json(), indent=2))
        elif as_yaml:
            typer.echo(yaml(found))
        else:
            typer.echo(text(found, zone))
        for note in found.notes:
            say(f"nanorec: {note}")

    run(action)


@verb_command(app, "cat", kinds=_KINDS)
def cat_command(
    file: _BAG,
    kinds: Kinds = None,
    fmt: TableFormat = "ndjson",
    start: Start = None,
    end: End = None,
    duration: Duration = None,
    messages: Messages = None,
    topics: _TOPICS = None,
) -> None:
    """One row per message: number, time (s from the start), time_ns, time_s (Unix), then
    the message's fields flattened. Every topic (NDJSON) when none is given.

    Example: nanorec cat run.bag --topic /odom --format csv > odom.csv
    """
    from nanorec.outputs.tables import write_csv, write_ndjson

    def action() -> None:
        check_choice("--format", fmt, ("ndjson", "csv"))
        wanted = _merged(kinds, topics)
        selection = Selection.make(
            start=start, end=end, duration=duration, messages=messages, kinds=wanted
        )
        with opened(file) as recording, Undecodable(recording):
            numbers = selection.chosen(recording.reader.index).tolist()
            chosen = wanted or recording.table_kinds()
            unknown = sorted(set(chosen) - set(recording.table_kinds()))
            if unknown:
                topics_there = ", ".join(recording.table_kinds())
                raise UsageError(f"no topic {', '.join(unknown)} (topics: {topics_there})")
            if fmt == "csv" and len(chosen) != 1:
                raise UsageError("CSV holds one table: give one --topic")
            if not wanted:
                write_ndjson(map(decoded_line(recording), numbers), sys.stdout)
            else:
                for topic in chosen:
                    (write_csv if fmt == "csv" else write_ndjson)(
                        recording.rows(topic, selection), sys.stdout
                    )
        sys.stdout.flush()

    run(action)


def _merged(kinds: list[str] | None, topics: list[str] | None) -> list[str] | None:
    """The common `--topic`s and rosbag's `--topics`, as one list (None: every topic)."""
    return [*(kinds or ()), *(topics or ())] or None


@verb_command(
    app,
    "play",
    kinds=_KINDS,
    start="Start this many seconds into the bag (from its earliest message: rosbag play -s).",
    duration="Play only this many seconds from --start (rosbag play -u).",
)
def play_command(
    file: _BAG,
    rate: Rate = 1.0,
    start: Start = None,
    end: End = None,
    duration: Duration = None,
    messages: Messages = None,
    kinds: Kinds = None,
    topics: _TOPICS = None,
    loop: Loop = False,
    pause: Pause = False,
    immediate: Immediate = False,
    delay: Annotated[float, typer.Option("--delay", "-d", help="Sleep SEC before playing.")] = 0.0,
    skip_empty: Annotated[
        float | None, typer.Option("--skip-empty", help="Skip gaps longer than SEC.")
    ] = None,
    clock: Annotated[bool, typer.Option("--clock", help="Also print clock lines at --hz.")] = False,
    hz: Annotated[float, typer.Option("--hz", help="Clock lines per second.")] = 100.0,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No status line.")] = False,
) -> None:
    """Play the bag as `rosbag play` would: one NDJSON line per message (topic, time, the
    decoded message) at its time on stdout, the status line on stderr; on a terminal,
    space pauses, s steps, q quits.

    Example: nanorec play run.bag --rate 2 -s 10 -u 5 --topics /odom | wc -l
    """
    from .play import BagPlayer

    def emit_clock(seconds: float) -> None:
        sys.stdout.write(json.dumps({"clock": seconds}) + "\n")

    def action() -> None:
        from .recording import BagRecording

        selection = Selection.make(
            start=start,
            end=end,
            duration=duration,
            messages=messages,
            kinds=_merged(kinds, topics),
        )
        with opened(file) as recording:
            if not isinstance(recording, BagRecording):
                raise UsageError(f"{file} is not a ROS bag")
            with (
                Undecodable(recording),
                terminal_player(
                    recording,
                    pause,
                    factory=BagPlayer,
                    rate=rate,
                    selection=selection,
                    loop=loop,
                    immediate=immediate,
                    delay=delay,
                    skip_empty=skip_empty,
                    on_clock=emit_clock if clock else None,
                    hz=hz,
                ) as player,
            ):
                if recording.meta.unindexed:
                    say("nanorec: unindexed bag: playing what was recovered")
                play_lines(recording, player, immediate=immediate, quiet=quiet)
        sys.stdout.flush()

    run(action)


@verb_command(app, "plot", output="Picture to write: .png, .svg or .pdf.", kinds=_KINDS)
def plot_command(
    file: _BAG,
    output: Output,
    force: Force = False,
    start: Start = None,
    end: End = None,
    duration: Duration = None,
    messages: Messages = None,
    kinds: Kinds = None,
) -> None:
    """Draw what the bag's messages mean: NavSatFix tracks, odometry/pose/tf paths per
    frame, Imu and few-number topics as time series, a few frames of each Image topic, and
    every topic's message rate as one heat strip. Prints one line saying what it drew.
    Needs matplotlib (the plot extra).

    Example: nanorec plot drive.bag -o drive.png --start 10 --end 40
    """
    from nanorec.cli.inputs import check_output

    from .plot import plot
    from .recording import BagRecording

    def action() -> None:
        check_output(output, file)
        selection = Selection.make(
            start=start, end=end, duration=duration, messages=messages, kinds=kinds
        )
        with opened(file) as recording:
            if not isinstance(recording, BagRecording):
                raise UsageError(f"{file} is not a ROS bag")
            report = plot(recording, output, selection=selection, overwrite=force)
        typer.echo(report.line())

    run(action)
