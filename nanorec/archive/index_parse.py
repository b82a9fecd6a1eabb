"""Parsing `index.msgpack`: a NanoVer index (which has no columnar copy) back into columns.

This module exists so that reading `index.msgpack`, needed for NanoVer files, for archives whose
columnar copy in `nanorec.msgpack` is missing or stale, for verification and for the on-demand
`metadata` of an entry, stays apart from the in-memory `Index` it builds (`nanorec.archive.index`)
and from the writer's encoder (`nanorec.archive.index_encode`). `parse_entries` turns the whole
member into an `Index`, checking each entry as NanoVer would; `entry_positions` only locates the
entries."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

import msgpack
import numpy as np
from numpy.typing import NDArray

from nanorec.archive.index import (
    ENTRY_KEYS,
    META_CRC,
    META_FLAGS,
    META_TIMESTAMP,
    META_TYPES,
    Index,
    TypesRegistry,
    types_code_dtype,
)
from nanorec.archive.wire import read_array_header
from nanorec.errors import ArchiveError, FormatError, IndexMismatchError

_INT64_MAX: Final = 2**63 - 1
_UINT64_MAX: Final = 2**64 - 1


@dataclass(frozen=True)
class ParsedIndex:
    """An `index.msgpack` turned into columns, plus where each entry starts in its bytes."""

    index: Index
    #: Byte position of each entry inside `index.msgpack` (for lazy metadata decoding).
    positions: NDArray[np.int64]
    #: Entries with no usable timestamp (None, missing or not a number): their time was
    #: carried forward from the previous entry.
    unknown_timestamps: int


def _as_timestamp(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and math.isfinite(value):
        return round(value)
    return None


def parse_entries(
    data: bytes | memoryview,
    *,
    types_of: Callable[[int, int], tuple[str, ...]],
) -> ParsedIndex:
    """Parse a whole `index.msgpack` into an `Index`.

    `types_of(offset, length)` is called for entries without a `types` list (NanoVer allows
    that) and must return the message's top-level keys. Float timestamps (written by some
    NanoVer tutorials) are rounded to integer microseconds; missing or None timestamps take
    the previous entry's time.

    Raises `ArchiveError` when the bytes are not an array of maps, `IndexMismatchError` when
    an entry lacks `offset`/`length`, has another top-level key (NanoVer would reject it), or
    holds a negative or non-integer value. Each error names the entry number.
    """
    try:
        count, header_len = read_array_header(data)
    except FormatError as error:
        raise ArchiveError(f"index.msgpack is not a msgpack array: {error.message}") from None
    # Every entry takes at least one byte: a larger count is garbage, caught before looping.
    if count > len(data) - header_len:
        raise ArchiveError(
            f"index.msgpack announces {count} entries in {len(data)} bytes",
            offset=0,
            expected=f"<= {len(data) - header_len}",
            actual=count,
        )
    unpacker = msgpack.Unpacker(max_buffer_size=max(len(data), 1))
    unpacker.feed(data[header_len:])
    offsets = np.empty(count, dtype=np.int64)
    lengths = np.empty(count, dtype=np.int64)
    stamps = np.empty(count, dtype=np.int64)
    crcs = np.zeros(count, dtype=np.uint32)
    crc_known = np.zeros(count, dtype=np.bool_)
    flag_values = np.zeros(count, dtype=np.uint64)
    codes = np.empty(count, dtype=np.uint32)
    positions = np.empty(count, dtype=np.int64)
    registry = TypesRegistry()
    unknown = 0
    previous_time = 0
    number = 0
    try:
        for number in range(count):
            positions[number] = header_len + unpacker.tell()
            entry = unpacker.unpack()
            if type(entry) is not dict:
                raise IndexMismatchError(
                    f"index entry {number} is a {type(entry).__name__}, not a map",
                    offset=int(positions[number]),
                )
            if not entry.keys() <= set(ENTRY_KEYS) or "offset" not in entry:
                raise IndexMismatchError(
                    f"index entry {number} has keys {sorted(map(str, entry))}; NanoVer "
                    f"requires offset and length and allows only {list(ENTRY_KEYS)}",
                    offset=int(positions[number]),
                )
            offset = entry["offset"]
            length = entry.get("length")
            if not (
                type(offset) is int
                and type(length) is int
                and 0 <= offset <= _INT64_MAX
                and 0 <= length <= _INT64_MAX
            ):
                raise IndexMismatchError(
                    f"index entry {number} has offset {offset!r} and length {length!r}; "
                    "both must be non-negative integers",
                    offset=int(positions[number]),
                )
            metadata = entry.get("metadata", {})
            if type(metadata) is not dict:
                raise IndexMismatchError(
                    f"index entry {number} metadata is a {type(metadata).__name__}, not a map",
                    offset=int(positions[number]),
                )
            stamp = _as_timestamp(metadata.get(META_TIMESTAMP))
            if stamp is None or not -_INT64_MAX <= stamp <= _INT64_MAX:
                unknown += 1
                stamp = previous_time
            previous_time = stamp
            types = metadata.get(META_TYPES)
            if type(types) is list and all(type(t) is str for t in types):
                key = tuple(types)
            else:
                key = types_of(offset, length)
            crc = metadata.get(META_CRC)
            if type(crc) is int and 0 <= crc <= 0xFFFF_FFFF:
                crcs[number] = crc
                crc_known[number] = True
            flag = metadata.get(META_FLAGS, 0)
            if type(flag) is int and 0 <= flag <= _UINT64_MAX:
                flag_values[number] = flag
            offsets[number] = offset
            lengths[number] = length
            stamps[number] = stamp
            codes[number] = registry.code(key)
    except msgpack.OutOfData:
        raise ArchiveError(
            f"index.msgpack ends inside entry {number} of {count}",
            offset=int(positions[number]),
        ) from None
    except (ValueError, TypeError, msgpack.UnpackException) as error:
        if isinstance(error, IndexMismatchError):
            raise
        raise ArchiveError(
            f"index entry {number} is not valid msgpack ({error})",
            offset=int(positions[number]),
        ) from None
    if header_len + unpacker.tell() != len(data):
        raise ArchiveError(
            f"index.msgpack has {len(data) - header_len - unpacker.tell()} bytes after its "
            f"{count} entries",
            offset=header_len + unpacker.tell(),
        )
    index = Index(
        offset=offsets,
        length=lengths,
        timestamp_us=stamps,
        crc=crcs,
        crc_known=crc_known,
        flags=flag_values,
        types_code=codes.astype(types_code_dtype(len(registry.table))),
        types_table=tuple(registry.table),
    )
    return ParsedIndex(index=index, positions=positions, unknown_timestamps=unknown)


def entry_positions(data: bytes | memoryview) -> NDArray[np.int64]:
    """Where each entry of an `index.msgpack` starts, by skipping (not decoding) entries.

    Raises `ArchiveError` when the bytes are not a complete msgpack array.
    """
    try:
        count, header_len = read_array_header(data)
    except FormatError as error:
        raise ArchiveError(f"index.msgpack is not a msgpack array: {error.message}") from None
    if count > len(data) - header_len:
        raise ArchiveError(f"index.msgpack announces {count} entries in {len(data)} bytes")
    unpacker = msgpack.Unpacker(max_buffer_size=max(len(data), 1))
    unpacker.feed(data[header_len:])
    positions = np.empty(count, dtype=np.int64)
    tell = unpacker.tell
    skip = unpacker.skip
    try:
        for number in range(count):
            positions[number] = tell()
            skip()
    except (ValueError, msgpack.UnpackException) as error:
        raise ArchiveError(f"index.msgpack is damaged near entry {number} ({error})") from None
    positions += header_len
    return positions


__all__ = ["ParsedIndex", "entry_positions", "parse_entries"]
