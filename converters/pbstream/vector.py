"""`records.describe_prefix` for a run of payloads at once, with numpy, for the shapes
Cartographer writes most (odometry, IMU, fixed-frame, landmark data; nodes):

    sensor: key len [08 <trajectory>] 12 len 08 <time> ...
    node:   22 len [0a len [08 <trajectory>] [10 <index>]] 2a len 08 <time> ...

The payloads of a run are joined and these shapes read in all of them at once, a step (a key,
a varint) at a time, with `take` at each payload's start plus its position; a record of any
other shape, or one whose reads leave its payload, is left to `describe_prefix` (one Python
call each), so what is described is what `describe_prefix` says, record for record (tests
compare them).
"""

from __future__ import annotations

from typing import Any, Final

import numpy as np

from .records import FIXED_FRAME, IMU, LANDMARK, NODE, ODOMETRY

#: Bytes after the last payload, so a 10-byte varint read never leaves the run.
PAD: Final = bytes(16)
_SENSORS: Final = (IMU, ODOMETRY, FIXED_FRAME, LANDMARK)
_SHIFTS: Final = np.arange(0, 70, 7, dtype=np.uint64)
_TEN: Final = np.arange(10)

Ints = np.ndarray[Any, np.dtype[np.int64]]
Bools = np.ndarray[Any, np.dtype[np.bool_]]


def kind_codes(kinds: dict[int, str]) -> Ints:
    """Per one-byte SerializedData key: 1 for a node, 2 for sensor data, 0 otherwise."""
    codes = np.zeros(256, dtype=np.int64)
    for number, kind in kinds.items():
        key = number << 3 | 2
        if key < 0x80:
            codes[key] = 1 if kind == NODE else 2 if kind in _SENSORS else 0
    return codes


class Run:
    """The payloads of a run, joined; each read at its start plus a position (gathers by
    `take`: numpy's fancy indexing costs ~15x more on these sizes)."""

    def __init__(self, joined: bytes, sizes: Ints, base: Ints | None = None) -> None:
        self.flat = np.frombuffer(joined, dtype=np.uint8)
        #: where each payload starts: back to back, unless given (spans of one buffer)
        self.base = np.cumsum(sizes) - sizes if base is None else base
        self.sizes = sizes

    def byte(self, pos: Ints, limit: Ints, ok: Bools) -> Ints:
        """The byte at `pos` of each row; clears `ok` where `pos` is not before `limit`."""
        ok &= pos < limit
        return self.flat.take(self.base + np.minimum(pos, self.sizes)).astype(np.int64)

    def varint(
        self, pos: Ints, limit: Ints, ok: Bools
    ) -> tuple[np.ndarray[Any, np.dtype[np.uint64]], Ints]:
        """The varint at `pos` of each row (low 64 bits) and the position after it; clears
        `ok` where it is longer than 10 bytes or does not end before `limit`. Byte by byte
        while any row's goes on (lengths and ids: one or two bytes)."""
        at = self.base + np.minimum(pos, self.sizes)
        byte = self.flat.take(at)
        value = (byte & 0x7F).astype(np.uint64)
        after = pos + 1
        going = byte >= 0x80
        for step in range(1, 10):
            if not going.any():
                break
            rows = np.flatnonzero(going)
            byte = self.flat.take(at.take(rows) + step)
            value[rows] |= (byte & 0x7F).astype(np.uint64) << np.uint64(7 * step)
            after[rows] += 1
            going[rows] = byte >= 0x80
        ok &= ~going & (after <= limit)
        return value, after

    def long_varint(
        self, pos: Ints, limit: Ints, ok: Bools
    ) -> tuple[np.ndarray[Any, np.dtype[np.uint64]], Ints]:
        """`varint` for values of many bytes (times): ten bytes of each row at once."""
        window = self.flat.take((self.base + np.minimum(pos, self.sizes))[:, None] + _TEN)
        last = window < 0x80
        length = np.argmax(last, axis=1) + 1
        after = pos + length
        ok &= last.any(axis=1) & (after <= limit)
        values = ((window & 0x7F).astype(np.uint64) << _SHIFTS) * (length[:, None] > _TEN)
        return values.sum(axis=1, dtype=np.uint64), after


def _signed32(value: np.ndarray[Any, np.dtype[np.uint64]]) -> Ints:
    low = (value & np.uint64(0xFFFF_FFFF)).astype(np.uint32)
    result: Ints = low.view(np.int32).astype(np.int64)
    return result


def _length(value: np.ndarray[Any, np.dtype[np.uint64]], ok: Bools) -> Ints:
    ok &= value < (1 << 40)
    result: Ints = np.minimum(value, 1 << 40).astype(np.int64)
    return result


def describe_run(
    joined: bytes, sizes: Ints, codes: Ints
) -> tuple[Bools, Ints, Bools, Ints, Ints, Ints]:
    """The payloads of a run (`joined`: `sizes` bytes each, then `PAD`) read as above:
    (ok, key, node, trajectory, index, ticks) per record (`key`: the SerializedData key,
    `codes`: see `kind_codes`), meaningful only where `ok`. Rows not `ok` need
    `describe_prefix`."""
    count = len(sizes)
    run = Run(joined, sizes)
    limit = sizes
    ok = np.ones(count, dtype=bool)
    key = run.byte(np.zeros(count, dtype=np.int64), limit, ok)
    ok &= codes.take(key) > 0
    length, pos = run.varint(np.ones(count, dtype=np.int64), limit, ok)
    end = pos + _length(length, ok)
    ok &= end == sizes  # one field spanning the payload
    node = codes.take(key) == 1
    trajectory = np.zeros(count, dtype=np.int64)
    index_ = np.zeros(count, dtype=np.int64)

    # Sensor data: [08 trajectory] 12 len; node: [0a len ids] 2a len.
    first = run.byte(pos, limit, ok.copy())
    sensor_id = ~node & (first == 0x08)
    if sensor_id.any():
        value, after = run.varint(pos + 1, limit, ok_id := ok.copy())
        ok &= ~sensor_id | ok_id
        trajectory = np.where(sensor_id, _signed32(value), trajectory)
        pos = np.where(sensor_id, after, pos)

    node_id = node & (first == 0x0A)
    if node_id.any():
        id_length, after = run.varint(pos + 1, limit, ok_id := ok.copy())
        id_end = after + _length(id_length, ok_id)
        ok_id &= id_end <= end
        ok &= ~node_id | ok_id
        at = np.where(node_id, after, pos)
        for _ in range(2):  # the id's fields 1 and 2, in any order, each a varint
            more = node_id & (at < id_end)
            if not more.any():
                break
            field = run.byte(at, limit, ok_more := ok.copy())
            ok_more &= (field == 0x08) | (field == 0x10)
            value, after = run.varint(at + 1, id_end, ok_more)
            ok &= ~more | ok_more
            number = _signed32(value)
            trajectory = np.where(more & (field == 0x08), number, trajectory)
            index_ = np.where(more & (field == 0x10), number, index_)
            at = np.where(more, after, at)
        ok &= ~node_id | (at == id_end)
        pos = np.where(node_id, id_end, pos)

    timed = run.byte(pos, limit, ok)
    ok &= np.where(node, timed == 0x2A, timed == 0x12)
    time_length, pos = run.varint(pos + 1, limit, ok)
    time_end = pos + _length(time_length, ok)
    ok &= (pos < time_end) & (time_end <= end)  # not empty (`_first_timestamp`: 0)
    ok &= run.byte(pos, limit, ok) == 0x08  # a timestamp as its first field
    ticks, _ = run.long_varint(pos + 1, limit, ok)
    return ok, key, node, trajectory, index_, ticks.view(np.int64)


__all__ = ["PAD", "describe_run", "kind_codes"]
