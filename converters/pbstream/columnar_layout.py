"""Records of a run that share a byte layout, read by offsets: `columnar_wire`'s first try.

The walker (`columnar_wire._Walk`) steps through every record a field at a time, ~50 numpy
calls a field whatever the number of records: most of the time of a small run or of a deep
message (a submap: ~35 fields). Cartographer writes the records of a kind with the same
fields, so records of one size nearly always have their keys, lengths and varint ends at
the same offsets. Here the first record of each size is parsed in Python by the walker's
rules (one-byte keys of the shape, going up, each once; sub-messages spanning their length
exactly; varints of at most ten bytes, lengths below 2**40); the parse of a record depends
only on those structural bytes (keys, lengths) and on where its varints end, so every
record of that size with the same structural bytes and varint ends has the same parse and
its values are read at the same offsets, a numpy gather for the run. Records of a size
that does not match its first are tried against them in turn (a few layouts a size, a
few more in all); when any record is left, or the sizes are too many to pay, None: the
walker reads the run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from nanorec.errors import FormatError

from .columnar_shape import BOOL, DOUBLE, DTYPES, INT64, WIRES, Message
from .wire import read_varint

Ints = np.ndarray[Any, np.dtype[np.int64]]
Bools = np.ndarray[Any, np.dtype[np.bool_]]
Bytes = bytes | memoryview
#: Layouts tried for the records of one size before the walker takes the run.
_TRIES: Final = 3
#: Runs of fewer records are read by layouts whatever their sizes (the walker's cost is
#: per field, whatever the records).
_FEW: Final = 64
_EIGHT: Final = np.arange(8)


@dataclass
class _Layout:
    """Where one record's parse put things: structural bytes, varint values (offset,
    length, kind, column or ""), named doubles (offset, column), sub-messages present."""

    fixed: list[int] = field(default_factory=list)
    varints: list[tuple[int, int, str, str]] = field(default_factory=list)
    doubles: list[tuple[int, str]] = field(default_factory=list)
    present: list[str] = field(default_factory=list)


def _varint(data: Bytes, pos: int, end: int) -> tuple[int, int] | None:
    """(value, position after) of the varint at `pos` (`wire.read_varint`), or None where
    that is no varint: then the layout does not fit."""
    try:
        return read_varint(data, pos, end)
    except FormatError:
        return None


def _parse(shape: Message, data: Bytes, pos: int, end: int, layout: _Layout) -> bool:
    """Whether `data[pos:end]` reads as `shape` by the walker's rules, noting where in
    `layout`."""
    last = 0
    while pos < end:
        key = data[pos]
        part = shape.fields.get(key)
        if part is None or key <= last:
            return False
        layout.fixed.append(pos)
        wire = key & 7
        if wire == 1 or wire == 5:
            after = pos + 1
            stop = after + (8 if wire == 1 else 4)
            value = 0
        else:
            read = _varint(data, pos + 1, end)
            if read is None:
                return False
            value, after = read
            if wire == 2 and value >= 1 << 40:
                return False
            stop = after + value if wire == 2 else after
        if stop > end:
            return False
        if isinstance(part, Message):
            layout.fixed.extend(range(pos + 1, after))
            if part.present:
                layout.present.append(part.present)
            if not _parse(part, data, after, stop, layout):
                return False
        else:
            kind, name = part
            if WIRES[kind] != wire:
                return False
            if wire == 2:
                layout.fixed.extend(range(pos + 1, after))
            elif wire == 0:
                layout.varints.append((pos + 1, after - pos - 1, kind, name))
            elif kind == DOUBLE and name:
                layout.doubles.append((pos + 1, name))
        last = key
        pos = stop
    return pos == end


def _first_field(data: Bytes, size: int, layout: _Layout) -> int | None:
    """Past the SerializedData key and length of a record (`record_run`'s check: a one-byte
    length-delimited key spanning the record), or None."""
    key = data[0] if size else 0
    read = _varint(data, 1, size)
    if not (key & 7 == 2 and 8 <= key < 0x80) or read is None:
        return None
    length, after = read
    if after + length != size:
        return None
    layout.fixed.extend(range(after))
    return after


def _gather(
    flat: np.ndarray[Any, Any], starts: Ints, layout: _Layout
) -> tuple[np.ndarray[Any, Any], Ints]:
    """The bytes `layout` reads of the records at `starts`, a row each, and the offset
    each column holds (`_columns_of`). Records read across most of their bytes: their
    first bytes as items of that width (an index array of the width a record costs ~5x);
    wide ones read at a few places (a submap's fields around its cells): those bytes."""
    needed = {*layout.fixed, *(at + k for at, _ in layout.doubles for k in range(8))}
    needed.update(at + k for at, length, _, _ in layout.varints for k in range(length))
    width = max(needed, default=0) + 1
    if width <= 4 * len(needed) + 64:
        items = np.ndarray((len(flat) - width + 1,), f"V{width}", flat, 0, (1,))
        records = items[starts].view(np.uint8).reshape(len(starts), width)
        return records, np.arange(width)
    places = np.array(sorted(needed), np.int64)
    return flat.take(starts[:, None] + places), places


def _columns_of(places: Ints, offsets: npt.ArrayLike) -> Ints:
    """The columns of `_gather`'s rows holding the bytes at `offsets` of a record."""
    found: Ints = np.searchsorted(places, offsets)
    return found


def _matching(records: np.ndarray[Any, Any], places: Ints, layout: _Layout) -> Bools:
    """Which `records` (`_gather`'s rows) have the structural bytes and varint ends of
    `layout`, the parse of the first."""
    fixed = _columns_of(places, layout.fixed)
    same: Bools = (records.take(fixed, axis=1) == records[0, fixed]).all(axis=1)
    going = [at for at, length, _, _ in layout.varints for at in range(at, at + length - 1)]
    ends = [at + length - 1 for at, length, _, _ in layout.varints]
    if going:
        same &= (records.take(_columns_of(places, going), axis=1) >= 0x80).all(axis=1)
    if ends:
        same &= (records.take(_columns_of(places, ends), axis=1) < 0x80).all(axis=1)
    return same


def _fill(
    records: np.ndarray[Any, Any],
    places: Ints,
    rows: Ints,
    layout: _Layout,
    columns: dict[str, Any],
) -> None:
    """The values of `records` (`_gather`'s rows, all of `layout`; the rows `rows` of the
    run) into `columns`: the doubles in one gather."""
    if layout.doubles:
        offsets = np.array([offset for offset, _ in layout.doubles], np.int64)
        at = _columns_of(places, (offsets[:, None] + _EIGHT).ravel())
        doubles = records.take(at, axis=1).view("<f8")
        for k, (_, name) in enumerate(layout.doubles):
            columns[name][rows] = doubles[:, k]
    for offset, length, kind, name in layout.varints:
        if not name:
            continue
        value = np.zeros(len(rows), np.uint64)
        for k in range(length):  # the layout fixes its length: a pass a byte (mostly one)
            part = (records[:, _columns_of(places, offset + k)] & 0x7F).astype(np.uint64)
            value |= part << np.uint64(7 * k)
        if kind == BOOL:
            columns[name][rows] = value != 0
        elif kind == INT64:
            columns[name][rows] = value.view(np.int64)
        else:
            columns[name][rows] = (value & np.uint64(0xFFFF_FFFF)).astype(np.uint32).view(np.int32)
    for name in layout.present:
        columns[name][rows] = True


def read_layouts(
    shape: Message,
    flat: np.ndarray[Any, Any],
    sizes: Ints,
    *,
    wrapped: bool,
    bases: Ints | None = None,
) -> dict[str, Any] | None:
    """The columns of `shape` (as the walker gives them) of the records joined in `flat`
    (`sizes` bytes each, padded after; or at `bases`), each read whole as `shape`
    (`wrapped`: inside one SerializedData field), or None when the walker must read the
    run (see the module docstring)."""
    count = len(sizes)
    if not count:
        return None
    lengths, group = np.unique(sizes, return_inverse=True)
    # sizes a record (nodes: their clouds) or many sizes of several layouts each (submaps:
    # their cells): the walker is cheaper, unless the records are few
    if len(lengths) > (count if count < _FEW else max(4, count // 32)):
        return None
    bases = np.cumsum(sizes) - sizes if bases is None else bases
    columns: dict[str, Any] = {
        name: np.zeros(count, DTYPES.get(kind, np.int64)) for name, kind in shape.columns().items()
    }
    order = np.argsort(group, kind="stable")
    bounds = np.searchsorted(group[order], np.arange(len(lengths) + 1))
    spare = max(8, count // 32)  # layouts beyond one a size, before the walker is cheaper
    for k, size in enumerate(lengths.tolist()):
        rows = order[bounds[k] : bounds[k + 1]]
        for tried in range(_TRIES):
            spare -= tried > 0
            if spare < 0:
                return None
            first = int(bases[rows[0]])
            data = flat.data[first : first + size]  # bytes by index, not copied
            layout = _Layout()
            pos = _first_field(data, size, layout) if wrapped else 0
            if pos is None or not _parse(shape, data, pos, size, layout):
                return None
            records, places = _gather(flat, bases[rows], layout)
            same = _matching(records, places, layout)
            _fill(records[same], places, rows[same], layout, columns)
            rows = rows[~same]
            if not len(rows):
                break
        if len(rows):
            return None
    return columns


__all__ = ["read_layouts"]
