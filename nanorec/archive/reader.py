"""`ArchiveReader`: random access to the messages of a nanorec or NanoVer archive.

NanoVer reads a message by seeking a `ZipExtFile`, which costs O(offset) per seek before
Python 3.12 (and for backward seeks after), and holds its index as Python objects. This reader
parses the zip's end records and central directory itself, computes the absolute start of the
`messages.msgpack` data from its local header, and reads each message as one slice of an
`mmap` of the file: O(1) on every Python version, and thread-safe. The index is loaded from the
columnar copy in `nanorec.msgpack` when that member exists and still matches `index.msgpack`
(milliseconds for a million messages), otherwise `index.msgpack` is parsed into the same
columns (NanoVer files, or archives whose index another tool rewrote).

A compact archive's `messages.msgpack` is deflated in independent blocks listed in
`nanorec.msgpack`: a read inflates the start of one block (`nanorec.archive.blocks`). Lenient on
input: deflated members are inflated with `zlib` straight from the mapping (documented slow
path: a deflated `messages.msgpack` without a block table is inflated once, on first read,
into an anonymous temporary file that is then mapped, so memory stays bounded), extra members are
allowed, float timestamps are rounded to integer microseconds, a missing `types` is worked out
from the message. Every problem with the file's content raises a `NanorecError` subclass
naming the entry and byte offset; `OSError` passes through.

Opening (members, description, block table, index) and the raw reads are `ArchiveFile`'s
(`nanorec.archive.archive_file`), which `ArchiveReader` extends with the messages by number.
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from types import TracebackType
from typing import Any, overload

import msgpack
import numpy as np
from numpy.typing import NDArray

from nanorec.archive.archive_file import MSGPACK_ERRORS, ArchiveFile
from nanorec.archive.crc import crc32, joined_crc
from nanorec.archive.index import Index
from nanorec.archive.index_parse import entry_positions
from nanorec.archive.pageread import PAGE_CACHE
from nanorec.archive.wire import INDEX_MEMBER
from nanorec.errors import ArchiveError, ChecksumError, IndexMismatchError, OutOfRangeError


class ArchiveReader(ArchiveFile):
    """Read the messages of the archive at `path` (nanorec or NanoVer layout).

    A sequence of messages: `len(reader)`, `reader[i]` (negative counts from the end) gives
    the message map with the `"nanorec.t"` entry removed, `reader[a:b]` a list, iteration
    yields messages in order. `reader.index` holds the columns (offsets, lengths, timestamps
    in microseconds, CRCs, flags, types). Use as a context manager or call `close()`.

    `use_description=False` ignores the columnar copy in `nanorec.msgpack` and parses
    `index.msgpack` (what happens anyway for NanoVer files). `paged_index=True` reads a local
    paged archive's index a page at a time as asked, as by URL (`raw_run` walks the pages: an
    export of millions of messages holds a few pages, not the whole index).

    Raises at open: `TruncatedError` (cut file), `ArchiveError` (damaged zip, missing
    `messages.msgpack`/`index.msgpack`, bad index) and its subclasses, `UnsupportedError`;
    `OSError` for the file itself.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        use_description: bool = True,
        temporary_dir: Path | None = None,
        verify: bool = True,
        paged_index: bool = False,
    ) -> None:
        #: Whether each read checks the message's CRC-32 (`ChecksumError` on a mismatch).
        self.verify = verify
        super().__init__(
            path,
            use_description=use_description,
            temporary_dir=temporary_dir,
            paged_index=paged_index,
        )

    # -- context manager -------------------------------------------------------------------

    def __enter__(self) -> ArchiveReader:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        count = getattr(self, "_count", "?")
        return f"<ArchiveReader {str(self.path)!r} with {count} messages>"

    # -- messages --------------------------------------------------------------------------

    def __len__(self) -> int:
        return self._count

    @overload
    def __getitem__(self, key: int) -> dict[str, Any]: ...
    @overload
    def __getitem__(self, key: slice) -> list[dict[str, Any]]: ...
    def __getitem__(self, key: int | slice) -> dict[str, Any] | list[dict[str, Any]]:
        """Message `key` (a map, `"nanorec.t"` removed), or a list for a slice.

        Does not check the CRC (see `read`). Raises `IndexError` out of range, `ArchiveError`
        when the stored bytes are not one msgpack map.
        """
        if isinstance(key, slice):
            return [self.read(number) for number in range(*key.indices(self._count))]
        return self.read(key)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for number in range(self._count):
            yield self.read(number)

    def read(self, number: int, *, verify: bool | None = None) -> dict[str, Any]:
        """Message `number` as a map, `"nanorec.t"` removed.

        The stored bytes are first checked against the CRC-32 recorded in the index
        (`ChecksumError` naming the message on a mismatch; no check when the index has none,
        as in NanoVer files), unless `verify=False` here or for the whole reader
        (`ArchiveReader(path, verify=False)`, for speed). Raises `IndexError`, `ArchiveError`
        as `reader[number]`.
        """
        count = self._count
        if number < 0:
            number += count
        if not 0 <= number < count:
            raise OutOfRangeError(f"message {number} out of range (archive holds {count})")
        if self._index is None and self._lazy is not None:  # by URL: through its page
            data, offset, crc = self._lazy.entry(number)
            if self.verify if verify is None else verify:
                self._check_crc(number, data, crc, offset)
            return self._decode(number, data, self._messages_start + offset)
        offset = self._offsets.item(number)
        data = self._read(offset, self._lengths.item(number))
        if self.verify if verify is None else verify:
            self._verify(number, data)
        return self._decode(number, data, self._messages_start + offset)

    def raw(self, number: int, *, verify: bool | None = None) -> bytes:
        """The stored bytes of message `number` (still holding the `"nanorec.t"` entry).

        Raises `IndexError` out of range; `ChecksumError` on a mismatch (checked as `read`).
        """
        number = self._number(number)
        if self._index is None and self._lazy is not None:
            data, offset, crc = self._lazy.entry(number)
            if self.verify if verify is None else verify:
                self._check_crc(number, data, crc, offset)
            return data
        data = self._read(self._offsets.item(number), self._lengths.item(number))
        if self.verify if verify is None else verify:
            self._verify(number, data)
        return data

    def raw_run(
        self, first: int, stop: int, *, verify: bool | None = None
    ) -> tuple[bytes, NDArray[np.int64]]:
        """The stored bytes of messages `first` to `stop - 1` read at once, and where each
        starts in them (its length is the index's): a pass over millions of small messages
        (an export) pays one read, not one per message. Messages laid back to back, as
        nanorec writes them, are one slice, checked by one CRC pass against the index's
        CRCs joined (`nanorec.archive.crc.joined_crc`); otherwise each is read (and checked) as by
        `raw`. A lazy paged archive is read a page at a time (its index is not loaded
        whole). Raises `IndexError` for a bad range, `ChecksumError` naming the
        message."""
        count = self._count
        if not 0 <= first <= stop <= count:
            raise OutOfRangeError(f"messages {first}:{stop} out of range (archive holds {count})")
        if self._index is None and self._lazy is not None and first < stop:
            return self._paged_run(first, stop, self.verify if verify is None else verify)
        self.index  # noqa: B018 - a run needs the whole index (a lazy archive loads its pages)
        offsets = self._offsets[first:stop]
        lengths = self._lengths[first:stop]
        if first == stop:
            return b"", np.zeros(0, np.int64)
        base = offsets.item(0)
        total = int(lengths.sum())
        starts = np.asarray(offsets - base, np.int64)
        if starts[-1] + lengths[-1] != total or np.any(starts[1:] != (starts + lengths)[:-1]):
            pieces = [self.raw(number, verify=verify) for number in range(first, stop)]
            return b"".join(pieces), np.cumsum(lengths) - lengths
        data = self._read(base, total)
        if (self.verify if verify is None else verify) and not self._run_crc_ok(first, stop, data):
            for number, at in enumerate(starts.tolist(), start=first):
                self._verify(number, data[at : at + self._lengths.item(number)])
        return data, starts

    def _paged_run(self, first: int, stop: int, verify: bool) -> tuple[bytes, NDArray[np.int64]]:
        """`raw_run` through the pages of a lazy archive: each page's part of the run is one
        slice (a page's messages lie back to back, `PageTable.parse`; a compact archive's are
        inflated from the page's blocks at once), checked by one CRC."""
        assert self._lazy is not None
        parts: list[bytes] = []
        starts: list[NDArray[np.int64]] = []
        at = 0
        number = first
        while number < stop:
            loaded, row = self._lazy.of(number)
            index = loaded.index
            end = min(stop, loaded.first + len(index))
            rows = slice(row, row + end - number)
            lengths = index.length[rows]
            offset = index.offset.item(row)
            total = int(lengths.sum())
            if loaded.blocks is None:
                data = self._read(offset, total)
            else:  # what it inflated is not kept: 64 cached pages would hold ~2 MB each
                data = loaded.blocks.read(offset, total)
                loaded.blocks.forget()
            begins = np.cumsum(lengths) - lengths
            if verify and crc32(data) != joined_crc(index.crc[rows], lengths):
                for k, begin in enumerate(begins.tolist()):
                    self._check_crc(
                        number + k,
                        data[begin : begin + lengths.item(k)],
                        index.crc.item(row + k),
                        offset + begin,
                    )
            parts.append(data)
            starts.append(begins + at)
            at += len(data)
            number = end
        joined = parts[0] if len(parts) == 1 else b"".join(parts)
        return joined, np.concatenate(starts)

    def _run_crc_ok(self, first: int, stop: int, data: bytes) -> bool:
        """Whether `data`, messages `first`..`stop - 1` back to back, has the CRC their index
        entries add up to (False also when some have none: then checked one by one)."""
        if not self.index.crc_known[first:stop].all():
            return False
        expected = joined_crc(self.index.crc[first:stop], self._lengths[first:stop])
        return crc32(data) == expected

    def metadata(self, number: int) -> dict[str, Any]:
        """The `metadata` map of index entry `number`, decoded from `index.msgpack`.

        Decoded on demand: the first call locates every entry (one skip pass over the index
        member). Raises `IndexError`, `ArchiveError` for a damaged index.
        """
        number = self.index.normalize(number)
        positions = self._entry_positions()
        member = self._members[INDEX_MEMBER]
        start = int(positions[number])
        stop = (
            int(positions[number + 1])
            if number + 1 < len(positions)
            else member.header.uncompressed_size
        )
        if self._index_data is not None:
            data = self._index_data[start:stop]
        else:
            base = member.data_start
            data = self._map()[base + start : base + stop]
        try:
            entry = msgpack.unpackb(data)
            metadata = entry["metadata"] if type(entry) is dict else None
        except (*MSGPACK_ERRORS, KeyError) as error:
            raise ArchiveError(
                f"index entry {number} cannot be decoded ({error})", offset=start
            ) from None
        if type(metadata) is not dict:
            raise ArchiveError(f"index entry {number} has no metadata map", offset=start)
        return metadata

    def _entry_positions(self) -> NDArray[np.int64]:
        with self._lock:
            if self._positions is None:
                data = self._index_data
                if data is None:
                    data = self.member(INDEX_MEMBER)
                    if not self._members[INDEX_MEMBER].stored:
                        self._index_data = data  # metadata() slices the inflated bytes
                positions = entry_positions(data)
                if len(positions) != self._count:
                    raise IndexMismatchError(
                        f"index.msgpack holds {len(positions)} entries for {self._count} messages",
                        expected=self._count,
                        actual=len(positions),
                    )
                self._positions = positions
            return self._positions

    def index_at_time(self, t_us: int) -> int | None:
        """Number of the last message with timestamp <= `t_us` (microseconds), or None.
        A paged archive by URL whose times never decrease reads one page, found by the page
        table's least times."""
        if self._index is None and self._lazy is not None and self._lazy.table.sorted:
            return self._lazy.position_at_time(t_us)
        return self.index.position_at_time(t_us)

    def timestamp_us(self, number: int) -> int:
        """Message `number`'s time in microseconds (negative counts from the end); a lazy
        archive reads only its page. Raises `OutOfRangeError`."""
        number = self._number(number)
        if self._index is None and self._lazy is not None:
            table = self._lazy.table
            if number == self._count - 1 and table.sorted:  # the greatest: in the page table
                return int(table.max_us[-1])
            loaded, row = self._lazy.of(number)
            return int(loaded.index.timestamp_us[row])
        return int(self.index.timestamp_us[number])

    def message_types(self, number: int) -> tuple[str, ...]:
        """Message `number`'s top-level keys (as `index.types`), reading only its page when
        lazy. Raises `OutOfRangeError`."""
        number = self._number(number)
        if self._index is None and self._lazy is not None:
            loaded, row = self._lazy.of(number)
            return loaded.index.types(row)
        return self.index.types(number)

    def time_span_us(self) -> tuple[int, int] | None:
        """The first message's time and the greatest time (microseconds), None when empty:
        from the page table alone for a lazy archive whose times never decrease."""
        if not self._count:
            return None
        table = self.pages
        if self._index is None and table is not None and table.sorted:
            return int(table.min_us[0]), int(table.max_us[-1])
        stamps = self.index.timestamp_us
        return int(stamps[0]), int(stamps.max())

    @property
    def selects_by_page(self) -> bool:
        """Whether `paged_numbers` may answer: a paged archive (by URL) whose index is not
        loaded and whose times never decrease."""
        lazy = self._lazy
        return self._index is None and lazy is not None and lazy.table.sorted

    def paged_numbers(
        self, start_us: int | None, end_us: int | None, types: Iterable[str] | None = None
    ) -> NDArray[np.int64] | None:
        """The numbers, in file order, of the messages with `start_us <= t <= end_us` (None:
        unbounded) carrying one of `types` (None: any), read page by page: a paged archive by
        URL whose times never decrease fetches only the pages its page table says may hold
        one (each page's times and types). None when that does not apply (a local archive,
        an older or unsorted one, a window over more pages than the page LRU holds): then
        the whole `index` answers."""
        lazy = self._lazy
        if lazy is None or not self.selects_by_page:
            return None
        codes = None
        if types is not None:
            wanted = set(types)
            table = lazy.table.types_table
            codes = np.fromiter(
                (not wanted.isdisjoint(row) for row in table), np.bool_, count=len(table)
            )
        pages = lazy.table.pages_between(start_us, end_us, codes)
        if len(pages) > PAGE_CACHE:
            return None
        return lazy.select(pages, start_us, end_us, codes)

    def index_run(self, first: int, stop: int) -> Index:
        """The index rows of messages `first` to `stop - 1` (`index[first:stop]`): a paged
        archive by URL reads only their pages (unless they are more than its page LRU holds).
        Raises `OutOfRangeError` for a bad range."""
        if not 0 <= first <= stop <= self._count:
            raise OutOfRangeError(f"messages {first}:{stop} out of range ({self._count})")
        lazy = self._lazy
        if self._index is None and lazy is not None and first < stop:
            per = lazy.table.page_messages
            if (stop - 1) // per - first // per < PAGE_CACHE:
                return lazy.rows(first, stop)
        return self.index[first:stop]

    def types_counts(self) -> list[tuple[tuple[str, ...], int]]:
        """How many messages carry each set of top-level keys (each row of the types table):
        from the page table alone for a lazy archive."""
        if self._index is None and self.pages is not None:
            return list(zip(self.pages.types_table, self.pages.types_counts, strict=True))
        index = self.index
        counts = np.bincount(index.types_code, minlength=len(index.types_table))
        return [(types, int(counts[code])) for code, types in enumerate(index.types_table)]

    def iter_messages(
        self,
        start_us: int | None = None,
        stop_us: int | None = None,
        *,
        types: str | Iterable[str] | None = None,
    ) -> Iterator[tuple[int, dict[str, Any]]]:
        """Yield `(timestamp_us, message)` for messages with `start_us <= t < stop_us`.

        Bounds are microseconds, None for unbounded; `types` keeps messages carrying at least
        one of those top-level keys (decided from the index, without decoding the others).
        Messages come in file order. Raises `ArchiveError` for a damaged message.
        """
        numbers = self.index.select(start_us, stop_us, types=types)
        stamps = self.index.timestamp_us
        for number in numbers.tolist():
            yield stamps.item(number), self.read(number)

    # -- internals -------------------------------------------------------------------------

    def _verify(self, number: int, data: bytes) -> None:
        if not self.index.crc_known[number]:
            return
        self._check_crc(number, data, self.index.crc.item(number), self._offsets.item(number))

    def _check_crc(self, number: int, data: bytes, expected: int, offset: int) -> None:
        actual = zlib.crc32(data)
        if actual != expected:
            raise ChecksumError(
                f"message {number} fails its CRC-32 check",
                offset=self._messages_start + offset,
                expected=expected,
                actual=actual,
            )


__all__ = ["ArchiveReader"]
