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
    """A packed run of varints, decoded at once (grid cells, point data)."""
    raw = np.frombuffer(data, np.uint8)
    if not len(raw):
        return np.zeros(0, np.uint64)
    ends = np.flatnonzero(raw < 0x80)
    if not len(ends) or ends[-1] != len(raw) - 1:
        raise FormatError("a packed varint field ends inside a varint", offset=base + len(raw))
    starts = np.empty_like(ends)
    starts[0] = 0
    starts[1:] = ends[:-1] + 1
    lengths = ends - starts + 1
    longest = int(lengths.max())
    if longest > 10:
        raise FormatError("a packed varint is longer than 10 bytes", offset=base)
    if longest == 1:
        return raw[ends].astype(np.uint64)
    if longest <= 3:
        return _short_varints(raw, ends)
    # Byte k of every varint at once (a shorter varint's read past its end is masked out);
    # uint32 holds the 28 bits of varints up to 4 bytes (grid cells: 3 at most).
    low = (raw & np.uint8(0x7F)).astype(np.uint32 if longest <= 4 else np.uint64)
    result = low[starts]
    last = len(raw) - 1
    for k in range(1, longest):
        group = low[np.minimum(starts + k, last)]
        group[lengths <= k] = 0
        result |= group << low.dtype.type(7 * k)
    decoded: NDArray[np.uint64] = result.astype(np.uint64)
    return decoded


def _short_varints(raw: NDArray[np.uint8], ends: NDArray[np.intp]) -> NDArray[np.uint64]:
    """Varints of at most 3 bytes (grid cells) without an index per byte: each byte's 7 bits
    shifted by its place (how many continuation bytes precede it), then the one or two bytes
    before each last byte added."""
    cont = (raw >> 7).astype(np.uint32)
    low = (raw & np.uint8(0x7F)).astype(np.uint32)
    after_one = np.zeros_like(cont)  # the byte before continues this varint
    after_one[1:] = cont[:-1]
    after_two = np.zeros_like(cont)  # ... and so does the one before it
    after_two[2:] = cont[:-2]
    after_two &= after_one
    shifted = low << (np.uint32(7) * (after_one + after_two))
    total = shifted.copy()
    total[1:] += after_one[1:] * shifted[:-1]
    total[2:] += after_two[2:] * shifted[:-2]
    decoded: NDArray[np.uint64] = total[ends].astype(np.uint64)
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
