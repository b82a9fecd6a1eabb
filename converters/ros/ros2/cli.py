"""`nanorec ros2 ...`, and the core's verbs on a ROS 2 bag: `ros2 bag`'s own answers without
ROS (`nanorec info|cat|play|plot BAG`), as hooks of the core's verbs (`nanorec.cli.hooks`)
taking `ros2 bag`'s spellings too."""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path
from typing import Protocol

import typer

from nanorec.cli.hooks import VerbCall, verb_hook
from nanorec.cli.surface import check_choice
from nanorec.cli.verbs import terminal_player
from nanorec.errors import EmptySelectionError, UsageError
from nanorec.outputs.tables import write_csv, write_ndjson

from ..common.topics import Undecodable, decoded_line, play_lines
from .info_command import info_hook
from .lines import ndjson_lines
from .recording import Ros2Recording
from .shared import app, ros2_recording
from .verb_options import Ros2DecodeOptions, Ros2PlayOptions


class _Decoding(Protocol):
    """A verb's options saying how to decode (`--msg-path`, `--distro`)."""

    @property
    def msg_path(self) -> list[Path] | None: ...

    @property
    def distro(self) -> str | None: ...


def _bag(call: VerbCall[_Decoding]) -> Ros2Recording:
    """The call's input as a ROS 2 recording decoding with its --msg-path and --distro."""
    return ros2_recording(call.recording, call.source, call.extra.msg_path, call.extra.distro)


@verb_hook(app, "cat", options=Ros2DecodeOptions)
def cat_hook(call: VerbCall[Ros2DecodeOptions]) -> int:
    """One row per message: number, time (s from the start), time_ns, time_s (Unix), then
    the message's fields flattened. Every topic (NDJSON) when none is given.

    Example: nanorec cat rosbag2_dir --topic /odom --format csv > odom.csv
    """
    fmt, kinds, selection = call.form or "ndjson", call.kinds, call.selection
    assert selection is not None
    check_choice("--format", fmt, ("ndjson", "csv"))
    recording = _bag(call)
    with Undecodable(recording):
        chosen = kinds or recording.table_kinds()
        unknown = sorted(set(chosen) - set(recording.table_kinds()))
        if unknown:
            there = ", ".join(recording.table_kinds())
            raise UsageError(f"no topic {', '.join(unknown)} (topics: {there})")
        if fmt == "csv" and len(chosen) != 1:
            raise UsageError("CSV holds one table: give one --topic")
        if not kinds:
            numbers = selection.chosen(recording.reader.index)
            for text in ndjson_lines(recording, numbers, decoded_line(recording)):
                sys.stdout.write(text)
        else:
            for topic in chosen:
                (write_csv if fmt == "csv" else write_ndjson)(
                    recording.rows(topic, selection), sys.stdout
                )
    sys.stdout.flush()
    return 0


@verb_hook(app, "play", options=Ros2PlayOptions)
def play_hook(call: VerbCall[Ros2PlayOptions]) -> int:
    """Play the bag as `ros2 bag play` would: one NDJSON line per message (topic, time, the
    decoded message) at its time on stdout, the status line on stderr; on a terminal,
    space pauses, → plays the next message, ↑/↓ change the rate, q quits.

    Example: nanorec play rosbag2_dir --rate 2 --start-offset 10 -e '/camera/.*'
    """
    from .play import Ros2Player, chosen_topics

    def emit_clock(seconds: float) -> None:
        sys.stdout.write(json.dumps({"clock": seconds}) + "\n")

    extra, pace, given = call.extra, call.pace, call.selection
    assert given is not None
    if extra.until_sec is not None and extra.until_nsec is not None:
        raise UsageError("give --playback-until-sec or --playback-until-nsec, not both")
    recording = _bag(call)
    picked = chosen_topics(
        recording.table_kinds(),
        topics=[*call.kinds, *(extra.topics or ())],
        regex=extra.regex,
        exclude_regex=extra.exclude_regex,
        exclude_topics=extra.exclude_topics or (),
    )
    if picked == []:
        raise UsageError("the topic filters select no topic of the bag")
    last = given.end
    until = extra.until_nsec
    if extra.until_sec is not None:
        until = round(extra.until_sec * 1e9)
    if until is not None:
        # In whole microseconds of the index (no float rounding of Unix times); the
        # messages of that last microsecond past `until` are left out below.
        stop_us = until // 1000 - int(recording.reader.index.timestamp_us[0])
        if stop_us < 0:
            raise EmptySelectionError(
                f"--playback-until {until} ns is before the bag's first message"
            )
        last = stop_us / 1e6 if last is None else min(last, stop_us / 1e6)
    selection = dataclasses.replace(call.selecting(picked), end=last)
    with (
        Undecodable(recording),
        terminal_player(
            recording,
            pace.pause or extra.start_paused,
            factory=Ros2Player,
            rate=pace.rate,
            selection=selection,
            loop=pace.loop,
            immediate=pace.immediate,
            delay=extra.delay,
            on_clock=emit_clock if extra.clock else None,
            hz=extra.hz,
        ) as player,
    ):
        if until is not None:  # as rosbag2: every message stamped <= until, to the ns
            player.numbers = [n for n in player.numbers if recording.time_ns(n) <= until]
            if not player.numbers:
                raise EmptySelectionError(f"--playback-until {until} ns selects no message")
        play_lines(recording, player, immediate=pace.immediate, quiet=extra.quiet)
    sys.stdout.flush()
    return 0


@verb_hook(app, "plot", options=Ros2DecodeOptions)
def plot_hook(call: VerbCall[Ros2DecodeOptions]) -> int:
    """Draw what the bag's messages mean: NavSatFix tracks, odometry/pose/tf paths per
    frame, Imu and few-number topics as time series, a few frames of each Image topic, and
    every topic's message rate as one heat strip (the picture of ROS1 bags). Prints one line
    saying what it drew. Needs matplotlib (the plot extra).

    Example: nanorec plot rosbag2_dir -o drive.png --start 10 --end 40
    """
    from .plot import plot

    assert call.output is not None and call.selection is not None
    recording = _bag(call)
    with Undecodable(recording):
        report = plot(recording, call.output, selection=call.selection, overwrite=call.force)
    typer.echo(report.line())
    return 0


__all__ = ["app", "cat_hook", "info_hook", "play_hook", "plot_hook"]
