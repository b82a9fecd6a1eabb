"""`ArchiveFile`: an archive opened for reading, its members, index and message bytes.

This module exists so that opening an archive, which is most of what `ArchiveReader` does before its
first message, stays apart from the reader's per-message API (`nanorec.archive.reader`): mapping the
file, locating its zip members (`nanorec.archive.members`), reading the description in
`nanorec.msgpack` and its block table, loading the index from the columnar copy when it still
matches `index.msgpack` or else parsing `index.msgpack` (`nanorec.archive.index_parse`), and the raw
reads and msgpack decoding of the stored messages that opening needs to work out a missing `types`.
`ArchiveReader` extends `ArchiveFile` with messages by number, CRC checks, iteration and entry
metadata."""

from __future__ import annotations

import contextlib
import mmap
import os
import shutil
import threading
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import msgpack
import numpy as np
import numpy.typing as npt
from numpy.typing import NDArray

from nanorec.archive.blockread import BlockReader
from nanorec.archive.describe import MEMBER_NAME as DESCRIPTION_MEMBER
from nanorec.archive.describe import parse_description
from nanorec.archive.index import Index
from nanorec.archive.index_parse import parse_entries
from nanorec.archive.members import Member, iter_member_data, mapped_member, open_members
from nanorec.archive.source import RangeBuffer, window
from nanorec.archive.urls import is_url, url_path
from nanorec.archive.wire import (
    INDEX_MEMBER,
    MESSAGES_MEMBER,
    TIMESTAMP_KEY,
    meta_limit,
    read_array_header,
    unpack_meta,
)
from nanorec.archive.zipfile64 import Buffer
from nanorec.errors import (
    ArchiveError,
    FormatError,
    IndexMismatchError,
    NanorecError,
    TruncatedError,
    UsageError,
)

#: msgpack decoding failures (bad bytes, truncated data, trailing bytes, deep nesting...).
MSGPACK_ERRORS: Final = (ValueError, TypeError, msgpack.UnpackException)


#: `member_view` of a deflated member this large inflates it into a mapped temporary file.
_SPOOL_MEMBER: Final = 16 << 20


class ArchiveFile:
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
    ) -> None:
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
        return self._blocks is not None

    def _open(self, use_description: bool) -> None:
        assert self._mm is not None
        self._end, self._members = open_members(self._mm)
        for required in (MESSAGES_MEMBER, INDEX_MEMBER):
            if required not in self._members:
                raise ArchiveError(
                    f"{self.path} has no {required} member (found: "
                    f"{', '.join(self._members) or 'none'})"
                )
        messages = self._members[MESSAGES_MEMBER]
        self._messages = messages
        self._messages_start = messages.data_start
        self._messages_size = messages.header.uncompressed_size
        self._stored = messages.stored
        self._blocks: BlockReader | None = None
        #: The description map (without its columns), or None for NanoVer files.
        self.description: dict[str, Any] | None = None
        #: Why the columnar index in `nanorec.msgpack` was not used, if it was not.
        self.description_problem: str | None = None
        #: Where the index was loaded from: "nanorec.msgpack" or "index.msgpack".
        self.index_source = INDEX_MEMBER
        #: Index entries whose timestamp was missing/None in `index.msgpack` (carried forward).
        self.unknown_timestamps = 0
        index: Index | None = None
        if DESCRIPTION_MEMBER in self._members:
            try:
                description = parse_description(self.member(DESCRIPTION_MEMBER))
                self.description = description.fields
                if use_description:
                    index = self._index_from_description(description)
                    self.index_source = DESCRIPTION_MEMBER
            except NanorecError as error:
                self.description_problem = str(error)
            if self.description is not None and not messages.stored:
                self._blocks = self._block_reader(self.description.get("blocks"))
        if index is None:
            index = self._parse_index()
        self.index: Index = index
        self._offsets = index.offset
        self._lengths = index.length
        self._count = len(index)

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

    def _index_from_description(self, description: Any) -> Index:
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
        if index_member.stored:
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
        index: Index = description.to_index(self._messages_size)
        return index

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

    def advise_sequential(self) -> None:
        """Tell the kernel a pass over the messages follows (export, a full scan): read ahead.
        The default advice is random access, right for seeks and wrong for passes (a cold
        200 MB export took 3.5x longer under it). A compact archive's blocks are then inflated
        a span of them at a time (`BlockReader.sequential`)."""
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

    # -- members ---------------------------------------------------------------------------

    @property
    def member_names(self) -> tuple[str, ...]:
        """Names of all members, in central-directory order."""
        return tuple(self._members)

    def member(self, name: str) -> bytes:
        """The uncompressed bytes of member `name`.

        Raises `ArchiveError` if there is no such member or a deflated one is damaged.
        """
        member = self._members.get(name)
        if member is None:
            raise ArchiveError(f"{self.path} has no member {name!r}")
        if member.stored:
            mm = self._map()
            return mm[member.data_start : member.data_start + member.size]
        buf: Buffer = self._map()
        if isinstance(buf, RangeBuffer):  # its compressed bytes in one parallel fetch
            buf = buf[member.data_start : member.data_start + member.size]
            member = Member(member.header, 0)
        return b"".join(iter_member_data(buf, member))

    def member_chunks(self, name: str) -> Iterator[bytes]:
        """Member `name`'s uncompressed bytes in chunks of a few MiB (a large member without
        holding it whole). Raises `ArchiveError` as `member`."""
        member = self._members.get(name)
        if member is None:
            raise ArchiveError(f"{self.path} has no member {name!r}")
        return iter_member_data(self._map(), member)

    @property
    def source_sha256(self) -> str | None:
        """The sha256 of the native file this archive was converted from, as recorded at
        conversion (None when none was): what a byte-exact export is checked against."""
        source = (self.description or {}).get("source")
        sha = source.get("sha256") if isinstance(source, dict) else None
        return sha if isinstance(sha, str) else None

    def member_array(
        self, name: str, dtype: npt.DTypeLike, count: int | None = None
    ) -> NDArray[Any]:
        """Member `name` as `count` `dtype` values (default: one per message, a format's side
        column), without copying a stored one. `FormatError` if it is missing or holds another
        number of bytes (why: a short or hostile member would be indexed past its end later)."""
        if name not in self._members:
            raise FormatError(f"{self.path} has no {name} member")
        data = self.member_view(name)
        kind = np.dtype(dtype)
        if kind.hasobject or not kind.itemsize:
            raise FormatError(f"{name} cannot hold values of type {kind}")
        wanted = self._count if count is None else count
        if len(data) != wanted * kind.itemsize:
            per = "per message for" if count is None else "each for"
            raise FormatError(
                f"{name} holds {len(data)} bytes, not {kind.itemsize} {per} {wanted} "
                f"{'messages' if count is None else 'values'}"
            )
        return np.frombuffer(data, kind) if len(data) else np.zeros(0, kind)

    def meta(self, name: str) -> Any:
        """Side member `name` as `ArchiveWriter.add_meta` wrote it (a msgpack value),
        inflated to at most its recorded source's size plus slack (`wire.meta_limit`).
        `FormatError` if it is missing, does not inflate within that or is not msgpack."""
        if name not in self._members:
            raise FormatError(f"{self.path} has no {name} member")
        source = (self.description or {}).get("source")
        size = source.get("size") if isinstance(source, dict) else None
        limit = meta_limit(size, 0 if self._mm is None else len(self._mm))  # local or by URL
        return unpack_meta(self.member(name), limit, name)

    def member_view(self, name: str) -> memoryview:
        """Member `name` without copying it: a read-only view of the mapped archive for a
        stored member (its pages are read as used), else its inflated bytes (from 16 MiB, in a
        mapped temporary file). Release the view before closing the reader."""
        member = self._members.get(name)
        if member is None:
            raise ArchiveError(f"{self.path} has no member {name!r}")
        if member.stored:
            view = window(self._map(), member.data_start, member.data_start + member.size)
            return view.toreadonly()
        if member.header.uncompressed_size < _SPOOL_MEMBER:
            return memoryview(self.member(name))
        # A large deflated member (a compact archive's per-message arrays): file-backed pages.
        return memoryview(mapped_member(self._map(), member)).toreadonly()

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
