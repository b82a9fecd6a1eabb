"""`ArchiveFile`: an archive opened for reading, its members, index and message bytes.

This module exists so that opening an archive, which is most of what `ArchiveReader` does before its
first message, stays apart from the reader's per-message API (`nanorec.archive.reader`): mapping the
file, locating its zip members (`nanorec.archive.members`), reading the description in
`nanorec.msgpack` and its block table, loading the index from the columnar copy when it still
matches `index.msgpack` or else parsing `index.msgpack` (`nanorec.archive.index_parse`), and the raw
reads and msgpack decoding of the stored messages that opening needs to work out a missing `types`.
A paged archive (`nanorec.archive.pages`) read locally has every page read at open; read by URL
(or locally with `paged_index=True`), its pages are read as asked (`nanorec.archive.pageread`),
all of them only when `index` is.
The member API (bytes, chunks, views, side values) is `nanorec.archive.member_access`'s.
`ArchiveReader` extends `ArchiveFile` with messages by number, CRC checks, iteration and entry
metadata."""

from __future__ import annotations

import contextlib
import mmap
import os
import shutil
import threading
import weakref
from pathlib import Path
from typing import Any, Final

import msgpack
import numpy as np
from numpy.typing import NDArray

from nanorec.archive.blockread import BlockReader
from nanorec.archive.describe import MEMBER_NAME as DESCRIPTION_MEMBER
from nanorec.archive.describe import Description, parse_description
from nanorec.archive.index import Index
from nanorec.archive.index_parse import parse_entries
from nanorec.archive.member_access import MemberAccess
from nanorec.archive.members import mapped_member, open_members, prefetch_local_headers
from nanorec.archive.pageread import LOCAL_PAGE_CACHE, PAGE_CACHE, LazyPages
from nanorec.archive.pages import MEMBER_NAME as PAGES_MEMBER
from nanorec.archive.pagetable import PageTable, table_of
from nanorec.archive.source import RangeBuffer
from nanorec.archive.urls import is_url, url_path
from nanorec.archive.wire import (
    INDEX_MEMBER,
    MESSAGES_MEMBER,
    TIMESTAMP_KEY,
    read_array_header,
)
from nanorec.errors import (
    ArchiveError,
    IndexMismatchError,
    NanorecError,
    OutOfRangeError,
    TruncatedError,
    UsageError,
)

#: Read ahead past a run's stored bytes by URL (`advise_sequential`): two range pages, for the
#: run's ends lying inside the pages a miss starts and stops at.
RUN_SLACK: Final = 32 << 10
#: msgpack decoding failures (bad bytes, truncated data, trailing bytes, deep nesting...).
MSGPACK_ERRORS: Final = (ValueError, TypeError, msgpack.UnpackException)


class ArchiveFile(MemberAccess):
    """The archive at `path` opened for reading: its mapping, members, description, block
    table and `index`, and the raw bytes of its messages. `ArchiveReader` (`nanorec.archive.reader`)
    is the public class; see it for the arguments and what opening raises. A URL (`s3://`,
    `https://`...: `nanorec.archive.remote`) is read in place by ranges instead of mapped.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        use_description: bool = True,
        temporary_dir: Path | None = None,
        paged_index: bool = False,
    ) -> None:
        #: Whether a local paged archive's index is read a page at a time as asked, as by URL
        #: (a pass over millions of messages need not hold their index whole).
        self.paged_index = paged_index
        # A URL keeps its whole text (`str(path)`) for reopening it, a `Path`'s `.name` for titles.
        self.path: Path = url_path(str(path)) if is_url(path) else Path(path)  # type: ignore[assignment]
        # A directory holding a temporary archive (a native file opened directly): removed at
        # close, at garbage collection or at exit, whichever comes first.
        self._cleanup = (
            None
            if temporary_dir is None
            else weakref.finalize(self, shutil.rmtree, temporary_dir, ignore_errors=True)
        )
        # Reentrant: lazy loaders holding it call member(), which takes it for deflated data.
        self._lock = threading.RLock()
        self._inflated: mmap.mmap | None = None  # a deflated messages member, inflated
        self._index_data: bytes | None = None
        self._positions: NDArray[np.int64] | None = None
        self._mm: mmap.mmap | RangeBuffer | None = None
        self._file = None
        if is_url(self.path):
            self._open_remote(str(self.path), use_description)
            return
        self._file = open(self.path, "rb")  # noqa: SIM115 - owned until close()
        try:
            size = os.fstat(self._file.fileno()).st_size
            if size == 0:
                raise TruncatedError(f"{self.path} is empty", offset=0, actual=0)
            self._mm = mmap.mmap(self._file.fileno(), 0, access=mmap.ACCESS_READ)
            # Reads are random: no read-ahead, so resident memory follows what is read.
            with contextlib.suppress(AttributeError, OSError):
                self._mm.madvise(mmap.MADV_RANDOM)
            self._open(use_description)
        except BaseException:
            self.close()
            raise

    def _open_remote(self, url: str, use_description: bool) -> None:
        # threads and ipaddress (~15 ms of every command's start-up): imported for a URL only
        from nanorec.archive.remote import RemoteSource

        try:
            source = RemoteSource(url)
            self._mm = RangeBuffer(source, tail=source.tail)
            if source.size == 0:
                raise TruncatedError(f"{url} is empty", offset=0, actual=0)
            self._open(use_description)
        except BaseException:
            self.close()
            raise

    @property
    def remote(self) -> RangeBuffer | None:
        """The ranges an archive read by URL is read through (its `source` counts requests and
        bytes), None for a local file."""
        return self._mm if isinstance(self._mm, RangeBuffer) else None

    @property
    def compact(self) -> bool:
        """Whether messages are read block by block from a compact `messages.msgpack`."""
        return self._blocks is not None or (self._lazy is not None and not self._stored)

    @property
    def index(self) -> Index:
        """The index columns of every message. A paged archive read by URL reads its pages
        only as messages are asked for (`read`, `index_at_time`...): this fetches them all."""
        if self._index is None:
            self._load_pages()
        assert self._index is not None
        return self._index

    def _open(self, use_description: bool) -> None:
        assert self._mm is not None
        self._end, self._members = open_members(self._mm)
        for required in (MESSAGES_MEMBER, INDEX_MEMBER):
            if required not in self._members:
                raise ArchiveError(
                    f"{self.path} has no {required} member (found: "
                    f"{', '.join(self._members) or 'none'})"
                )
        description_member = self._members.get(DESCRIPTION_MEMBER)
        if description_member is None or not description_member.placed:
            prefetch_local_headers(self._mm, self._members)  # not paged: all will be read
        messages = self._members[MESSAGES_MEMBER]
        self._messages = messages
        self._messages_size = messages.header.uncompressed_size
        self._stored = messages.stored
        self._blocks: BlockReader | None = None
        #: The paged layout's page table (`nanorec.archive.pages`), None without one.
        self.pages: PageTable | None = None
        # A paged archive read by ranges: pages read as needed, `_index` None until all are.
        self._lazy: LazyPages | None = None
        #: The description map (without its columns), or None for NanoVer files.
        self.description: dict[str, Any] | None = None
        #: Why the columnar index in `nanorec.msgpack` was not used, if it was not.
        self.description_problem: str | None = None
        #: Where the index was loaded from: "nanorec.msgpack" or "index.msgpack".
        self.index_source = INDEX_MEMBER
        #: Index entries whose timestamp was missing/None in `index.msgpack` (carried forward).
        self.unknown_timestamps = 0
        index: Index | None = None
        if description_member is not None:
            try:
                description = parse_description(self.member(DESCRIPTION_MEMBER))
                self.description = description.fields
                if description.fields.get("pages") is not None:
                    self.pages = self._page_table(description.fields)
                else:
                    prefetch_local_headers(self._mm, self._members)
                if use_description:
                    self._check_description(description)
                    if self.pages is None:
                        index = description.to_index(self._messages_size)
                    elif self._can_be_lazy():
                        self._lazy = self._lazy_pages(self.pages)
                    else:
                        index = self._whole_pages()
                    self.index_source = DESCRIPTION_MEMBER
                elif self.pages is not None:
                    self._whole_pages()  # its block table
            except NanorecError as error:
                self.description_problem = str(error)
                self.pages = None
                self._lazy = None
                prefetch_local_headers(self._mm, self._members)
            if self.description is not None and not messages.stored and self.pages is None:
                self._blocks = self._block_reader(self.description.get("blocks"))
        self._messages_start = messages.data_start
        self._count = self._lazy.table.message_count if self._lazy is not None else 0
        self._set_index(
            index if self._lazy is not None or index is not None else self._parse_index()
        )

    def _set_index(self, index: Index | None) -> None:
        self._index: Index | None = index
        if index is not None:
            self._offsets = index.offset
            self._lengths = index.length
            self._count = len(index)

    def _page_table(self, fields: dict[str, Any]) -> PageTable:
        table = table_of(fields, self._members)
        if not table.blocks_fit and not self._stored:
            self.description_problem = (
                f"block table: made for a {fields['pages'].get('messages_stored_size')!r}-byte "
                f"stream, messages.msgpack holds {self._messages.size} compressed bytes"
            )
        return table

    def _can_be_lazy(self) -> bool:
        """Whether pages are read as needed: by URL (a local archive maps its pages: reading
        them all at open costs milliseconds, and reads then index plain arrays) or when asked
        (`paged_index`), with pages to range-read (stored) and block rows fitting the messages
        member."""
        table = self.pages
        return (
            (isinstance(self._mm, RangeBuffer) or self.paged_index)
            and table is not None
            and self._members[PAGES_MEMBER].stored
            and (self._stored or table.blocks_fit)
        )

    def _whole_pages(self) -> Index:
        """Every page read at once (one range, or a slice of the mapping): the index, and a
        compact archive's whole block table. Raises `PageError` for a damaged page."""
        table = self.pages
        assert table is not None and self.description is not None
        member = self._members[PAGES_MEMBER]
        columns, offsets, starts = table.whole(
            self.member(PAGES_MEMBER), member.data_start if member.stored else 0
        )
        if table.block_count and table.blocks_fit and not self._stored:
            self._blocks = BlockReader.from_rows(
                self._map(),
                offsets,
                starts,
                data_start=self._messages.data_start,
                data_size=self._messages.size,
                messages_size=self._messages_size,
            )
        index: Index = Description(self.description, columns).to_index(self._messages_size)
        return index

    def _load_pages(self) -> None:
        """A lazy (remote paged) archive's whole index, for what needs every message's
        columns: from its pages, else (a damaged one) from `index.msgpack`."""
        with self._lock:
            if self._index is not None:
                return
            try:
                index = self._whole_pages()
            except NanorecError as error:
                self.description_problem = str(error)
                self.index_source = INDEX_MEMBER
                self._blocks = None
                prefetch_local_headers(self._map(), self._members)
                index = self._parse_index()
            if self._lazy is not None:
                self._lazy.clear()
            self._set_index(index)

    def _lazy_pages(self, table: PageTable) -> LazyPages:
        assert self._mm is not None
        return LazyPages(
            self._mm,
            table,
            pages_start=self._members[PAGES_MEMBER].data_start,
            messages_start=self._messages.data_start,
            messages_stored=self._messages.size,
            messages_size=self._messages_size,
            stored=self._stored,
            cache=PAGE_CACHE if isinstance(self._mm, RangeBuffer) else LOCAL_PAGE_CACHE,
        )

    def _number(self, number: int) -> int:
        count = self._count
        if number < 0:
            number += count
        if not 0 <= number < count:
            raise OutOfRangeError(f"message {number} out of range (archive holds {count})")
        return number

    def _block_reader(self, table: object) -> BlockReader | None:
        """The compact layout's block table, if it is there and fits the member (else the
        slow path reads the member: a problem is noted, not raised)."""
        if type(table) is not dict:
            return None
        try:
            return BlockReader(
                self._map(),
                table,
                data_start=self._messages.data_start,
                data_size=self._messages.size,
                messages_size=self._messages_size,
            )
        except NanorecError as error:
            self.description_problem = str(error)
            return None

    def _check_description(self, description: Description) -> None:
        """That the description was made from this archive's `index.msgpack` (sizes, CRC)."""
        index_member = self._members[INDEX_MEMBER]
        fields = description.fields
        checks = (
            ("messages_size", self._messages_size),
            ("index_size", index_member.header.uncompressed_size),
            ("index_crc32", index_member.header.crc32),
        )
        for key, actual in checks:
            if fields[key] != actual:
                raise IndexMismatchError(
                    f"{DESCRIPTION_MEMBER} records {key} {fields[key]} but the archive has "
                    f"{actual}: it describes another index",
                    expected=fields[key],
                    actual=actual,
                )
        if index_member.stored and index_member.placed:
            assert self._mm is not None
            start = index_member.data_start
            head = bytes(self._mm[start : start + min(5, index_member.size)])
            count, _ = read_array_header(head)
            if count != description.message_count:
                raise IndexMismatchError(
                    f"{DESCRIPTION_MEMBER} counts {description.message_count} messages but "
                    f"index.msgpack holds {count}",
                    expected=description.message_count,
                    actual=count,
                )

    def _parse_index(self) -> Index:
        data = self.member(INDEX_MEMBER)
        parsed = parse_entries(data, types_of=self._types_from_message)
        parsed.index.check_bounds(self._messages_size)
        self._positions = parsed.positions
        self._index_data = data if not self._members[INDEX_MEMBER].stored else None
        self.unknown_timestamps = parsed.unknown_timestamps
        return parsed.index

    def _types_from_message(self, offset: int, length: int) -> tuple[str, ...]:
        if offset < 0 or length < 0 or offset + length > self._messages_size:
            raise IndexMismatchError(
                f"index entry at offset {offset}, length {length} points outside the "
                f"{self._messages_size}-byte messages member",
                expected=f"<= {self._messages_size}",
                actual=offset + length,
            )
        message = self._decode(-1, self._read(offset, length), self._messages_start + offset)
        return tuple(message)

    # -- lifetime --------------------------------------------------------------------------

    def advise_sequential(self, *, run: tuple[int, int] | None = None) -> None:
        """Tell the kernel a pass over the messages follows (export, a full scan): read ahead.
        The default advice is random access, right for seeks and wrong for passes (a cold
        200 MB export took 3.5x longer under it). A compact archive's blocks are then inflated
        a span of them at a time (`BlockReader.sequential`). `run`: the pass reads messages
        `run[0]` to `run[1]` (included) only: a paged archive by URL then reads them through
        their pages, not its whole index, and reads ahead no further than they reach."""
        lazy = self._lazy
        remote = self._mm if isinstance(self._mm, RangeBuffer) else None
        if self._index is None and lazy is not None and run is not None and remote is not None:
            first, row = lazy.of(run[0])
            last, end_row = lazy.of(run[1])
            start = first.index.offset.item(row)
            end = last.index.offset.item(end_row) + last.index.length.item(end_row)
            if first.blocks is not None and last.blocks is not None:  # compact: its blocks
                start, end = (
                    first.blocks.stored_span(start)[0],
                    last.blocks.stored_span(max(start, end - 1))[1],
                )
            remote.sequential = True
            remote.read_ahead = min(remote.read_ahead, end - start + RUN_SLACK)
            return
        if self._index is None and not self.paged_index:
            self._load_pages()  # a pass needs every page (and the whole block table)
        if self._blocks is not None:
            self._blocks.sequential = True
        if isinstance(self._mm, RangeBuffer):
            self._mm.sequential = True  # a miss reads ahead in large ranges
        elif self._mm is not None:
            with contextlib.suppress(AttributeError, OSError, ValueError):
                self._mm.madvise(mmap.MADV_SEQUENTIAL)

    def release_pages(self) -> None:
        """Let the kernel drop the file pages mapped so far (they are read again on demand):
        keeps resident memory flat during a pass over a file larger than RAM (a remote
        archive's pages are a bounded LRU already)."""
        if isinstance(self._mm, mmap.mmap):
            with contextlib.suppress(OSError, ValueError):
                self._mm.madvise(mmap.MADV_DONTNEED)

    def close(self) -> None:
        """Release the file and its mapping. Idempotent."""
        if self._inflated is not None:
            self._inflated.close()
            self._inflated = None
        if isinstance(self._mm, RangeBuffer):
            self._mm.source.close()
        elif self._mm is not None:
            with contextlib.suppress(BufferError):  # a member_view still alive: unmapped
                self._mm.close()  # when it goes
        self._mm = None
        if self._file is not None:
            self._file.close()
        if self._cleanup is not None:
            self._cleanup()

    def _map(self) -> mmap.mmap | RangeBuffer:
        if self._mm is None:
            raise UsageError("I/O operation on a closed ArchiveReader")
        return self._mm

    # -- internals -------------------------------------------------------------------------

    def _read(self, offset: int, length: int) -> bytes:
        if self._stored:
            start = self._messages_start + offset
            mm = self._mm
            if mm is None:
                raise UsageError("I/O operation on a closed ArchiveReader")
            return mm[start : start + length]
        if self._blocks is not None:
            if self._mm is None:
                raise UsageError("I/O operation on a closed ArchiveReader")
            return self._blocks.read(offset, length)
        # Slow path: a deflated messages member is inflated once into a temporary file.
        inflated = self._inflated or self._inflate_messages()
        data = inflated[offset : offset + length]
        if len(data) != length:
            raise TruncatedError(
                f"messages member ends before message at offset {offset}",
                offset=offset,
                expected=length,
                actual=len(data),
            )
        return data

    def _inflate_messages(self) -> mmap.mmap:
        with self._lock:
            if self._inflated is None:
                self._inflated = mapped_member(self._map(), self._messages)
            return self._inflated

    def _decode(self, number: int, data: bytes, absolute: int) -> dict[str, Any]:
        try:
            message = msgpack.unpackb(data)
        except MSGPACK_ERRORS as error:
            what = f"message {number}" if number >= 0 else "a message"
            raise ArchiveError(
                f"{what} ({len(data)} bytes) is not one valid msgpack object: {error}",
                offset=absolute,
            ) from None
        if type(message) is not dict:
            what = f"message {number}" if number >= 0 else "a message"
            raise IndexMismatchError(
                f"{what} decodes to a {type(message).__name__}, not a map",
                offset=absolute,
                expected="map",
                actual=type(message).__name__,
            )
        message.pop(TIMESTAMP_KEY, None)
        return message


__all__ = ["MSGPACK_ERRORS", "ArchiveFile"]
