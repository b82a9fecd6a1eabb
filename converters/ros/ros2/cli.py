"""`nanorec ros2 ...`, and `nanorec info|cat|play BAG` routed here: `ros2 bag`'s own commands
without ROS, each taking its verb's common options (`nanorec.cli.surface`) plus `ros2 bag`'s
spellings."""

from __future__ import annotations

import json
import sys
from typing import Annotated

import typer

from nanorec.cli import run
from nanorec.cli.inputs import opened
from nanorec.cli.options import (
    Duration,
    End,
    Force,
    Immediate,
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
from nanorec.errors import EmptySelectionError, UsageError
from nanorec.selection import Selection

from ..common.topics import Undecodable, decoded_line, play_lines
from .info_command import info_command
from .lines import ndjson_lines
from .shared import BAG, DISTRO, MSG_PATH, app, ros2_recording

_KINDS = "Only this topic; repeatable."


@verb_command(app, "cat", kinds=_KINDS)
def cat_command(
    file: BAG,
    kinds: Kinds = None,
    fmt: TableFormat = "ndjson",
    start: Start = None,
    end: End = None,
    duration: Duration = None,
    messages: Messages = None,
    msg_path: MSG_PATH = None,
    distro: DISTRO = None,
) -> None:
    """One row per message: number, time (s from the start), time_ns, time_s (Unix), then
    the message's fields flattened. Every topic (NDJSON) when none is given.

    Example: nanorec cat rosbag2_dir --topic /odom --format csv > odom.csv
    """
    from nanorec.outputs.tables import write_csv, write_ndjson

    def action() -> None:
        check_choice("--format", fmt, ("ndjson", "csv"))
        selection = Selection.make(
            start=start, end=end, duration=duration, messages=messages, kinds=kinds
        )
        with opened(file) as opened_recording:
            recording = ros2_recording(opened_recording, file, msg_path, distro)
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

    run(action)


_REPEAT = "; repeatable."


@verb_command(
    app,
    "play",
    kinds=_KINDS,
    start="Start this many seconds into the bag (ros2 bag play --start-offset).",
    duration="Play only this many seconds from --start (ros2 bag play --playback-duration).",
)
def play_command(
    file: BAG,
    rate: Rate = 1.0,
    start: Start = None,
    end: End = None,
    duration: Duration = None,
    messages: Messages = None,
    kinds: Kinds = None,
    topics: Annotated[
        list[str] | None, typer.Option("--topics", help="Play this topic" + _REPEAT)
    ] = None,
    regex: Annotated[
        str | None, typer.Option("--regex", "-e", help="Also play the topics matching REGEX.")
    ] = None,
    exclude_regex: Annotated[
        str | None,
        typer.Option("--exclude-regex", "-x", help="Leave out the topics matching REGEX."),
    ] = None,
    exclude_topics: Annotated[
        list[str] | None,
        typer.Option("--exclude-topics", help="Leave out this topic" + _REPEAT),
    ] = None,
    start_offset: Annotated[
        float | None, typer.Option("--start-offset", help="Same as --start (ros2's spelling).")
    ] = None,
    playback_duration: Annotated[
        float | None,
        typer.Option("--playback-duration", help="Same as --duration (ros2's spelling)."),
    ] = None,
    until_sec: Annotated[
        float | None,
        typer.Option("--playback-until-sec", help="Stop at this Unix time (seconds)."),
    ] = None,
    until_nsec: Annotated[
        int | None,
        typer.Option("--playback-until-nsec", help="Stop at this Unix time (nanoseconds)."),
    ] = None,
    loop: Loop = False,
    pause: Pause = False,
    start_paused: Annotated[
        bool, typer.Option("--start-paused", "-p", help="Same as --pause (ros2's spelling).")
    ] = False,
    immediate: Immediate = False,
    delay: Annotated[float, typer.Option("--delay", "-d", help="Sleep SEC before playing.")] = 0.0,
    clock: Annotated[
        bool, typer.Option("--clock", help="Also print clock lines (ros2 bag play --clock).")
    ] = False,
    hz: Annotated[float, typer.Option("--hz", help="Clock lines per second.")] = 40.0,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No status line.")] = False,
    msg_path: MSG_PATH = None,
    distro: DISTRO = None,
) -> None:
    """Play the bag as `ros2 bag play` would: one NDJSON line per message (topic, time, the
    decoded message) at its time on stdout, the status line on stderr; on a terminal,
    space pauses, → plays the next message, ↑/↓ change the rate, q quits.

    Example: nanorec play rosbag2_dir --rate 2 --start-offset 10 -e '/camera/.*'
    """
    from .play import Ros2Player, chosen_topics

    def emit_clock(seconds: float) -> None:
        sys.stdout.write(json.dumps({"clock": seconds}) + "\n")

    def action() -> None:
        if until_sec is not None and until_nsec is not None:
            raise UsageError("give --playback-until-sec or --playback-until-nsec, not both")
        with opened(file) as opened_recording:
            recording = ros2_recording(opened_recording, file, msg_path, distro)
            picked = chosen_topics(
                recording.table_kinds(),
                topics=[*(kinds or ()), *(topics or ())],
                regex=regex,
                exclude_regex=exclude_regex,
                exclude_topics=exclude_topics or (),
            )
            if picked == []:
                raise UsageError("the topic filters select no topic of the bag")
            first = start if start is not None else start_offset
            last = end
            until = until_nsec if until_nsec is not None else None
            if until_sec is not None:
                until = round(until_sec * 1e9)
            if until is not None:
                # In whole microseconds of the index (no float rounding of Unix times); the
                # messages of that last microsecond past `until` are left out below.
                stop_us = until // 1000 - int(recording.reader.index.timestamp_us[0])
                if stop_us < 0:
                    raise EmptySelectionError(
                        f"--playback-until {until} ns is before the bag's first message"
                    )
                last = stop_us / 1e6 if last is None else min(last, stop_us / 1e6)
            selection = Selection.make(
                start=first,
                end=last,
                duration=duration if duration is not None else playback_duration,
                messages=messages,
                kinds=picked,
            )
            with (
                Undecodable(recording),
                terminal_player(
                    recording,
                    pause or start_paused,
                    factory=Ros2Player,
                    rate=rate,
                    selection=selection,
                    loop=loop,
                    immediate=immediate,
                    delay=delay,
                    on_clock=emit_clock if clock else None,
                    hz=hz,
                ) as player,
            ):
                if until is not None:  # as rosbag2: every message stamped <= until, to the ns
                    player.numbers = [n for n in player.numbers if recording.time_ns(n) <= until]
                    if not player.numbers:
                        raise EmptySelectionError(f"--playback-until {until} ns selects no message")
                play_lines(recording, player, immediate=immediate, quiet=quiet)
        sys.stdout.flush()

    run(action)


@verb_command(app, "plot", output="Picture to write: .png, .svg or .pdf.", kinds=_KINDS)
def plot_command(
    file: BAG,
    output: Output,
    force: Force = False,
    start: Start = None,
    end: End = None,
    duration: Duration = None,
    messages: Messages = None,
    kinds: Kinds = None,
    msg_path: MSG_PATH = None,
    distro: DISTRO = None,
) -> None:
    """Draw what the bag's messages mean: NavSatFix tracks, odometry/pose/tf paths per
    frame, Imu and few-number topics as time series, a few frames of each Image topic, and
    every topic's message rate as one heat strip (the picture of ROS1 bags). Prints one line
    saying what it drew. Needs matplotlib (the plot extra).

    Example: nanorec plot rosbag2_dir -o drive.png --start 10 --end 40
    """
    from nanorec.cli.inputs import check_output

    from .plot import plot

    def action() -> None:
        check_output(output, file)
        selection = Selection.make(
            start=start, end=end, duration=duration, messages=messages, kinds=kinds
        )
        with opened(file) as opened_recording:
            recording = ros2_recording(opened_recording, file, msg_path, distro)
            with Undecodable(recording):
                report = plot(recording, output, selection=selection, overwrite=force)
        typer.echo(report.line())

    run(action)


__all__ = ["app", "cat_command", "info_command", "play_command", "plot_command"]
