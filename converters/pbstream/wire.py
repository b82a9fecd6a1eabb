"""A small protobuf wire-format reader and writer: no generated code, no protobuf runtime.

Cartographer payloads are read field by field (`iter_fields`), so a record's kind, ids and
time come from a few varints without decoding its bulky parts (grids, point clouds), and
unknown fields are skipped by wire type without being lost (the payload is kept whole).
Packed repeated scalars decode in bulk with numpy (`unpack_varints`, `np.frombuffer`).
Every problem raises `FormatError` naming the byte offset (relative to `base`).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import Final

import numpy as np
from numpy.typing import NDArray

from nanorec.errors import FormatError

VARINT: Final = 0
FIXED64: Final = 1
LEN: Final = 2
FIXED32: Final = 5

_DOUBLE: Final = struct.Struct("<d")
_FLOAT: Final = struct.Struct("<f")
_MASK64: Final = (1 << 64) - 1

#: One field: (number, wire type, a, b). Varint: a = value, b = the offset after it.
#: Fixed and length-delimited: a..b is the body.
Field = tuple[int, int, int, int]


def read_varint(buf: bytes | memoryview, pos: int, end: int, base: int = 0) -> tuple[int, int]:
    """The varint at `pos` and the offset after it; at most 10 bytes, inside `end`."""
    result = 0
    shift = 0
    start = pos
    while True:
        if pos >= end:
            raise FormatError("a varint runs past the end of its message", offset=base + start)
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result & _MASK64, pos
        shift += 7
        if shift >= 70:
            raise FormatError("a varint is longer than 10 bytes", offset=base + start)


def iter_fields(
    buf: bytes | memoryview, start: int = 0, end: int | None = None, base: int = 0
) -> Iterator[Field]:
    """The fields of the message in `buf[start:end]`, in byte order.

    Raises `FormatError` for wire types 3, 4, 6, 7 (groups are never used by Cartographer:
    treated as corruption), field number 0, or a field running past `end`.
    """
    stop = len(buf) if end is None else end
    pos = start
    while pos < stop:
        key_at = pos
        key = buf[pos]
        if key < 0x80:  # one-byte keys and values are the common case: no call
            pos += 1
        else:
            key, pos = read_varint(buf, pos, stop, base)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise FormatError("field number 0 in a protobuf message", offset=base + key_at)
        if wire in (VARINT, LEN):
            if pos < stop and buf[pos] < 0x80:
                value, after = buf[pos], pos + 1
            else:
                value, after = read_varint(buf, pos, stop, base)
            if wire == VARINT:
                yield number, wire, value, after
                pos = after
                continue
            pos, after = after, after + value
        elif wire == FIXED64:
            after = pos + 8
        elif wire == FIXED32:
            after = pos + 4
        else:
            raise FormatError(
                f"unknown protobuf wire type {wire} (field {number})", offset=base + key_at
            )
        if after > stop:
            raise FormatError(
                f"field {number} runs {after - stop} bytes past the end of its message",
                offset=base + key_at,
            )
        yield number, wire, pos, after
        pos = after


def signed64(value: int) -> int:
    """An int64/int32 varint's value (two's complement, low 64 bits)."""
    return value - (1 << 64) if value >= 1 << 63 else value


def signed32(value: int) -> int:
    """An int32 varint's value: the low 32 bits, sign-extended."""
    value &= 0xFFFF_FFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def double_at(buf: bytes | memoryview, pos: int) -> float:
    if pos + 8 > len(buf):
        raise FormatError("an 8-byte double runs past the end of its message", offset=pos)
    return float(_DOUBLE.unpack_from(buf, pos)[0])


def float_at(buf: bytes | memoryview, pos: int) -> float:
    if pos + 4 > len(buf):
        raise FormatError("a 4-byte float runs past the end of its message", offset=pos)
    return float(_FLOAT.unpack_from(buf, pos)[0])


def unpack_varints(data: bytes | memoryview, base: int = 0) -> NDArray[np.uint64]:
    """A packed run of varints, decoded at once (grid cells, point data).

    Whole-buffer numpy, no Python per varint: the bytes below 0x80 end the varints. Runs of
    varints of at most 3 bytes (grid cells) gather each varint's last byte and the two
    before it (`_short_varints`); longer ones are built from their last
    byte down (shift 7, add the byte before), one gather per byte position. Bits past 64 are
    dropped, as `read_varint` drops them."""
    raw = np.frombuffer(data, np.uint8)
    if not len(raw):
        return np.zeros(0, np.uint64)
    if raw[-1] >= 0x80:
        raise FormatError("a packed varint field ends inside a varint", offset=base + len(raw))
    cont = raw >= 0x80
    if not cont.any():
        return raw.astype(np.uint64)
    ends = np.flatnonzero(~cont)
    if len(raw) < 3 or not (cont[2:] & cont[1:-1] & cont[:-2]).any():
        return _short_varints(raw, ends)
    lengths = np.diff(ends, prepend=-1)
    longest = int(lengths.max())
    if longest > 10:
        at = int(ends[int(np.argmax(lengths))] - longest + 1)
        raise FormatError("a packed varint is longer than 10 bytes", offset=base + at)
    # uint32 holds the 28 bits of varints up to 4 bytes
    kind = np.uint32 if longest <= 4 else np.uint64
    value = raw[ends].astype(kind)
    seven, low = kind(7), np.uint8(0x7F)
    for k in range(1, longest):
        byte = raw[np.maximum(ends - k, 0)] & low
        value = np.where(lengths > k, value << seven | byte, value)
    decoded: NDArray[np.uint64] = value.astype(np.uint64)
    return decoded


def _short_varints(raw: NDArray[np.uint8], ends: NDArray[np.intp]) -> NDArray[np.uint64]:
    """Varints of at most 3 bytes ending at `ends`: for each, its last byte and the two
    before it (zeros before the start), three gathers through shifted views; their 7-bit
    groups packed together, then shifted down past the bytes that belong to the varint
    before (a byte before the last counts when it and those after it continue)."""
    padded = np.zeros(len(raw) + 2, np.uint8)
    padded[2:] = raw
    last = np.take(padded[2:], ends).astype(np.uint32)
    before = np.take(padded[1:], ends)
    first = np.take(padded, ends)
    seven, low = np.uint8(7), np.uint8(0x7F)
    second_counts = before >> seven
    first_counts = (first >> seven) & second_counts
    packed = (
        last << np.uint32(14) | (before & low).astype(np.uint32) << np.uint32(7) | (first & low)
    )
    drop = (np.uint8(2) - second_counts - first_counts) * seven
    decoded: NDArray[np.uint64] = (packed >> drop).astype(np.uint64)
    return decoded


def as_int32(values: NDArray[np.uint64]) -> NDArray[np.int32]:
    return values.astype(np.uint32).view(np.int32)


def as_sint32(values: NDArray[np.uint64]) -> NDArray[np.int32]:
    """Zigzag-decoded sint32 values."""
    low = values.astype(np.uint32)
    decoded: NDArray[np.int32] = (
        (low >> np.uint32(1)) ^ (np.uint32(0) - (low & np.uint32(1)))
    ).view(np.int32)
    return decoded


# -- writing ---------------------------------------------------------------------------------


def varint(value: int) -> bytes:
    """`value` as a varint (negative numbers as 10-byte two's complement, as int64)."""
    value &= _MASK64
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def key(number: int, wire: int) -> bytes:
    return varint(number << 3 | wire)


def field_varint(number: int, value: int) -> bytes:
    """A varint field, or nothing for 0 (proto3 omits defaults)."""
    return key(number, VARINT) + varint(value) if value else b""


def field_bytes(number: int, data: bytes, *, keep_empty: bool = False) -> bytes:
    """A length-delimited field (omitted when empty unless `keep_empty`: a present
    sub-message)."""
    if not data and not keep_empty:
        return b""
    return key(number, LEN) + varint(len(data)) + data


def field_double(number: int, value: float) -> bytes:
    return key(number, FIXED64) + _DOUBLE.pack(value) if value != 0.0 else b""


def field_float(number: int, value: float) -> bytes:
    return key(number, FIXED32) + _FLOAT.pack(value) if value != 0.0 else b""


def packed_varints(values: NDArray[np.integer] | list[int]) -> bytes:
    """Concatenated varints (the body of a packed repeated int field)."""
    array = np.asarray(values).astype(np.int64).astype(np.uint64)
    if not len(array):
        return b""
    if int(array.max()) < 0x80:
        return array.astype(np.uint8).tobytes()
    return b"".join(varint(int(v)) for v in array.tolist())


__all__ = [
    "FIXED32",
    "FIXED64",
    "LEN",
    "VARINT",
    "Field",
    "as_int32",
    "as_sint32",
    "double_at",
    "field_bytes",
    "field_double",
    "field_float",
    "field_varint",
    "float_at",
    "iter_fields",
    "key",
    "packed_varints",
    "read_varint",
    "signed32",
    "signed64",
    "unpack_varints",
    "varint",
]
