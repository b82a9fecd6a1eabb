"""The zip members of an archive as the reader sees them: where each one's data starts, and
its uncompressed bytes in bounded chunks (inflated with a zip-bomb guard when deflated)."""

from __future__ import annotations

import contextlib
import mmap
import tempfile
import zlib
from collections.abc import Callable, Iterator
from functools import partial
from typing import Final
from zipfile import ZIP_DEFLATED, ZIP_STORED

from nanorec.archive.source import RangeBuffer
from nanorec.archive.wire import MAX_INFLATE_RATIO, inflates_acceptably
from nanorec.archive.zipdirectory import CentralHeader, EndRecords, parse_central_directory
from nanorec.archive.zipfile64 import FLAG_ENCRYPTED, Buffer, LocalHeader
from nanorec.errors import ArchiveError, TruncatedError, UnsupportedError

#: Bytes read for a local header (its name and extra fields follow its fixed 30 bytes).
_LOCAL_HEADER_READ: Final = 1024


class Member:
    """A zip member as this reader sees it: central record plus where its data starts (for an
    archive read by ranges, worked out from its local header when first asked, unless the
    paged layout's table said it: see `place`)."""

    __slots__ = ("_data_start", "_resolve", "header")

    def __init__(
        self,
        header: CentralHeader,
        data_start: int | None,
        resolve: Callable[[], int] | None = None,
    ) -> None:
        self.header = header
        self._data_start = data_start
        self._resolve = resolve

    @property
    def data_start(self) -> int:
        if self._data_start is None:
            assert self._resolve is not None
            self._data_start = self._resolve()
        return self._data_start

    @property
    def placed(self) -> bool:
        """Whether `data_start` is known without reading the local header."""
        return self._data_start is not None

    def place(self, data_start: int) -> None:
        """Take `data_start` from a record that says it (a page table) instead of the local
        header, which a remote reader would fetch: checked against the central directory by
        that record's reader (`nanorec.archive.pages`)."""
        if self._data_start is None:
            self._data_start = data_start

    @property
    def name(self) -> str:
        return self.header.name

    @property
    def size(self) -> int:
        """Stored (compressed) size in bytes."""
        return self.header.compressed_size

    @property
    def stored(self) -> bool:
        return self.header.method == ZIP_STORED


def open_members(buf: Buffer) -> tuple[EndRecords, dict[str, Member]]:
    """Parse the end records, central directory and local headers of a zip in `buf`.

    Raises `TruncatedError` when a structure or a member's data runs past the file,
    `ArchiveError` when records disagree or two members have one name (zipfile takes the
    later one, another reader the first: which bytes it holds would depend on the reader),
    `UnsupportedError` for encrypted members or compression other than stored/deflated.
    """
    end = EndRecords.parse(buf)
    members: dict[str, Member] = {}
    headers = parse_central_directory(buf, end)
    for header in headers:
        if header.name in members:
            raise ArchiveError(
                f"two members are named {header.name!r}: which one the archive holds is "
                "the reader's guess",
                offset=header.local_header_offset,
            )
        if header.flags & FLAG_ENCRYPTED:
            raise UnsupportedError(f"member {header.name!r} is encrypted")
        if header.method not in (ZIP_STORED, ZIP_DEFLATED):
            raise UnsupportedError(
                f"member {header.name!r} uses compression method {header.method}; nanorec "
                "reads stored and deflated members",
                actual=header.method,
            )
        if header.method == ZIP_STORED and header.compressed_size != header.uncompressed_size:
            raise ArchiveError(
                f"stored member {header.name!r} has compressed size {header.compressed_size} "
                f"but uncompressed size {header.uncompressed_size}",
                offset=header.local_header_offset,
            )
        if header.local_header_offset >= end.cd_offset:
            raise ArchiveError(
                f"member {header.name!r} starts at {header.local_header_offset}, inside or "
                f"after the central directory at {end.cd_offset}",
                offset=header.local_header_offset,
            )
        resolve = partial(_data_start, buf, header, end.cd_offset)
        if isinstance(buf, RangeBuffer) and not buf.holds(
            header.local_header_offset, _LOCAL_HEADER_READ
        ):
            # by ranges: read when first used (a paged archive never reads most of them)
            members[header.name] = Member(header, None, resolve)
        else:
            members[header.name] = Member(header, resolve())
    return end, members


def prefetch_local_headers(buf: Buffer, members: dict[str, Member]) -> None:
    """Fetch the local headers not read yet in one parallel batch (an archive read by ranges
    whose members will all be used: not in turn, one request each)."""
    if isinstance(buf, RangeBuffer):
        unplaced = [m.header.local_header_offset for m in members.values() if not m.placed]
        buf.prefetch((offset, _LOCAL_HEADER_READ) for offset in unplaced)


def _data_start(buf: Buffer, header: CentralHeader, cd_offset: int) -> int:
    """Where the data of the member `header` lists starts, checked to end before the central
    directory at `cd_offset`."""
    data_start = LocalHeader.data_offset(buf, header.local_header_offset)
    if data_start + header.compressed_size > cd_offset:
        raise TruncatedError(
            f"member {header.name!r} ({header.compressed_size} bytes at {data_start}) runs "
            f"into the central directory at {cd_offset}",
            offset=data_start,
            expected=header.compressed_size,
            actual=max(0, cd_offset - data_start),
        )
    return data_start


_INFLATE_CHUNK: Final = 4 << 20


def iter_member_data(buf: Buffer, member: Member) -> Iterator[bytes]:
    """A member's uncompressed bytes, in chunks (inflated with zlib when deflated).

    Raises `ArchiveError` when deflated data is damaged, `TruncatedError` when it ends early
    or inflates to another size than the central directory records.
    """
    position = member.data_start
    stop = member.data_start + member.size
    if member.stored:
        while position < stop:
            step = min(_INFLATE_CHUNK, stop - position)
            yield bytes(buf[position : position + step])
            position += step
        return
    declared = member.header.uncompressed_size
    if not inflates_acceptably(declared, member.size):
        raise ArchiveError(
            f"deflated member {member.name!r} claims {declared} bytes from {member.size}: "
            f"more than {MAX_INFLATE_RATIO}x, refused (a zip bomb?)",
            offset=member.data_start,
        )
    inflater = zlib.decompressobj(-zlib.MAX_WBITS)
    produced = 0
    try:
        while not inflater.eof and (position < stop or inflater.unconsumed_tail):
            data = inflater.unconsumed_tail
            if not data:
                step = min(_INFLATE_CHUNK, stop - position)
                data = bytes(buf[position : position + step])
                position += step
            # Bounded output per call: a bomb cannot allocate more than this at once...
            chunk = inflater.decompress(data, _INFLATE_CHUNK)
            produced += len(chunk)
            if produced > declared:  # ...nor more than the central directory records
                break
            yield chunk
    except zlib.error as error:
        raise ArchiveError(
            f"deflated member {member.name!r} is damaged ({error})", offset=member.data_start
        ) from None
    if not inflater.eof or produced != declared:
        more = "more than " if produced > declared else ""
        raise TruncatedError(
            f"deflated member {member.name!r} inflates to {more}{produced} bytes, the central "
            f"directory records {declared}",
            offset=member.data_start,
            expected=declared,
            actual=produced,
        )


#: Bytes inflated by `mapped_member` between two givings back of the archive's pages.
_RELEASE = 64 << 20


def mapped_member(buf: Buffer, member: Member) -> mmap.mmap:
    """A member's uncompressed bytes inflated into an anonymous temporary file and mapped:
    file-backed pages, not the process's heap (the map outlives the file's descriptor). An
    empty member maps one byte. Raises as `iter_member_data`."""
    with tempfile.TemporaryFile(prefix=".nanorec-inflated-") as spool:
        written = 0
        for chunk in iter_member_data(buf, member):
            spool.write(chunk)
            written += len(chunk)
            if written >= _RELEASE and isinstance(buf, mmap.mmap):
                # the mapped archive's pages read so far given back (a member of hundreds of
                # MB would otherwise stay resident: 0.3 GB exporting a bag of 9 M messages)
                written = 0
                with contextlib.suppress(OSError, ValueError):
                    buf.madvise(mmap.MADV_DONTNEED)
        spool.flush()
        if not member.header.uncompressed_size:
            return mmap.mmap(-1, 1)
        return mmap.mmap(spool.fileno(), 0, access=mmap.ACCESS_READ)


__all__ = [
    "Member",
    "iter_member_data",
    "mapped_member",
    "open_members",
    "prefetch_local_headers",
]
