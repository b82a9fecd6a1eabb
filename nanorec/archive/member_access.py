"""The members of an opened archive as bytes, chunks, views, per-message arrays and side values
(`ArchiveFile`'s, `nanorec.archive.archive_file`): apart from opening and the index, so that
each module keeps one concern. Bounded and checked here, for every format
(`ArchiveWriter.add_meta`, `member_array`: see docs/architecture.md)."""

from __future__ import annotations

import mmap
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import numpy as np
import numpy.typing as npt
from numpy.typing import NDArray

from nanorec.archive.members import Member, iter_member_data, mapped_member
from nanorec.archive.source import RangeBuffer, window
from nanorec.archive.wire import meta_limit, unpack_meta
from nanorec.archive.zipfile64 import Buffer
from nanorec.errors import ArchiveError, FormatError

#: `member_view` of a deflated member this large inflates it into a mapped temporary file.
_SPOOL_MEMBER: Final = 16 << 20


class MemberAccess:
    """The member API of `ArchiveFile`, which sets what it reads: `path`, `description`,
    `_members`, `_count`, `_mm` and `_map()`."""

    path: Path
    description: dict[str, Any] | None
    _members: dict[str, Member]
    _count: int
    _mm: mmap.mmap | RangeBuffer | None

    def _map(self) -> mmap.mmap | RangeBuffer:
        raise NotImplementedError

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


__all__ = ["MemberAccess"]
