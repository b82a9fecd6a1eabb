"""The message index: typed numpy columns and their queries.

NanoVer keeps its index as one Python dataclass plus one dict per message (about 480 bytes of
heap each, seconds to open a million entries) and finds a time by a linear scan. nanorec holds
the same information as a handful of numpy columns (offset, length, timestamp, checksum,
flags, a small integer code for the message's set of top-level keys), so an index loads in
milliseconds from the columnar copy in `nanorec.msgpack`, time lookups are `searchsorted`,
and type filters are vectorised masks.

`index.msgpack` is still written for NanoVer's reader (`nanorec.archive.index_encode`) and parsed
when there is no columnar copy (`nanorec.archive.index_parse`); this module keeps the keys of its
entries."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Final, overload

import msgpack
import numpy as np
from numpy.typing import NDArray

from nanorec.errors import IndexMismatchError, OutOfRangeError

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
    def stored(
        cls,
        *,
        offset: NDArray[Any],
        length: NDArray[Any],
        timestamp_us: NDArray[Any],
        crc: NDArray[Any],
        flags: NDArray[Any] | None,
        types_code: NDArray[Any],
        types_table: TypesTable,
    ) -> Index:
        """The index of an archive's stored columns: every CRC known, no flags (None) all zero.
        Those constant columns are broadcast views, no memory for millions of messages."""
        count = len(offset)
        return cls(
            offset=offset,
            length=length,
            timestamp_us=timestamp_us,
            crc=crc,
            crc_known=np.broadcast_to(np.True_, count),
            flags=np.broadcast_to(np.uint64(0), count) if flags is None else flags,
            types_code=types_code,
            types_table=types_table,
        )

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


__all__ = ["ENTRY_KEYS", "Index", "IndexRow", "TypesRegistry"]
