"""Runs of records described and made into stored archive messages at once (`convert`).

A run's small members (below `scan.WHOLE_BELOW`, with Cartographer's gzip header, while
they declare no more than `_PAYLOADS_BUDGET` of payload) are inflated and checked in one
ISA-L call (`scan.inflate_run`; one at a time when it says no), their payloads read by
`vector.describe_run`, and the stored messages of the rows it reads built with numpy
(`glue.build_run`) around the members, which are never copied before the run's one join.
The other rows (large members, other gzip headers, records of other shapes, damage) go one
at a time through `describe_prefix` and the classifier; the writer takes the run as one
buffer (`ArchiveWriter.write_joined_run`).
"""

from __future__ import annotations

import mmap
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Final

import msgpack
import numpy as np

from nanorec.archive.wire import timestamp_entry
from nanorec.errors import FormatError

from .classify import NONE_ID, Classifier, Columns
from .crc import MemberCheck
from .glue import KindNames, build_run
from .records import (
    DAMAGED,
    OPTIONS,
    POSE_GRAPH,
    UNIX_EPOCH_TICKS,
    UNKNOWN,
    Described,
    describe_prefix,
    ticks_to_us,
)
from .scan import WHOLE_BELOW, inflate_run, whole_payload
from .stream import GZIP_HEADER
from .vector import PAD, describe_run, kind_codes

Ints = np.ndarray[Any, np.dtype[np.int64]]
_HEADER: Final = np.frombuffer(GZIP_HEADER, np.uint8)
_SMALLEST_MEMBER: Final = 18  # a gzip header and trailer
#: The most a run's small members may declare they inflate to (see `_prepare`).
_PAYLOADS_BUDGET: Final = 32 << 20
_FOUR: Final = np.arange(4)
#: Runs prepared (members inflated) ahead of the one being converted.
_AHEAD: Final = 2
Run = tuple[bytes, Ints, list[tuple[str]], Ints, Ints]


def entry_of(info: Described, member: bytes) -> dict[str, Any]:
    """The archive message value of one record (see `convert`'s module docstring)."""
    entry: dict[str, Any] = {"member": member}
    if info.trajectory_id is not None:
        entry["trajectory_id"] = info.trajectory_id
    if info.index is not None:
        entry["index"] = info.index
    if info.ticks is not None:
        entry["timestamp"] = info.ticks
    if info.dims is not None:
        entry["dims"] = info.dims
    if info.version is not None:
        entry["format_version"] = info.version
    if info.body[0] == 0 and info.kind in (POSE_GRAPH, OPTIONS):  # no SerializedData key
        entry["bare"] = True
    return entry


class Runs:
    """Describes runs of records and makes their stored messages (see the module
    docstring). `fast_from`: records before it take the general path (record 0, and 1 of a
    legacy file, are told apart by the file's layout); `last_us`: the index time so far."""

    def __init__(
        self,
        buf: mmap.mmap,
        frames: tuple[list[int], list[int]],
        classifier: Classifier,
        check: MemberCheck,
        fast_from: int,
        last_us: int | None,
    ) -> None:
        self.buf = buf
        self.view = memoryview(buf)
        self.flat = np.frombuffer(buf, np.uint8)
        self.offsets, self.sizes = frames
        self.starts = np.array(self.offsets, np.int64) + 8
        self.lengths = np.array(self.sizes, np.int64)
        self.classifier = classifier
        self.check = check
        self.fast_from = fast_from
        self.last_us = last_us
        self.codes = kind_codes(classifier.kinds)
        names = [classifier.kinds.get(key >> 3, UNKNOWN) for key in range(256)]
        self.names = KindNames(names)
        self.types = [(name,) for name in names]
        self.pack = msgpack.Packer().pack
        self.columns = Columns()
        self.damaged: list[tuple[int, int, str]] = []
        self.warnings: list[str] = []
        self.raw = 0

    def close(self) -> None:
        """Let go of the mapping (it can then be closed)."""
        self.view.release()
        del self.flat

    def stored_runs(self, size: int) -> Iterator[tuple[Run, int]]:
        """Every record, `size` a run, as stored messages (see `stored`) and the source
        offset after the run. A thread prepares the next runs beside (their small members
        inflated, one ISA-L call a run without the GIL)."""
        bounds = [
            (first, min(first + size, len(self.offsets)))
            for first in range(0, len(self.offsets), size)
        ]
        with ThreadPoolExecutor(1, thread_name_prefix="pbstream-inflate") as pool:
            ahead: deque[Future[tuple[list[bytes | memoryview], bytes, Ints]]] = deque()
            try:
                for number, (first, stop) in enumerate(bounds):
                    while len(ahead) <= _AHEAD and number + len(ahead) < len(bounds):
                        ahead.append(pool.submit(self._prepare, *bounds[number + len(ahead)]))
                    bodies, payloads, lengths = ahead.popleft().result()
                    end = self.offsets[stop - 1] + 8 + self.sizes[stop - 1]
                    yield self.stored(first, stop, bodies, payloads, lengths), end
            finally:
                for future in ahead:
                    future.cancel()

    def _member(self, row: int) -> bytes:
        start = int(self.starts[row])
        return bytes(self.view[start : start + int(self.lengths[row])])

    def stored(
        self,
        first: int,
        stop: int,
        bodies: list[bytes | memoryview],
        payloads: bytes,
        lengths: Ints,
    ) -> Run:
        """Records `first` to `stop` (`bodies`, `payloads` and `lengths`: `_prepare`) as
        stored messages: (joined, lengths, types, kinds, index times), for
        `ArchiveWriter.write_joined_run`."""
        sizes = self.lengths[first:stop]
        ok, keys, nodes, trajectory, index, ticks = describe_run(payloads, lengths, self.codes)
        timed = ok.copy()
        kinds = keys.copy()
        types = list(self.types)
        slow: dict[int, bytes] = {}
        ends = np.cumsum(lengths).tolist()
        for row in np.flatnonzero(~ok).tolist():
            payload = payloads[ends[row] - int(lengths[row]) : ends[row]]
            info, message = self._one(first + row, self._member(first + row), payload)
            slow[row] = message
            kinds[row] = len(types)
            types.append((info.kind,))
            trajectory[row] = NONE_ID if info.trajectory_id is None else info.trajectory_id
            index[row] = NONE_ID if info.index is None else info.index
            ticks[row] = info.ticks or 0
            timed[row] = info.ticks is not None
        index = np.where(ok & ~nodes, NONE_ID, index)
        self.columns.extend_arrays(trajectory, index, ticks, timed)
        stamps = self._stamps(ticks, timed)
        stored = {  # one copy of a large member, not two
            row: b"".join((b"\x82", memoryview(message)[1:], timestamp_entry(int(stamps[row]))))
            for row, message in slow.items()
        }
        joined, message_lengths = build_run(
            bodies, sizes, ok, keys, nodes, (trajectory, index, ticks, stamps), self.names, stored
        )
        return joined, message_lengths, types, kinds, stamps

    def _prepare(self, first: int, stop: int) -> tuple[list[bytes | memoryview], bytes, Ints]:
        """Records `first` to `stop`: each member's bytes after its first 10, and the payloads
        of the small members with Cartographer's header (not records before `fast_from`),
        inflated and checked, joined (then `PAD`), and their lengths (0 for the others)."""
        starts, sizes = self.starts[first:stop], self.lengths[first:stop]
        count = len(sizes)
        heads = self.flat.take(starts[:, None] + np.arange(len(_HEADER)), mode="clip")
        small = (heads == _HEADER).all(axis=1)
        small &= (sizes >= _SMALLEST_MEMBER) & (sizes < WHOLE_BELOW)
        small[: max(0, self.fast_from - first)] = False
        ends = starts + sizes
        # what the small members say they inflate to (ISIZE), bounded for the run: past
        # `_PAYLOADS_BUDGET` (a gzip bomb: deflate grows up to ~1,000x), members take the
        # general path, which inflates them in steps and keeps none
        declared = self.flat.take(ends[:, None] - 4 + _FOUR, mode="clip").view("<u4")[:, 0]
        small &= np.cumsum(np.where(small, declared, 0)) <= _PAYLOADS_BUDGET
        rows = np.flatnonzero(small)
        view = self.view
        bodies: list[bytes | memoryview] = [
            view[start:end]
            for start, end in zip((starts + len(GZIP_HEADER)).tolist(), ends.tolist(), strict=True)
        ]
        lengths = np.zeros(count, np.int64)
        if not len(rows):
            return bodies, PAD, lengths
        inflated = inflate_run(view, starts[rows], sizes[rows])
        if inflated is not None:
            lengths[rows] = inflated[1]
            return bodies, b"".join((inflated[0], PAD)), lengths
        each = [whole_payload(self._member(first + row)) or b"" for row in rows.tolist()]
        lengths[rows] = [len(payload) for payload in each]
        return bodies, b"".join([*each, PAD]), lengths

    def _stamps(self, ticks: Ints, timed: np.ndarray[Any, Any]) -> Ints:
        """Index times: a record's own time, else (or when earlier) the one before it."""
        last_us = self.last_us
        if last_us is None:  # no time seen yet: one at a time, as `convert` says
            stamps: list[int] = []
            for tick, has in zip(ticks.tolist(), timed.tolist(), strict=True):
                if has:
                    own = ticks_to_us(tick)
                    last_us = own if last_us is None or own > last_us else last_us
                if last_us is None:
                    last_us = 0
                stamps.append(last_us)
            self.last_us = last_us
            return np.array(stamps, np.int64)
        # (ticks - UNIX_EPOCH_TICKS) // 10 without overflow: the epoch is a multiple of 10
        times = np.where(timed, ticks // 10 - UNIX_EPOCH_TICKS // 10, np.iinfo(np.int64).min)
        run: Ints = np.maximum(np.maximum.accumulate(times), last_us)
        self.last_us = int(run[-1])
        return run

    def _one(self, number: int, member: bytes, payload: bytes) -> tuple[Described, bytes]:
        """A record the vector pass left: described and packed one at a time."""
        offset = self.offsets[number]
        start = offset + 8
        end = start + len(member)
        info = None
        if payload:
            info = describe_prefix(payload, len(payload), self.classifier.kinds)
            if info is not None and info.kind == UNKNOWN:
                info = None
        if info is not None:
            if info.problem is not None:
                self.warnings.append(
                    f"record {number} ({info.kind} at byte {offset}): {info.problem}"
                )
            entry = entry_of(info, member)
        else:
            try:
                info = self.classifier.describe_member(number, member, start)
            except FormatError as error:
                reason = error.message
                self.damaged.append((offset, end - offset, reason))
                info = Described(DAMAGED)
                entry = {"member": member, "reason": reason}
            else:
                if info.problem is not None:
                    self.warnings.append(
                        f"record {number} ({info.kind} at byte {offset}): {info.problem}"
                    )
                entry = entry_of(info, member)
                self.raw += member[:10] != GZIP_HEADER
                self.check.add(number, offset, start, end)
        return info, self.pack({info.kind: entry})


__all__ = ["Runs", "entry_of"]
