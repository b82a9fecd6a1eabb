"""The message index: typed numpy columns, and the `index.msgpack` wire form.

NanoVer keeps its index as one Python dataclass plus one dict per message (about 480 bytes of
heap each, seconds to open a million entries) and finds a time by a linear scan. nanorec holds
the same information as a handful of numpy columns (offset, length, timestamp, checksum,
flags, a small integer code for the message's set of top-level keys), so an index loads in
milliseconds from the columnar copy in `nanorec.msgpack`, time lookups are `searchsorted`,
and type filters are vectorised masks.

`index.msgpack` is still written for NanoVer's reader: one msgpack array of maps with exactly
the keys `offset`, `length`, `metadata`. `encode_entries` produces those bytes for a whole
chunk of rows with numpy (no per-message Python work), using one fixed-width integer encoding
per column and chunk; any msgpack decoder reads non-minimal integer encodings. `parse_entries`
turns a NanoVer `index.msgpack` (which has no columnar copy) back into columns.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Final, overload

import msgpack
import numpy as np
from numpy.typing import NDArray

from nanorec.errors import ArchiveError, FormatError, IndexMismatchError, OutOfRangeError
from nanorec.wire import read_array_header

#: Index-entry keys NanoVer's `RecordingIndexEntry(**entry)` accepts; nothing else may appear.
ENTRY_KEYS: Final = ("offset", "length", "metadata")
#: Metadata keys nanorec writes itself (caller metadata may not reuse them).
META_TYPES: Final = "types"
META_TIMESTAMP: Final = "timestamp"
META_CRC: Final = "crc"
#: Flags live under a one-letter key: index bytes are paid per message.
META_FLAGS: Final = "f"
RESERVED_METADATA: Final = frozenset({META_TYPES, META_TIMESTAMP, META_CRC, META_FLAGS})

TypesTable = tuple[tuple[str, ...], ...]

_INT64_MAX: Final = 2**63 - 1
_UINT64_MAX: Final = 2**64 - 1


def types_code_dtype(table_size: int) -> np.dtype[Any]:
    """The narrowest unsigned dtype able to number `table_size` distinct type sets."""
    if table_size <= 0x100:
        return np.dtype("<u1")
    if table_size <= 0x10000:
        return np.dtype("<u2")
    return np.dtype("<u4")


class TypesRegistry:
    """Numbers the distinct sets of top-level keys ("types") in the order they first appear."""

    def __init__(self, table: Iterable[tuple[str, ...]] = ()) -> None:
        self.table: list[tuple[str, ...]] = []
        self._codes: dict[tuple[str, ...], int] = {}
        for types in table:
            self.code(types)

    def code(self, types: tuple[str, ...]) -> int:
        """The code of `types`, registering it when new."""
        code = self._codes.get(types)
        if code is None:
            code = self._codes[types] = len(self.table)
            self.table.append(types)
        return code

    def packed(self) -> list[bytes]:
        """Each type set as a packed msgpack array of str, by code."""
        return [msgpack.packb(list(types)) for types in self.table]


@dataclass(frozen=True)
class IndexRow:
    """One message's index entry, as Python values."""

    number: int
    offset: int
    length: int
    timestamp_us: int
    crc: int | None
    flags: int
    types: tuple[str, ...]


def _readonly(array: NDArray[Any]) -> NDArray[Any]:
    array.flags.writeable = False
    return array


class Index:
    """The index of an archive's messages as typed numpy columns.

    Columns (all of length `len(index)`, read-only):

    - `offset` (int64): byte offset of the message inside the `messages.msgpack` data;
    - `length` (int64): byte length of the packed message;
    - `timestamp_us` (int64): time in integer microseconds;
    - `crc` (uint32) and `crc_known` (bool): CRC-32 of the stored message bytes, when recorded;
    - `flags` (uint64): the producer's per-message bit set (0 when not recorded);
    - `types_code` (small unsigned int): row of `types_table`, the message's top-level keys.
    """

    def __init__(
        self,
        *,
        offset: NDArray[Any],
        length: NDArray[Any],
        timestamp_us: NDArray[Any],
        crc: NDArray[Any],
        crc_known: NDArray[Any],
        flags: NDArray[Any],
        types_code: NDArray[Any],
        types_table: TypesTable,
    ) -> None:
        count = len(offset)
        columns = (length, timestamp_us, crc, crc_known, flags, types_code)
        if any(len(column) != count for column in columns):
            raise IndexMismatchError(
                "index columns have different lengths",
                expected=count,
                actual=[len(column) for column in columns],
            )
        if count and types_code.size and int(types_code.max()) >= len(types_table):
            raise IndexMismatchError(
                "a types code points past the types table",
                expected=f"< {len(types_table)}",
                actual=int(types_code.max()),
            )
        self.offset: NDArray[np.int64] = _readonly(np.asarray(offset, dtype=np.int64))
        self.length: NDArray[np.int64] = _readonly(np.asarray(length, dtype=np.int64))
        self.timestamp_us: NDArray[np.int64] = _readonly(np.asarray(timestamp_us, dtype=np.int64))
        self.crc: NDArray[np.uint32] = _readonly(np.asarray(crc, dtype=np.uint32))
        self.crc_known: NDArray[np.bool_] = _readonly(np.asarray(crc_known, dtype=np.bool_))
        self.flags: NDArray[np.uint64] = _readonly(np.asarray(flags, dtype=np.uint64))
        self.types_code: NDArray[np.unsignedinteger[Any]] = _readonly(np.asarray(types_code))
        self.types_table: TypesTable = tuple(tuple(types) for types in types_table)

    @classmethod
    def empty(cls) -> Index:
        """An index of no messages."""
        zero = np.zeros(0, dtype=np.int64)
        return cls(
            offset=zero,
            length=zero,
            timestamp_us=zero,
            crc=np.zeros(0, np.uint32),
            crc_known=np.zeros(0, np.bool_),
            flags=np.zeros(0, np.uint64),
            types_code=np.zeros(0, np.uint8),
            types_table=(),
        )

    def __len__(self) -> int:
        return len(self.offset)

    @overload
    def __getitem__(self, key: int) -> IndexRow: ...
    @overload
    def __getitem__(self, key: slice) -> Index: ...
    def __getitem__(self, key: int | slice) -> IndexRow | Index:
        """Row `key` (negative counts from the end) or a sliced `Index` (views, no copy).

        Raises `IndexError` when an integer key is out of range.
        """
        if isinstance(key, slice):
            return Index(
                offset=self.offset[key],
                length=self.length[key],
                timestamp_us=self.timestamp_us[key],
                crc=self.crc[key],
                crc_known=self.crc_known[key],
                flags=self.flags[key],
                types_code=self.types_code[key],
                types_table=self.types_table,
            )
        number = self.normalize(key)
        return IndexRow(
            number=number,
            offset=int(self.offset[number]),
            length=int(self.length[number]),
            timestamp_us=int(self.timestamp_us[number]),
            crc=int(self.crc[number]) if self.crc_known[number] else None,
            flags=int(self.flags[number]),
            types=self.types_table[int(self.types_code[number])],
        )

    def normalize(self, number: int) -> int:
        """`number` as a non-negative message number. Raises `IndexError` when out of range."""
        count = len(self.offset)
        if number < 0:
            number += count
        if not 0 <= number < count:
            raise OutOfRangeError(f"message {number} out of range (archive holds {count})")
        return number

    def types(self, number: int) -> tuple[str, ...]:
        """The top-level keys of message `number` (without `"nanorec.t"`)."""
        return self.types_table[int(self.types_code[self.normalize(number)])]

    def has_type(self, name: str) -> NDArray[np.bool_]:
        """Mask of the messages whose top-level keys include `name`."""
        return self.type_mask((name,))

    def type_mask(self, names: str | Iterable[str]) -> NDArray[np.bool_]:
        """Mask of the messages carrying at least one of `names` as a top-level key."""
        wanted = {names} if isinstance(names, str) else set(names)
        table = np.fromiter(
            (not wanted.isdisjoint(types) for types in self.types_table),
            dtype=np.bool_,
            count=len(self.types_table),
        )
        if not len(self.types_table):
            return np.zeros(len(self), dtype=np.bool_)
        result: NDArray[np.bool_] = table[self.types_code]
        return result

    @cached_property
    def is_sorted(self) -> bool:
        """Whether timestamps never decrease (always true for archives nanorec writes)."""
        return bool(np.all(self.timestamp_us[1:] >= self.timestamp_us[:-1]))

    @cached_property
    def is_contiguous(self) -> bool:
        """Whether messages follow each other from offset 0 with no gap or overlap."""
        if not len(self):
            return True
        return bool(
            self.offset[0] == 0 and np.all(self.offset[1:] == self.offset[:-1] + self.length[:-1])
        )

    @cached_property
    def _time_order(self) -> NDArray[np.intp]:
        # Only for unsorted (NanoVer-written) indexes: stable, so equal times keep file order.
        return np.argsort(self.timestamp_us, kind="stable")

    def position_at_time(self, t_us: int) -> int | None:
        """The last message whose timestamp is <= `t_us` (microseconds), or None if none is.

        "Last" is in file order; on an index whose timestamps are not sorted it is the
        message with the greatest timestamp <= `t_us` (the latest in file order among ties).
        """
        if self.is_sorted:
            position = int(np.searchsorted(self.timestamp_us, t_us, side="right")) - 1
            return position if position >= 0 else None
        order = self._time_order
        k = int(np.searchsorted(self.timestamp_us[order], t_us, side="right")) - 1
        return int(order[k]) if k >= 0 else None

    def select(
        self,
        start_us: int | None = None,
        stop_us: int | None = None,
        *,
        types: str | Iterable[str] | None = None,
    ) -> NDArray[np.int64]:
        """Message numbers, in file order, with `start_us <= timestamp < stop_us`.

        Either bound may be None (unbounded). `types` keeps only messages carrying at least
        one of those top-level keys.
        """
        count = len(self)
        if self.is_sorted:
            lo = 0 if start_us is None else int(np.searchsorted(self.timestamp_us, start_us))
            hi = count if stop_us is None else int(np.searchsorted(self.timestamp_us, stop_us))
            numbers = np.arange(lo, max(lo, hi), dtype=np.int64)
            if types is not None:
                numbers = numbers[self.type_mask(types)[lo : max(lo, hi)]]
            return numbers
        mask = np.ones(count, dtype=np.bool_)
        if start_us is not None:
            mask &= self.timestamp_us >= start_us
        if stop_us is not None:
            mask &= self.timestamp_us < stop_us
        if types is not None:
            mask &= self.type_mask(types)
        return np.flatnonzero(mask).astype(np.int64)

    def check_bounds(self, data_size: int) -> None:
        """Raise `IndexMismatchError` naming the first entry that leaves `[0, data_size)`."""
        end = self.offset + self.length
        bad = (self.offset < 0) | (self.length < 0) | (end > data_size)
        if bool(bad.any()):
            first = int(np.argmax(bad))
            raise IndexMismatchError(
                f"index entry {first} (offset {int(self.offset[first])}, length "
                f"{int(self.length[first])}) points outside the {data_size}-byte messages member",
                expected=f"<= {data_size}",
                actual=int(end[first]),
            )


# ---------------------------------------------------------------------------------------------
# index.msgpack, encoding (vectorised)


#: msgpack integer encodings by class: (prefix byte or None for a positive fixint, payload
#: width, signed). Each value gets the shortest class that holds it (negative values: int64).
_INT_CLASSES: Final = (
    (None, 1, False),  # positive fixint 0..127, the value is the byte
    (0xCC, 1, False),
    (0xCD, 2, False),
    (0xCE, 4, False),
    (0xCF, 8, False),
    (0xD3, 8, True),
)
_ABSENT: Final = len(_INT_CLASSES)  # flags == 0: the key is left out


def _int_classes(values: NDArray[Any]) -> NDArray[np.int64]:
    """The shortest encoding class of each value (see `_INT_CLASSES`)."""
    if values.dtype.kind == "u":
        unsigned = values
        negative = np.zeros(len(values), dtype=np.bool_)
    else:
        negative = values < 0
        unsigned = np.where(negative, 0, values).astype(np.uint64)
    classes = np.searchsorted(
        np.array([0x7F, 0xFF, 0xFFFF, 0xFFFF_FFFF], dtype=np.uint64), unsigned, side="left"
    ).astype(np.int64)
    classes[negative] = 5
    return classes


def _encoded_ints(values: NDArray[Any], cls: int) -> NDArray[np.uint8]:
    """An (n, size) matrix: the msgpack encoding of each value, all of class `cls`."""
    prefix, width, signed = _INT_CLASSES[cls]
    kind = "i" if signed else "u"
    payload = values.astype(f">{kind}{width}").view(np.uint8).reshape(len(values), width)
    if prefix is None:
        return payload
    out = np.empty((len(values), 1 + width), dtype=np.uint8)
    out[:, 0] = prefix
    out[:, 1:] = payload
    return out


def _class_size(cls: int) -> int:
    prefix, width, _ = _INT_CLASSES[cls]
    return width + (prefix is not None)


def _constant(data: bytes, rows: int) -> NDArray[np.uint8]:
    return np.broadcast_to(np.frombuffer(data, dtype=np.uint8), (rows, len(data)))


def _scatter_fixed(out: NDArray[np.uint8], pos: NDArray[np.int64], rows: NDArray[Any]) -> None:
    """Write the rows of an (n, w) matrix at `out[pos[i]:pos[i] + w]`."""
    width = rows.shape[-1]
    out[pos[:, None] + np.arange(width)] = rows


def _scatter_var(
    out: NDArray[np.uint8],
    pos: NDArray[np.int64],
    source: NDArray[np.uint8],
    src_start: NDArray[np.int64],
    lengths: NDArray[np.int64],
) -> None:
    """Copy `source[src_start[i]:src_start[i] + lengths[i]]` to `out[pos[i]:]`, every row."""
    total = int(lengths.sum())
    if not total:
        return
    run_start = np.cumsum(lengths) - lengths
    k = np.arange(total, dtype=np.int64) - np.repeat(run_start, lengths)
    out[np.repeat(pos, lengths) + k] = source[np.repeat(src_start, lengths) + k]


_K_ENTRY: Final = b"\x83" + msgpack.packb("offset")
_K_LENGTH: Final = msgpack.packb("length")
_K_METADATA: Final = msgpack.packb("metadata")
_K_TYPES: Final = msgpack.packb(META_TYPES)
_K_TIMESTAMP: Final = msgpack.packb(META_TIMESTAMP)
_K_CRC: Final = msgpack.packb(META_CRC)
_K_FLAGS: Final = msgpack.packb(META_FLAGS)


def encode_entries(
    *,
    offset: NDArray[Any],
    length: NDArray[Any],
    timestamp_us: NDArray[Any],
    crc: NDArray[Any],
    flags: NDArray[Any],
    types_code: NDArray[Any],
    types_packed: Sequence[bytes],
    extra_count: NDArray[Any] | None = None,
    extra_length: NDArray[Any] | None = None,
    extra_data: bytes = b"",
) -> bytes:
    """The packed index entries (without the enclosing array header) for a chunk of rows.

    Each entry is `{"offset", "length", "metadata": {"types", "timestamp", "crc", ["f"],
    *extra}}`, integers in their shortest msgpack encoding (negative ones as int64, CRCs
    always as uint32);
    `f` (flags) appears only when non-zero. `types_packed[c]` is the packed type list of code
    `c`. Caller metadata comes as `extra_data`, the concatenation of each row's packed
    key/value pairs (`extra_length[i]` bytes holding `extra_count[i]` pairs).

    Rows sharing a layout (types, integer classes, metadata count) are built together as one
    (rows, width) matrix by column assignment; a chunk where every row has the same layout is
    that matrix's bytes, with no scatter.
    """
    n = len(offset)
    if not n:
        return b""
    if extra_count is None or extra_length is None:
        extra_count = np.zeros(n, dtype=np.int64)
        extra_length = np.zeros(n, dtype=np.int64)
    extra_count = extra_count.astype(np.int64)
    extra_length = extra_length.astype(np.int64)
    offset = offset.astype(np.int64)
    length = length.astype(np.int64)
    timestamp_us = timestamp_us.astype(np.int64)
    crc = crc.astype(np.uint32)
    flags = flags.astype(np.uint64)
    codes = types_code.astype(np.int64)
    has_flags = flags != 0

    meta_count = 3 + has_flags.astype(np.int64) + extra_count
    if meta_count.max() > 0xFFFF:
        raise FormatError("index metadata holds more than 65535 keys")
    o_cls = _int_classes(offset)
    l_cls = _int_classes(length)
    t_cls = _int_classes(timestamp_us)
    # CRCs are uniformly random, so a fixed uint32 costs nothing on average and keeps chunks
    # uniform (one small CRC would otherwise split a chunk into layouts).
    c_cls = np.full(n, 3, dtype=np.int64)
    f_cls = np.where(has_flags, _int_classes(flags), _ABSENT)
    # One int64 per row naming its layout: 3 bits per class, 16 for the metadata count.
    layout = codes
    for classes in (o_cls, l_cls, t_cls, c_cls, f_cls):
        layout = layout * 8 + classes
    layout = layout * 0x10000 + meta_count
    if int(layout.min()) == int(layout.max()):
        keys, inverse = layout[:1], np.zeros(n, dtype=np.intp)
    else:
        keys, inverse = np.unique(layout, return_inverse=True)
    uniform = len(keys) == 1 and not len(extra_data)

    sizes = np.array([_class_size(c) for c in range(len(_INT_CLASSES))] + [0], dtype=np.int64)
    table_len = np.array([len(t) for t in types_packed], dtype=np.int64)
    flag_len = np.where(has_flags, len(_K_FLAGS) + sizes[f_cls], 0)
    base_len = (
        len(_K_ENTRY)
        + sizes[o_cls]
        + len(_K_LENGTH)
        + sizes[l_cls]
        + len(_K_METADATA)
        + np.where(meta_count > 15, 3, 1)
        + len(_K_TYPES)
        + table_len[codes]
        + len(_K_TIMESTAMP)
        + sizes[t_cls]
        + len(_K_CRC)
        + sizes[c_cls]
        + flag_len
    )
    row_len = base_len + extra_length
    start = np.cumsum(row_len) - row_len
    out = np.empty(int(row_len.sum()), dtype=np.uint8)
    for group, key in enumerate(keys.tolist()):
        rows = np.arange(n) if uniform else np.flatnonzero(inverse == group)
        k = len(rows)
        count = key % 0x10000
        key //= 0x10000
        fc, key = key % 8, key // 8
        cc, key = key % 8, key // 8
        tc, key = key % 8, key // 8
        lc, key = key % 8, key // 8
        oc, code = key % 8, key // 8
        header = bytes((0x80 | count,)) if count <= 15 else b"\xde" + count.to_bytes(2, "big")
        pieces = [
            _constant(_K_ENTRY, k),
            _encoded_ints(offset[rows], oc),
            _constant(_K_LENGTH, k),
            _encoded_ints(length[rows], lc),
            _constant(_K_METADATA + header + _K_TYPES + types_packed[code] + _K_TIMESTAMP, k),
            _encoded_ints(timestamp_us[rows], tc),
            _constant(_K_CRC, k),
            _encoded_ints(crc[rows], cc),
        ]
        if fc != _ABSENT:
            pieces.append(_constant(_K_FLAGS, k))
            pieces.append(_encoded_ints(flags[rows], fc))
        matrix = np.hstack(pieces)
        if uniform:
            return matrix.tobytes()
        _scatter_fixed(out, start[rows], matrix)
    if len(extra_data):
        source = np.frombuffer(extra_data, dtype=np.uint8)
        _scatter_var(
            out, start + base_len, source, np.cumsum(extra_length) - extra_length, extra_length
        )
    return out.tobytes()


# ---------------------------------------------------------------------------------------------
# index.msgpack, parsing (NanoVer files and the fallback path)


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


__all__ = [
    "ENTRY_KEYS",
    "Index",
    "IndexRow",
    "ParsedIndex",
    "TypesRegistry",
    "encode_entries",
    "entry_positions",
    "parse_entries",
]
