"""Sensor records (IMU, odometry, fixed-frame poses) of a run read at once with numpy
(`columnar.py`), a protobuf field at a time for every record together:

    key len [08 <trajectory>] 12 len 08 <time> <sub-messages>

where the sub-messages are IMU data's `12` linear acceleration and `1a` angular velocity
(Vector3d: doubles `09 11 19`), or a pose's `12` Rigid3d (`0a` translation, Vector3d; `12`
rotation, Quaterniond: doubles `09 11 19 21`). Each field may be left out (proto3 omits
zeros: a 2D pose has no z, qx, qy) and reads as 0.0, as `tables.py` reads it. Fields must
come in ascending order, each once, as Cartographer writes them: a record with anything
else (a field twice, unknown fields, another wire type, a long key, damage) is not `ok`
and is read record by record, so the values are those `decode.decode_record` gives.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

import numpy as np

from .records import FIXED_FRAME, IMU, ODOMETRY
from .tables import POSE
from .vector import _Run

Ints = np.ndarray[Any, np.dtype[np.int64]]
Bools = np.ndarray[Any, np.dtype[np.bool_]]
Floats = np.ndarray[Any, np.dtype[np.float64]]
_EIGHT: Final = np.arange(8)
_DOUBLE_KEYS: Final = (0x09, 0x11, 0x19, 0x21)  # fields 1-4, wire type 1 (64-bit)


@dataclass(frozen=True)
class Message:
    """A message of doubles (`doubles`: column names by field, from 1), or of sub-messages
    (`parts`: one-byte key -> its message)."""

    doubles: tuple[str, ...] = ()
    parts: dict[int, Message] = field(default_factory=dict)

    def columns(self) -> list[str]:
        names = list(self.doubles)
        for _, part in sorted(self.parts.items()):
            names += part.columns()
        return names


def _vector(names: tuple[str, ...]) -> Message:
    return Message(doubles=names)


_IMU: Final = Message(
    parts={
        0x12: _vector(tuple(f"linear_acceleration_{a}" for a in "xyz")),
        0x1A: _vector(tuple(f"angular_velocity_{a}" for a in "xyz")),
    }
)
_POSE: Final = Message(
    parts={0x12: Message(parts={0x0A: _vector(POSE[:3]), 0x12: _vector(POSE[3:])})}
)
#: The record kinds read here: what follows the time in their inner message.
SHAPES: Final = {IMU: _IMU, ODOMETRY: _POSE, FIXED_FRAME: _POSE}


class _Walk:
    """The reads of one run: `ok` per record, the columns found so far."""

    def __init__(self, run: _Run, count: int) -> None:
        self.run = run
        self.ok = np.ones(count, np.bool_)
        self.columns: dict[str, Floats] = {}

    def length(self, pos: Ints, limit: Ints, active: Bools) -> tuple[Ints, Ints]:
        """The length varint at `pos` of the `active` records and the end it gives."""
        ok = self.ok.copy()
        value, after = self.run.varint(pos, limit, ok)
        ok &= value < (1 << 40)
        self.ok &= ~active | ok
        end = after + np.minimum(value, 1 << 40).astype(np.int64)
        self.ok &= ~active | (end <= limit)
        return after, end

    def message(self, shape: Message, pos: Ints, end: Ints, active: Bools) -> None:
        """Reads `shape` in `[pos, end)` of the `active` records into `columns`."""
        for name in shape.columns():
            self.columns.setdefault(name, np.zeros(len(pos), np.float64))
        if shape.doubles:
            self._doubles(shape.doubles, pos, end, active)
            return
        last = np.zeros(len(pos), np.int64)  # the key before: keys go up
        for _ in range(len(shape.parts)):
            going = active & self.ok & (pos < end)
            if not going.any():
                break
            key = self.run.byte(pos, end, ok := self.ok.copy())
            self.ok &= ~going | (ok & (key > last))
            after, stop = self.length(pos + 1, end, going)
            for number, part in shape.parts.items():
                chosen = going & self.ok & (key == number)
                if chosen.any():
                    self.message(part, after, stop, chosen)
            known = np.isin(key, list(shape.parts))
            self.ok &= ~going | known
            last = np.where(going, key, last)
            pos = np.where(going, stop, pos)
        self.ok &= ~active | (pos == end)

    def _doubles(self, names: tuple[str, ...], pos: Ints, end: Ints, active: Bools) -> None:
        last = np.zeros(len(pos), np.int64)
        for _ in range(len(names)):
            going = active & self.ok & (pos < end)
            if not going.any():
                break
            key = self.run.byte(pos, end, ok := self.ok.copy())
            self.ok &= ~going | (ok & (key > last) & (pos + 9 <= end))
            at = self.run.base + np.minimum(pos + 1, self.run.sizes)
            values = self.run.flat.take(at[:, None] + _EIGHT).view("<f8")[:, 0]
            for number, name in zip(_DOUBLE_KEYS, names, strict=False):
                chosen = going & (key == number)
                self.columns[name] = np.where(chosen, values, self.columns[name])
            self.ok &= ~going | np.isin(key, _DOUBLE_KEYS[: len(names)])
            last = np.where(going, key, last)
            pos = np.where(going, pos + 9, pos)
        self.ok &= ~active | (pos == end)


def sensor_run(kind: str, payloads: bytes, sizes: Ints) -> tuple[Bools, dict[str, Floats]]:
    """(ok, the `SHAPES[kind]` columns) of payloads joined (`sizes` bytes each), the values
    meaningful where `ok` (see the module docstring)."""
    count = len(sizes)
    run = _Run(payloads + bytes(32), sizes)
    walk = _Walk(run, count)
    everyone = np.ones(count, np.bool_)
    zero = np.zeros(count, np.int64)
    key = run.byte(zero, sizes, walk.ok)
    walk.ok &= (key & 7 == 2) & (key >= 8) & (key < 0x80)  # one length-delimited field
    pos, end = walk.length(zero + 1, sizes, everyone)
    walk.ok &= end == sizes
    has_id = run.byte(pos, sizes, walk.ok.copy()) == 0x08
    if has_id.any():
        _, after = run.varint(pos + 1, sizes, ok := walk.ok.copy())
        walk.ok &= ~has_id | ok
        pos = np.where(has_id, after, pos)
    walk.ok &= run.byte(pos, sizes, walk.ok) == 0x12
    pos, end = walk.length(pos + 1, sizes, everyone)
    walk.ok &= (end == sizes) & (run.byte(pos, sizes, walk.ok) == 0x08)
    _, pos = run.long_varint(pos + 1, sizes, walk.ok)
    walk.message(SHAPES[kind], pos, sizes, everyone)
    columns = {name: walk.columns[name] for name in SHAPES[kind].columns()}
    return walk.ok, columns


__all__ = ["SHAPES", "sensor_run"]
