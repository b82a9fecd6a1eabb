"""What the commands of topic-based recordings (ROS1 and ROS 2 bags) print: one NDJSON line
per decoded message, the player's status line, and undecodable messages as bytes with a
warning. The recording gives `decoded(n)` -> {topic, type, time (ns), message} and takes an
`on_undecodable` callback."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from nanorec.cli import said, say
from nanorec.errors import FormatError
from nanorec.untyped import JsonObject

if TYPE_CHECKING:
    from nanorec.player import Player


class Decoding(Protocol):
    """A ROS recording, as far as its NDJSON lines go (`BagRecording`, `Ros2Recording`)."""

    @property
    def start_time(self) -> float: ...

    @property
    def duration(self) -> float: ...

    def decoded(self, number: int) -> JsonObject:
        """Message `number`: its time (ns), topic, type and decoded message."""
        ...


class Reporting(Protocol):
    """A recording that tells `on_undecodable` of a payload it gives as bytes."""

    on_undecodable: Callable[[FormatError], None] | None


class Undecodable:
    """While open, a payload that does not decode comes out as its bytes with a warning on
    stderr (the first few; then a count at the end), and the rest of the bag still plays."""

    SHOWN = 10

    def __init__(self, recording: Reporting) -> None:
        self.recording = recording
        self.count = 0

    def __enter__(self) -> None:
        self.recording.on_undecodable = self

    def __exit__(self, *exc: object) -> None:
        self.recording.on_undecodable = None
        if self.count > self.SHOWN:
            say(f"nanorec: warning: {self.count} messages did not decode (printed as bytes)")

    def __call__(self, error: FormatError) -> None:
        self.count += 1
        if self.count <= self.SHOWN:
            say(f"nanorec: warning: {error}; printed as bytes")


def decoded_line(recording: Decoding) -> Callable[[int], JsonObject]:
    """Message number -> its NDJSON line: number, topic, type, time_ns, time_s, message."""

    def line(number: int) -> JsonObject:
        row = recording.decoded(number)
        ns = row.pop("time")
        return {
            "number": number,
            "topic": row["topic"],
            "type": row["type"],
            "time_ns": ns,
            "time_s": ns / 1e9,
            "message": row["message"],
        }

    return line


def play_lines(recording: Decoding, player: Player, *, immediate: bool, quiet: bool) -> None:
    """Print the player's messages as NDJSON, and rosbag's status line on stderr."""
    from nanorec.outputs.tables import write_line

    origin, total = recording.start_time, recording.duration
    status = 0.0
    try:
        for row in player.paced(decoded_line(recording)):
            write_line(row, sys.stdout)
            if not immediate:
                sys.stdout.flush()
            if not quiet and time.monotonic() - status > 0.1:
                status = time.monotonic()
                state = "PAUSED " if player.paused else "RUNNING"
                elapsed = row["time_s"] - origin
                said()
                sys.stderr.write(
                    f"\r [{state}]  Bag Time: {row['time_s']:13.6f}   "
                    f"Duration: {elapsed:.6f} / {total:.6f}               \r"
                )
    except BaseException:
        if status:
            sys.stderr.write("\n")  # an error's line starts on a line of its own
        raise
    if not quiet:
        sys.stderr.write("\nDone.\n")
