"""A run of ROS messages of one type decoded into columns at once: the Parquet fast path.

The generated decoders make one dict a message, which `stamped_rows` flattens and
`nanorec.outputs.arrow` takes apart again, ~30-60 us a small message. A type whose fields are
scalars, strings and numeric arrays (nested messages flattened: Imu, Odometry, PoseStamped,
Image) is decoded here field by field over all the messages of a run: each message's
position is one entry of a numpy array and each field one gather from the joined payloads.
Strings and sequences move the positions by their own lengths, so messages of one topic
may differ in size. `Wire` says how a serialization lays fields out: ROS 2's CDR (a 4-byte
header, fields aligned to their size counting from the byte after it, strings ending in a
NUL) or ROS1's (packed, strings without NUL, time and duration as two 32-bit fields). The
columns are the values `flatten(decode(...))` gives, in the forms `nanorec.outputs.arrow` makes of
them: integers as int64, floats as float64, strings as Arrow text, `uint8` arrays as Arrow
binary, other numeric arrays as Arrow lists of their type (`arrow_columns.list_array`).

Anything the decoders would treat otherwise (big-endian or compressed payloads, a string
that is not UTF-8 or lacks its NUL, a short payload, bytes after the message, a value
beyond int64) makes `decode_run` return None, and the caller decodes that run message by
message as before: the fast path never decides what a message means.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Final, Protocol, TypeAlias

import numpy as np
from numpy.typing import NDArray

from nanorec.outputs.arrow_columns import MAX_BINARY, list_array

Ints = NDArray[np.int64]
U8 = NDArray[np.uint8]
State = tuple[int, int]  # (m, r): the position minus the origin is r modulo m
#: A `pyarrow.Array` (pyarrow is optional and ships no types).
ArrowArray: TypeAlias = Any

#: Pieces longer than this on average are sliced and joined rather than gathered bytewise.
_SLICED: Final = 64


@dataclass(frozen=True)
class Wire:
    """How a serialization lays a message out (see the module docstring)."""

    header: int  # bytes before the message: CDR's encapsulation (checked: 00 01), or none
    aligned: bool  # each primitive aligned to its size (8-byte ones to 8)
    nul: bool  # a string's count includes a NUL that ends it
    padding: int  # bytes a payload may have after its message
    scalars: Mapping[str, str]  # builtin type -> little-endian numpy dtype


class FieldLike(Protocol):
    @property
    def type(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def array(self) -> int | None: ...


@dataclass(frozen=True)
class Leaf:
    """One column: a field of the flattened message (`name` dotted) of numpy `dtype` (None:
    a string); `array` None for one value, n > 0 for a fixed array, -1 for a sequence
    (`bound`: its most elements, 0 for any)."""

    name: str
    dtype: str | None
    array: int | None = None
    bound: int = 0


def leaves(
    fields_of: Callable[[str], Sequence[FieldLike] | None], root: str, wire: Wire
) -> list[Leaf] | None:
    """The columns of `root`'s messages (`fields_of(type)`: its fields, None when
    unknown), or None when a field is not one column of values (a sequence of strings or
    messages, a wstring, an empty nested message)."""
    found: list[Leaf] = []
    return found if _walk(fields_of, wire, root, "", found, frozenset({root})) else None


def _walk(
    fields_of: Callable[[str], Sequence[FieldLike] | None],
    wire: Wire,
    name: str,
    prefix: str,
    found: list[Leaf],
    within: frozenset[str],
) -> bool:
    fields = fields_of(name)
    if not fields:
        return False
    for f in fields:
        column = f"{prefix}{f.name}"
        if f.type in wire.scalars:
            found.append(Leaf(column, wire.scalars[f.type], f.array, getattr(f, "bound", 0)))
        elif f.type == "string" and f.array is None:
            found.append(Leaf(column, None))
        elif f.array is not None or f.type == "string" or f.type in within:
            return False  # a column of lists, or a type within itself
        elif not _walk(fields_of, wire, f.type, f"{column}.", found, within | {f.type}):
            return False
    return True


def decode_run(
    leaves: list[Leaf], wire: Wire, buffer: bytes, starts: Ints, lengths: Ints
) -> dict[str, Any] | None:
    """The columns of the messages at `starts` (`lengths` bytes each) of `buffer`, each a
    numpy array or an Arrow array; None when one of them must be decoded message by message
    (see the module docstring).

    Fixed-size fields in a row whose padding is known (as the generated decoders know it:
    `State`) are one block, gathered once for all messages: a Pose is one copy of 56 bytes
    a message, not seven."""
    import pyarrow as pa

    run = Run(pa, wire, buffer, starts, lengths)
    if not run.headed():
        return None
    columns = decode_fields(run, leaves, (8, 0))
    return columns if columns is not None and run.ended() else None


def decode_fields(run: Run, leaves: list[Leaf], state: State) -> dict[str, Any] | None:
    """The columns of `leaves` read from `run`'s positions on, which are known to be
    `state` (see `decode_run`); None as there."""
    columns: dict[str, Any] = {}
    block: list[tuple[Leaf, int]] = []  # fixed-size fields and their offsets in the block
    width = 0
    for leaf in leaves:
        if leaf.dtype is not None and (leaf.array is None or leaf.array > 0):
            k = np.dtype(leaf.dtype).itemsize if run.wire.aligned else 1
            if state[0] < k:  # padding unknown: the block ends, positions align one by one
                if not run.block(block, width, columns):
                    return None
                block, width = [], 0
                run.align(k)
                state = (k, 0)
            offset = width + -(state[1] + width) % k
            block.append((leaf, offset))
            width = offset + np.dtype(leaf.dtype).itemsize * (leaf.array or 1)
            continue
        if not run.block(block, width, columns):
            return None
        block, width, state = [], 0, (1, 0)
        value = run.string() if leaf.dtype is None else run.sequence(leaf, leaf.dtype)
        if value is None:
            return None
        columns[leaf.name] = value
    if not run.block(block, width, columns):
        return None
    return columns


class Run:
    """The positions of a run's messages as its fields are read (`at`: relative to each
    message's origin, the byte after its header)."""

    def __init__(self, pa: ModuleType, wire: Wire, raw: bytes, starts: Ints, lengths: Ints) -> None:
        self.pa = pa
        self.wire = wire
        self.raw = raw
        self.buf = np.frombuffer(raw, np.uint8)
        self.origin = starts + wire.header
        self.end = starts + lengths
        self.at = np.zeros(len(starts), np.int64)

    def subset(self, chosen: Ints) -> Run:
        """The messages `chosen` of this run (positions copied: write `at` back)."""
        part = copy.copy(self)
        part.origin, part.end, part.at = self.origin[chosen], self.end[chosen], self.at[chosen]
        return part

    def headed(self) -> bool:
        """Whether every payload has its header, saying little-endian CDR (`Wire.header`)."""
        if not self.wire.header or not len(self.at):
            return True
        if bool((self.end < self.origin).any()):
            return False
        starts = self.origin - self.wire.header
        return bool(((self.buf[starts] == 0) & (self.buf[starts + 1] == 1)).all())

    def ended(self) -> bool:
        """Whether every message ends where the decoders accept its end."""
        rest = self.end - self.origin - self.at
        return bool(((rest >= 0) & (rest <= self.wire.padding)).all())

    def align(self, k: int) -> None:
        if k > 1 and self.wire.aligned:
            self.at = (self.at + (k - 1)) & -k

    def fits(self, size: Ints | int) -> Ints | None:
        """The absolute positions of the fields `size` bytes long here, if all fit."""
        pos = self.origin + self.at
        if len(pos) and bool((pos + size > self.end).any()):
            return None
        return pos

    def block(self, items: list[tuple[Leaf, int]], width: int, columns: dict[str, Any]) -> bool:
        """Read the fixed-size fields `items` (`width` bytes from here) into `columns`."""
        if not items:
            return True
        pos = self.fits(width)
        if pos is None:
            return False
        self.at += width
        rows = _rows(self.buf, pos, width)
        for leaf, offset in items:
            count = leaf.array or 1
            dtype = np.dtype(leaf.dtype)
            part = rows[:, offset : offset + dtype.itemsize * count]
            values = np.ascontiguousarray(part).view(dtype).reshape(len(pos), count)
            if leaf.array is None:
                value = _scalars(values[:, 0])
                if value is None:
                    return False
                columns[leaf.name] = value
            elif dtype == np.uint8:
                offsets = np.arange(len(pos) + 1, dtype=np.int64) * count
                binary = _binary(self.pa, values.reshape(-1), offsets)
                if binary is None:
                    return False
                columns[leaf.name] = binary
            else:
                offsets = np.arange(len(pos) + 1, dtype=np.int64) * count
                columns[leaf.name] = list_array(self.pa, values.reshape(-1), offsets)
        return True

    def counts(self) -> Ints | None:
        """The uint32 counts here (strings, sequences), the positions moved past them."""
        self.align(4)
        pos = self.fits(4)
        if pos is None:
            return None
        self.at += 4
        return _rows(self.buf, pos, 4).view("<u4")[:, 0].astype(np.int64)

    def string(self) -> ArrowArray | None:
        n = self.counts()
        if n is None:
            return None
        pos = self.fits(n)
        if pos is None:
            return None  # runs past the payload: the decoder says so
        if self.wire.nul and bool((self.buf[pos + n - 1][n > 0] != 0).any()):
            return None  # no NUL: the decoder says so
        self.at += n
        size = np.maximum(n - 1, 0) if self.wire.nul else n
        text = _binary(self.pa, *_ragged(self.raw, self.buf, pos, size))
        if text is None:
            return None
        text = text.view(self.pa.string())
        try:
            text.validate(full=True)
        except self.pa.ArrowInvalid:  # not UTF-8: the decoder gives bytes
            return None
        return text

    def sequence(self, leaf: Leaf, code: str) -> ArrowArray | None:
        n = self.counts()
        if n is None or (leaf.bound and bool((n > leaf.bound).any())):
            return None
        dtype = np.dtype(code)
        k = dtype.itemsize
        if k > 4 and self.wire.aligned:  # aligned only when there are elements, as in CDR
            self.at = np.where(n > 0, (self.at + (k - 1)) & -k, self.at)
        pos = self.fits(n * k)
        if pos is None:
            return None
        self.at += n * k
        data, offsets = _ragged(self.raw, self.buf, pos, n * k)
        if dtype == np.uint8:
            return _binary(self.pa, data, offsets)
        return list_array(self.pa, data.view(dtype), offsets // k)


def _rows(buf: U8, pos: Ints, width: int) -> U8:
    """The `width` bytes at each of `pos`: an array of shape (len(pos), width), copied at
    once from an overlapping view of the buffer (one item a byte offset)."""
    if not len(pos):
        return np.zeros((0, width), np.uint8)
    items = np.ndarray((len(buf) - width + 1,), f"V{width}", buf, 0, (1,))
    rows: U8 = items[pos].view(np.uint8).reshape(len(pos), width)
    return rows


def _ragged(raw: bytes, buf: U8, pos: Ints, sizes: Ints) -> tuple[U8, Ints]:
    """The `sizes[i]` bytes at each `pos[i]`, joined, and where each starts (n + 1): long
    pieces (image data) sliced and joined, short ones gathered by one index array."""
    offsets = np.zeros(len(pos) + 1, np.int64)
    np.cumsum(sizes, out=offsets[1:])
    total = int(offsets[-1])
    if total > _SLICED * max(len(pos), 1):
        stops = (pos + sizes).tolist()
        data = b"".join([raw[a:b] for a, b in zip(pos.tolist(), stops, strict=True)])
        return np.frombuffer(data, np.uint8), offsets
    index = np.repeat(pos - offsets[:-1], sizes) + np.arange(total, dtype=np.int64)
    return buf[index], offsets


def _binary(pa: ModuleType, data: U8, offsets: Ints) -> ArrowArray | None:
    """An Arrow binary array of `data` cut at `offsets` (None beyond what one holds: the
    per-message path says so)."""
    if offsets[-1] > MAX_BINARY:
        return None
    return pa.Array.from_buffers(
        pa.binary(),
        len(offsets) - 1,
        [None, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(data)],
    )


def _scalars(values: NDArray[Any]) -> NDArray[Any] | None:
    """Values as Arrow infers them from Python's: int64, float64 or bool (None: an
    unsigned value beyond int64, which Arrow would type otherwise)."""
    kind = values.dtype.kind
    if kind == "b":
        flags: NDArray[np.bool_] = values.view(np.uint8) != 0
        return flags
    if values.dtype == np.uint64 and len(values) and int(values.max()) > 2**63 - 1:
        return None
    return values.astype(np.float64 if kind == "f" else np.int64)


__all__ = ["Leaf", "Run", "State", "Wire", "decode_fields", "decode_run", "leaves"]
