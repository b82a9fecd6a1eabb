"""`nanorec rosbag ...`, and the core's verbs on a ROS1 bag: rosbag's own answers without
ROS (`nanorec info|cat|play|plot x.bag`), as hooks of the core's verbs (`nanorec.cli.hooks`)
taking rosbag's spellings too (`--topics`, merged into the common `--topic`)."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING

import typer

from nanorec import registry
from nanorec.cli import say
from nanorec.cli.hooks import VerbCall, verb_hook
from nanorec.cli.surface import check_choice
from nanorec.cli.verbs import terminal_player
from nanorec.errors import NanorecError, UsageError
from nanorec.timezones import parse_zone

from ..common.topics import Undecodable, decoded_line, play_lines
from .index import read_index
from .info import Facts, facts_of_archive, facts_of_index, text, yaml
from .scan import check_version
from .verb_options import Ros1CatOptions, Ros1InfoOptions, Ros1PlayOptions

if TYPE_CHECKING:
    from .recording import BagRecording

app = typer.Typer(
    help="ROS1 bags: rosbag info, cat, play without ROS; plots.", no_args_is_help=True
)


def facts(call: VerbCall[Ros1InfoOptions], freq: bool) -> Facts:
    """From the bag's own index when it has one (fast, as rosbag reads it); else from a
    conversion (a crashed bag: what it holds), saying so on stderr."""
    file = call.source
    head = registry.read_head(file)
    if not registry.is_archive(head):
        check_version(head)  # no index and no records to read in another version's bag
        try:
            return facts_of_index(str(file), read_index(file, entries=freq))
        except NanorecError as error:
            say(f"nanorec: {file}: {error}; reading its records instead")
    found = facts_of_archive(_bag(call), str(file))
    if not freq:
        found.times = None
    return found


@verb_hook(app, "info", options=Ros1InfoOptions)
def info_hook(call: VerbCall[Ros1InfoOptions]) -> int:
    """Print exactly what `rosbag info` prints (--freq, --yaml as rosbag's).

    Example: nanorec info run.bag --freq --tz UTC
    """
    extra = call.extra
    zone = None if extra.tz is None else parse_zone(extra.tz)
    found = facts(call, extra.freq or call.as_json)
    if call.as_json:
        typer.echo(json.dumps(found.to_json(), indent=2))
    elif extra.as_yaml:
        typer.echo(yaml(found))
    else:
        typer.echo(text(found, zone))
    for note in found.notes:
        say(f"nanorec: {note}")
    return 0


@verb_hook(app, "cat", options=Ros1CatOptions)
def cat_hook(call: VerbCall[Ros1CatOptions]) -> int:
    """One row per message: number, time (s from the start), time_ns, time_s (Unix), then
    the message's fields flattened. Every topic (NDJSON) when none is given.

    Example: nanorec cat run.bag --topic /odom --format csv > odom.csv
    """
    from nanorec.outputs.tables import write_csv, write_ndjson

    fmt = call.form or "ndjson"
    check_choice("--format", fmt, ("ndjson", "csv"))
    wanted = list(call.kinds) or None  # --topic and rosbag's --topics
    selection = call.selection
    assert selection is not None
    recording = _bag(call)
    with Undecodable(recording):
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
    return 0


def _bag(call: VerbCall[object]) -> BagRecording:
    from .recording import BagRecording

    recording = call.recording
    if not isinstance(recording, BagRecording):
        raise UsageError(f"{call.source} is not a ROS bag")
    return recording


@verb_hook(app, "play", options=Ros1PlayOptions)
def play_hook(call: VerbCall[Ros1PlayOptions]) -> int:
    """Play the bag as `rosbag play` would: one NDJSON line per message (topic, time, the
    decoded message) at its time on stdout, the status line on stderr; on a terminal,
    space pauses, s steps, q quits.

    Example: nanorec play run.bag --rate 2 -s 10 -u 5 --topics /odom | wc -l
    """
    from .play import BagPlayer

    def emit_clock(seconds: float) -> None:
        sys.stdout.write(json.dumps({"clock": seconds}) + "\n")

    extra, pace = call.extra, call.pace
    selection = call.selection  # --topic and rosbag's --topics
    recording = _bag(call)
    with (
        Undecodable(recording),
        terminal_player(
            recording,
            pace.pause,
            factory=BagPlayer,
            rate=pace.rate,
            selection=selection,
            loop=pace.loop,
            immediate=pace.immediate,
            delay=extra.delay,
            skip_empty=extra.skip_empty,
            on_clock=emit_clock if extra.clock else None,
            hz=extra.hz,
        ) as player,
    ):
        if recording.meta.unindexed:
            say("nanorec: unindexed bag: playing what was recovered")
        play_lines(recording, player, immediate=pace.immediate, quiet=extra.quiet)
    sys.stdout.flush()
    return 0


@verb_hook(app, "plot")
def plot_hook(call: VerbCall[None]) -> int:
    """Draw what the bag's messages mean: NavSatFix tracks, odometry/pose/tf paths per
    frame, Imu and few-number topics as time series, a few frames of each Image topic, and
    every topic's message rate as one heat strip. Prints one line saying what it drew.
    Needs matplotlib (the plot extra).

    Example: nanorec plot drive.bag -o drive.png --start 10 --end 40
    """
    from .plot import plot

    assert call.output is not None and call.selection is not None
    report = plot(_bag(call), call.output, selection=call.selection, overwrite=call.force)
    typer.echo(report.line())
    return 0
