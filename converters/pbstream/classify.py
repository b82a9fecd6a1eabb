"""Which kind each record is, and what the index needs of it, from as little of its member
as tells it: the header or legacy layout decides the numbering (spec §4), then the first
bytes of each member are inflated (`describe_member`) and scanned for the record's ids and
time (`records.describe_prefix`); `Columns` keeps them per record for the side member."""

from __future__ import annotations

from array import array
from typing import Final

import numpy as np
import numpy.typing as npt

from nanorec.buffers import Buffer

from .records import (
    HEADER,
    LEGACY_KINDS,
    OPTIONS,
    POSE_GRAPH,
    UNKNOWN,
    V2_KINDS,
    Described,
    describe,
    describe_bare,
    describe_prefix,
    header_version,
    is_header,
    looks_like_options,
    peek_ticks,
    pose_graph_trajectories,
)
from .stream import Cut, declared_size, inflate_member, iter_frames, peek_member, peek_payload

LEGACY: Final = "legacy"
#: Payload bytes inflated first to describe a record (16x more while they do not suffice);
#: a payload this short is inflated whole, so its CRC is checked at once.
_PEEK: Final = 256


class Classifier:
    """Tells each record's kind in order: the header or legacy layout decides the numbering
    (spec §4)."""

    def __init__(self) -> None:
        self.format = "unknown"
        self.version: int | None = None
        self.kinds: dict[int, str] = V2_KINDS
        self._trajectories = 0

    def first(self, payload: bytes) -> Described:
        if is_header(payload):
            self.version = header_version(payload)
            self.format = str(self.version)
            return Described(HEADER, version=self.version, body=(0, len(payload)))
        self.format = LEGACY
        self.kinds = LEGACY_KINDS
        self._trajectories = pose_graph_trajectories(payload)
        return describe_bare(POSE_GRAPH, payload)

    def describe(self, number: int, payload: bytes) -> Described:
        if number == 0:
            return self.first(payload)
        if (
            number == 1
            and self.format == LEGACY
            and looks_like_options(payload, self._trajectories)
        ):
            return describe_bare(OPTIONS, payload)
        return describe(payload, self.kinds)

    def describe_member(self, number: int, member: bytes, offset: int) -> Described:
        """What the index needs of record `number` from as little of its payload as tells
        it (see `describe_prefix`); FormatError when the member is damaged as far as read."""
        size = declared_size(member)
        if number == 0 or (number == 1 and self.format == LEGACY):
            return self.describe(number, inflate_member(member, offset))
        length = _PEEK
        while True:
            prefix = peek_member(member, offset, length, size)
            info = describe_prefix(prefix, size, self.kinds)
            if info is not None and (info.kind != UNKNOWN or len(prefix) >= size):
                return info
            if info is not None:  # not a record's shape: damaged (the CRC tells) or unknown
                return self.describe(number, inflate_member(member, offset))
            length *= 16

    def peek(self, number: int, member: bytes) -> int | None:
        """The time of record `number` from its first bytes only (see `first_ticks`)."""
        if number == 0 or (number == 1 and self.format == LEGACY):
            return None
        return peek_ticks(peek_payload(member), self.kinds)


#: `Columns.trajectory` / `.index` of a record that has none.
NONE_ID: Final = -(1 << 31)


class Columns:
    """Per record: trajectory id, node/submap index, own time in ticks (`timed` says which
    records have one), so selections and summaries need no message reads."""

    def __init__(self) -> None:
        self.trajectory = array("i")
        self.index = array("i")
        self.ticks = array("q")
        self.timed = array("b")

    def add(self, info: Described) -> None:
        self.trajectory.append(NONE_ID if info.trajectory_id is None else info.trajectory_id)
        self.index.append(NONE_ID if info.index is None else info.index)
        self.ticks.append(info.ticks or 0)
        self.timed.append(info.ticks is not None)

    def extend(self, infos: list[Described]) -> None:
        """`add` for a run of records (a pass per column: cheaper than a call per record)."""
        self.trajectory.extend(
            [NONE_ID if info.trajectory_id is None else info.trajectory_id for info in infos]
        )
        self.index.extend([NONE_ID if info.index is None else info.index for info in infos])
        self.ticks.extend([info.ticks or 0 for info in infos])
        self.timed.extend([info.ticks is not None for info in infos])

    def extend_arrays(
        self,
        trajectory: npt.ArrayLike,
        index: npt.ArrayLike,
        ticks: npt.ArrayLike,
        timed: npt.ArrayLike,
    ) -> None:
        """`extend` from numpy columns (ids as `NONE_ID` where none, ticks 0 where untimed)."""
        self.trajectory.frombytes(np.asarray(trajectory, dtype=np.int32).tobytes())
        self.index.frombytes(np.asarray(index, dtype=np.int32).tobytes())
        self.ticks.frombytes(np.asarray(ticks, dtype=np.int64).tobytes())
        self.timed.frombytes(np.asarray(timed, dtype=np.int8).tobytes())

    def to_dict(self) -> dict[str, bytes]:
        return {
            name: getattr(self, name).tobytes()
            for name in ("trajectory", "index", "ticks", "timed")
        }


def first_ticks(buf: Buffer, classifier: Classifier) -> int | None:
    """The first record time in the file, found by inflating only the start of each record
    up to the first timed one."""
    for number, frame in enumerate(iter_frames(buf)):
        if isinstance(frame, Cut):
            return None
        ticks = classifier.peek(number, bytes(buf[frame.start : frame.end]))
        if ticks is not None:
            return ticks
    return None


__all__ = ["LEGACY", "NONE_ID", "Classifier", "Columns", "first_ticks"]
