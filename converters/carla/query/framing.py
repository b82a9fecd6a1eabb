"""What frames every CARLA text query's output: the header lines, the current frame (the
query object's `Frame` member, read from each FrameStart), the trailer, and the packet ids
the 0.9.5 form knows."""

from __future__ import annotations

from ..textfmt import format_date
from .base import FRAME, Packet, RecorderHeader, overlay
from .options import QueryOptions


def header_text(header: RecorderHeader, opts: QueryOptions) -> str:
    return (
        f"Version: {header.version}\nMap: {header.map_name}\n"
        f"Date: {format_date(header.date, opts.zone)}\n\n"
    )


class FrameFacts:
    """The query object's `Frame` member: id, duration and elapsed of the last FrameStart."""

    def __init__(self) -> None:
        self.raw = bytes(24)
        self.id, self.duration, self.elapsed = 0, 0.0, 0.0

    def read(self, packet: Packet) -> None:
        if packet.rerun:
            return
        self.raw = overlay(packet.body[:24], self.raw)
        self.id, self.duration, self.elapsed = FRAME.unpack(self.raw)


def trailer(frame: FrameFacts, elapsed_text: str) -> str:
    return f"\nFrames: {frame.id}\nDuration: {elapsed_text} seconds\n"


KNOWN_0_9_5 = frozenset(range(8))

__all__ = ["KNOWN_0_9_5", "FrameFacts", "header_text", "trailer"]
