"""Records of a run read at once with numpy (`columnar.py`), a protobuf field at a time
for every record together: the payload's one SerializedData field (any one-byte key,
spanning the payload), then the record's message walked by `Message`s:

    IMU:   [08 trajectory] 12 { 08 time, 12 Vector3d, 1a Vector3d }
    poses: [08 trajectory] 12 { 08 time, 12 Rigid3d { 0a Vector3d, 12 Quaterniond } }
    node:  0a { 08 trajectory, 10 index } 2a { 08 time, 12 Quaterniond, 1a 22 2a clouds
           { 08 num_points, 1a packed points (skipped) }, 32 histogram (skipped), 3a Rigid3d }
    submap: 0a { 08 trajectory, 10 index } then 12 Submap2D { 0a Rigid3d, 10 num_range_data,
           18 finished, 22 Grid2D { 0a MapLimits { 09 resolution, 12 max, 1a cell limits },
           packed cells, known box, kind, correspondence costs (fixed32: skipped) } }
           or 1a Submap3D { 0a Rigid3d, 10, 18, hybrid grids and histogram (skipped) }

(Vector3d, Quaterniond: doubles `09 11 19 [21]`.) Each field may be left out (proto3
omits zeros: a 2D pose has no z, qx, qy) and reads as 0, as `tables.py` reads it. Fields
must come in ascending order, each once, with the wire type of their schema, as
Cartographer writes them: a record with anything else (a field twice, unknown fields,
long keys, damage) is not `ok` and is read record by record, so the values are those
`decode.decode_record` gives (packed fields left out, as the tables do). Skipped
sub-messages the decoder would decode (a submap's known-cells box) are walked too, so a
damaged one is not `ok` either.
"""

from __future__ import annotations

from typing import Any, Final

import numpy as np

from .columnar_layout import read_layouts
from .columnar_shape import (
    BOOL,
    DOUBLE,
    DTYPES,
    INT32,
    INT64,
    PADDING,
    SKIP_BYTES,
    SKIP_FIXED32,
    SKIP_VARINT,
    WIRES,
    Message,
)
from .pose import POSE
from .records import FIXED_FRAME, IMU, NODE, ODOMETRY, SUBMAP
from .vector import Run

Ints = np.ndarray[Any, np.dtype[np.int64]]
Bools = np.ndarray[Any, np.dtype[np.bool_]]
_EIGHT: Final = np.arange(8)


def _doubles(*names: str) -> Message:
    return Message({key: (DOUBLE, name) for key, name in zip((9, 17, 25, 33), names, strict=False)})


_TIME: Final = (SKIP_VARINT, "")
_IMU: Final = Message(
    {
        0x08: _TIME,
        0x12: Message(
            {
                0x08: _TIME,
                0x12: _doubles(*(f"linear_acceleration_{a}" for a in "xyz")),
                0x1A: _doubles(*(f"angular_velocity_{a}" for a in "xyz")),
            }
        ),
    }
)
_RIGID: Final = Message({0x0A: _doubles(*POSE[:3]), 0x12: _doubles(*POSE[3:])})
_POSE: Final = Message({0x08: _TIME, 0x12: Message({0x08: _TIME, 0x12: _RIGID})})


def _cloud(name: str) -> Message:
    return Message({0x08: (INT32, name), 0x1A: (SKIP_BYTES, "")})


_NODE: Final = Message(
    {
        0x0A: Message({0x08: _TIME, 0x10: (INT32, "node_index")}),
        0x2A: Message(
            {
                0x08: _TIME,
                0x12: _doubles("", "", "", ""),
                0x1A: _cloud("filtered_gravity_aligned_points"),
                0x22: _cloud("high_resolution_points"),
                0x2A: _cloud("low_resolution_points"),
                0x32: (SKIP_BYTES, ""),
                0x3A: _RIGID,
            }
        ),
    }
)
_CLOUDS: Final = ("filtered_gravity_aligned_points", "high_resolution_points")
_SKIP: Final = (SKIP_BYTES, "")
_SKIP32: Final = (SKIP_FIXED32, "")
_LOCAL: Final = tuple(f"local_{name}" for name in POSE)
_LOCAL_RIGID: Final = Message({0x0A: _doubles(*_LOCAL[:3]), 0x12: _doubles(*_LOCAL[3:])})
_LIMITS: Final = Message(
    {
        0x09: (DOUBLE, "resolution"),
        0x12: _doubles("", ""),
        0x1A: Message({0x08: (INT32, "num_x_cells"), 0x10: (INT32, "num_y_cells")}),
    }
)
_GRID: Final = Message(
    {
        0x0A: _LIMITS,
        0x12: _SKIP,  # packed cells
        0x1A: Message({key: (SKIP_VARINT, "") for key in (0x08, 0x10, 0x18, 0x20)}),
        0x22: Message(),  # probability_grid_2d: Empty
        0x2A: Message({0x0D: _SKIP32, 0x15: _SKIP32, 0x1A: _SKIP}),  # Tsdf2D
        0x35: _SKIP32,
        0x3D: _SKIP32,
    }
)
_HYBRID: Final = Message({0x0D: _SKIP32, 0x1A: _SKIP, 0x22: _SKIP, 0x2A: _SKIP, 0x32: _SKIP})
_SUBMAP_COMMON: Final[dict[int, Message | tuple[str, str]]] = {
    0x0A: _LOCAL_RIGID,
    0x10: (INT32, "num_range_data"),
    0x18: (BOOL, "finished"),
}
_GRID_COLUMNS: Final = ("resolution", "num_x_cells", "num_y_cells")
#: Columns of `_SUBMAP` telling which part a submap has (`dims` is made of them).
TWO, THREE = "submap_2d", "submap_3d"
_SUBMAP: Final = Message(
    {
        0x0A: Message({0x08: _TIME, 0x10: (INT32, "submap_index")}),
        0x12: Message({**_SUBMAP_COMMON, 0x22: _GRID}, present=TWO),
        0x1A: Message({**_SUBMAP_COMMON, 0x22: _HYBRID, 0x2A: _HYBRID, 0x32: _SKIP}, present=THREE),
    }
)
#: The record kinds read here: their message, and their columns in `tables.py`'s order
#: (`dims`: 2 or 3 by the part a submap has; a record with both or neither is not `ok`).
SHAPES: Final = {
    IMU: (_IMU, tuple(_IMU.columns())),
    ODOMETRY: (_POSE, POSE),
    FIXED_FRAME: (_POSE, POSE),
    NODE: (_NODE, ("node_index", *POSE, *_CLOUDS, "low_resolution_points")),
    SUBMAP: (
        _SUBMAP,
        ("submap_index", "dims", "num_range_data", "finished", *_LOCAL, *_GRID_COLUMNS),
    ),
}


class _Walk:
    """The reads of one run: `ok` per record, the columns found so far."""

    def __init__(self, run: Run, shape: Message) -> None:
        self.run = run
        count = len(run.sizes)
        self.ok = np.ones(count, np.bool_)
        self.columns: dict[str, Any] = {
            name: np.zeros(count, DTYPES.get(kind, np.int64))
            for name, kind in shape.columns().items()
        }

    def varint(self, pos: Ints, limit: Ints, active: Bools) -> tuple[Any, Ints]:
        ok = self.ok.copy()
        value, after = self.run.varint(pos, limit, ok)
        self.ok &= ~active | ok
        return value, after

    def message(self, shape: Message, pos: Ints, end: Ints, active: Bools) -> None:
        """Reads `shape` in `[pos, end)` of the `active` records into `columns`."""
        run = self.run
        last = np.zeros(len(pos), np.int64)  # the key before: keys go up
        for _ in range(len(shape.fields)):
            going = active & self.ok & (pos < end)
            if not going.any():
                break
            key = run.byte(pos, end, ok := self.ok.copy())
            self.ok &= ~going | (ok & (key > last) & shape.known.take(key))
            wire = key & 7
            fixed = (wire == 1) | (wire == 5)
            value, after = self.varint(pos + 1, end, going & ~fixed)
            stop = np.where(wire == 1, pos + 9, np.where(wire == 5, pos + 5, after))
            sized = going & (wire == 2)
            ok = value < (1 << 40)
            stop = np.where(sized, after + np.minimum(value, 1 << 40).astype(np.int64), stop)
            self.ok &= ~going | ((~sized | ok) & (stop <= end))
            # only the keys some record holds here (mostly one): not a pass a field
            for number in np.flatnonzero(np.bincount(key[going & self.ok], minlength=256)):
                part = shape.fields[int(number)]
                chosen = going & self.ok & (key == number)
                if isinstance(part, Message):
                    if part.present:
                        self.columns[part.present] |= chosen
                    self.message(part, after, stop, chosen)
                    continue
                kind, name = part
                self.ok &= ~chosen | (wire == WIRES[kind])
                if name and kind == DOUBLE:
                    at = run.base + np.minimum(pos + 1, run.sizes)
                    values = run.flat.take(at[:, None] + _EIGHT).view("<f8")[:, 0]
                    self.columns[name] = np.where(chosen, values, self.columns[name])
                elif name and kind == INT64:
                    self.columns[name] = np.where(chosen, value.view(np.int64), self.columns[name])
                elif name and kind == BOOL:
                    self.columns[name] = np.where(chosen, value != 0, self.columns[name])
                elif name:
                    low = (value & np.uint64(0xFFFF_FFFF)).astype(np.uint32).view(np.int32)
                    self.columns[name] = np.where(chosen, low, self.columns[name])
            last = np.where(going, key, last)
            pos = np.where(going, stop, pos)
        self.ok &= ~active | (pos == end)


def _padded(data: bytes, end: int) -> bytes:
    """`data` with `PADDING` bytes after `end` (its records' end): as it is when they are
    there already, else copied with them."""
    return data if len(data) >= end + PADDING else data + bytes(PADDING)


def message_run(
    shape: Message, joined: bytes, sizes: Ints, starts: Ints | None = None
) -> tuple[Bools, dict[str, Any]]:
    """(ok, the columns of `shape`) of messages joined (`sizes` bytes each; or at `starts`
    of `joined`: spans of one payload, not copied; `joined` is copied only when `PADDING`
    bytes do not follow its last message), each read whole as one `shape`; the values
    meaningful where `ok`."""
    end = int((starts + sizes).max()) if starts is not None and len(sizes) else int(sizes.sum())
    run = Run(_padded(joined, end), sizes, starts)
    found = read_layouts(shape, run.flat, sizes, wrapped=False, bases=run.base)
    if found is not None:
        return np.ones(len(sizes), np.bool_), found
    walk = _Walk(run, shape)
    walk.message(shape, np.zeros(len(sizes), np.int64), sizes, walk.ok.copy())
    return walk.ok, walk.columns


def record_run(kind: str, payloads: bytes, sizes: Ints) -> tuple[Bools, dict[str, Any]]:
    """(ok, the `SHAPES[kind]` columns) of payloads joined (`sizes` bytes each; followed by
    `PADDING` bytes or more, or copied with them), the values meaningful where `ok` (see
    the module docstring)."""
    shape, names = SHAPES[kind]
    run = Run(_padded(payloads, int(sizes.sum())), sizes)
    ok = np.ones(len(sizes), np.bool_)
    columns = read_layouts(shape, run.flat, sizes, wrapped=True)
    if columns is None:
        walk = _Walk(run, shape)
        zero = np.zeros(len(sizes), np.int64)
        key = run.byte(zero, sizes, walk.ok)
        walk.ok &= (key & 7 == 2) & (key >= 8) & (key < 0x80)  # one length-delimited field
        length, pos = walk.varint(zero + 1, sizes, walk.ok.copy())
        walk.ok &= (length < (1 << 40)) & (
            pos + np.minimum(length, 1 << 40).astype(np.int64) == sizes
        )
        walk.message(shape, pos, sizes, walk.ok.copy())
        ok, columns = walk.ok, walk.columns
    if TWO in columns:
        two, three = columns[TWO], columns[THREE]
        ok &= two ^ three
        columns["dims"] = np.where(two, 2, 3).astype(np.int64)
    return ok, {name: columns[name] for name in names}


__all__ = ["PADDING", "SHAPES", "Message", "message_run", "record_run"]
