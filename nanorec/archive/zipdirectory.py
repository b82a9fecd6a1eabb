"""The central directory of an archive and the end records that locate it.

The archive's table of contents, read whole when it opens and written whole when it closes:
the central-directory file headers (APPNOTE 4.3.12) and the end records after them (classic
end record, zip64 end record and locator, 4.3.14-4.3.16). Python's `zipfile` gives their byte
layouts and signatures (used here) but finds and reads them only through a file object and
raises `BadZipFile` without an offset. The reader needs them parsed from an `mmap` at absolute
offsets, with `TruncatedError` for a file cut short (a writer killed before close) and
`ArchiveError`/`UnsupportedError` naming the offset; the writer needs them built after a
streamed directory with zip64 chosen per value. The member's local header and the field
encodings shared with it are in `nanorec.archive.zipfile64`.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Final
from zipfile import (  # type: ignore[attr-defined]  # typeshed leaves the record layouts out
    DEFAULT_VERSION,
    ZIP64_VERSION,
    ZIP_FILECOUNT_LIMIT,
    ZIP_MAX_COMMENT,
    ZIP_STORED,
    stringCentralDir,
    stringEndArchive,
    stringEndArchive64,
    stringEndArchive64Locator,
    structCentralDir,
    structEndArchive,
    structEndArchive64,
    structEndArchive64Locator,
)

from nanorec.archive.zipfile64 import (
    DOS_DATE_1980,
    DOS_TIME_0,
    EXTRA_HEADER,
    FLAG_UTF8,
    U32_MAX,
    Buffer,
    bad_signature,
    build_zip64_extra,
    decode_name,
    encode_name,
    need_bytes,
    resolve_zip64,
    split_zip64_extra,
)
from nanorec.errors import ArchiveError, TruncatedError, UnsupportedError

#: "Made by" high byte 3 = Unix, so `external_attr` carries a Unix mode.
MADE_BY_UNIX: Final = 3 << 8
#: Regular file, mode 0644, in the high 16 bits of `external_attr`.
EXTERNAL_ATTR_FILE: Final = 0o100644 << 16

# The records' fixed parts, as `zipfile` spells them (signatures as 4 bytes, and the central
# header's "version" fields as a version byte and a system byte).
CENTRAL_HEADER: Final = struct.Struct(structCentralDir)  # 46 bytes
END_RECORD: Final = struct.Struct(structEndArchive)  # 22 bytes
ZIP64_END_RECORD: Final = struct.Struct(structEndArchive64)  # 56 bytes
ZIP64_LOCATOR: Final = struct.Struct(structEndArchive64Locator)  # 20 bytes

#: The end record may be followed by a comment of up to 65535 bytes.
MAX_END_SEARCH: Final = END_RECORD.size + ZIP_MAX_COMMENT


@dataclass(frozen=True)
class CentralHeader:
    """A central-directory file header (APPNOTE 4.3.12): the authoritative member record."""

    name: str
    crc32: int
    compressed_size: int
    uncompressed_size: int
    local_header_offset: int
    method: int = ZIP_STORED
    flags: int = 0
    dos_time: int = DOS_TIME_0
    dos_date: int = DOS_DATE_1980
    #: Informational; `build` raises its version byte to what the record needs.
    version_made_by: int = field(default=MADE_BY_UNIX | DEFAULT_VERSION, compare=False)
    internal_attr: int = 0
    external_attr: int = EXTERNAL_ATTR_FILE
    #: Extra fields other than zip64, raw.
    extra: bytes = b""
    comment: bytes = b""
    #: Write the zip64 extra even when every value fits in 32 bits (tests use this).
    force_zip64: bool = field(default=False, compare=False)
    #: Bytes the record took where it was parsed (0 for a record built in memory).
    parsed_size: int = field(default=0, compare=False)

    def _zip64_values(self) -> tuple[list[int], list[int]]:
        """The fixed field values and the zip64 extra values, in APPNOTE order."""
        fixed: list[int] = []
        values: list[int] = []
        for value in (self.uncompressed_size, self.compressed_size, self.local_header_offset):
            if value >= U32_MAX or self.force_zip64:
                fixed.append(U32_MAX)
                values.append(value)
            else:
                fixed.append(value)
        return fixed, values

    @property
    def size(self) -> int:
        """Bytes taken by this record in the central directory."""
        name, _ = encode_name(self.name)
        _, values = self._zip64_values()
        zip64_len = EXTRA_HEADER.size + 8 * len(values) if values else 0
        return CENTRAL_HEADER.size + len(name) + zip64_len + len(self.extra) + len(self.comment)

    def build(self) -> bytes:
        """The record's bytes."""
        name, utf8 = encode_name(self.name)
        (usize, csize, header_offset), values = self._zip64_values()
        extra = build_zip64_extra(values) + self.extra
        version = ZIP64_VERSION if values else DEFAULT_VERSION
        return (
            CENTRAL_HEADER.pack(
                stringCentralDir,
                max(version, self.version_made_by & 0xFF),
                self.version_made_by >> 8,
                version,
                0,
                self.flags | utf8,
                self.method,
                self.dos_time,
                self.dos_date,
                self.crc32,
                csize,
                usize,
                len(name),
                len(extra),
                len(self.comment),
                0,
                self.internal_attr,
                self.external_attr,
                header_offset,
            )
            + name
            + extra
            + self.comment
        )

    @classmethod
    def parse(cls, buf: Buffer, offset: int) -> CentralHeader:
        """Parse the central-directory record at `offset`.

        Raises `TruncatedError` if it runs past the buffer, `ArchiveError` on a bad signature
        or a missing zip64 value, `UnsupportedError` for a multi-disk archive.
        """
        need_bytes(len(buf), offset, CENTRAL_HEADER.size, "central directory header")
        (
            signature,
            made_by,
            made_on,
            _version,
            _system,
            flags,
            method,
            dos_time,
            dos_date,
            crc,
            csize,
            usize,
            name_len,
            extra_len,
            comment_len,
            disk,
            internal_attr,
            external_attr,
            header_offset,
        ) = CENTRAL_HEADER.unpack(buf[offset : offset + CENTRAL_HEADER.size])
        if signature != stringCentralDir:
            raise bad_signature(
                "bad central directory header signature", offset, stringCentralDir, signature
            )
        start = offset + CENTRAL_HEADER.size
        need_bytes(len(buf), start, name_len + extra_len + comment_len, "central directory entry")
        name = decode_name(bytes(buf[start : start + name_len]), flags, start)
        extra = bytes(buf[start + name_len : start + name_len + extra_len])
        comment_start = start + name_len + extra_len
        comment = bytes(buf[comment_start : comment_start + comment_len])
        zip64, others = split_zip64_extra(extra, start + name_len)
        usize, csize, header_offset = resolve_zip64(
            [usize, csize, header_offset], [U32_MAX, U32_MAX, U32_MAX], zip64, offset, name
        )
        if disk not in (0, 0xFFFF):
            raise UnsupportedError(f"member {name!r} is on disk {disk}", offset=offset)
        return cls(
            name=name,
            crc32=crc,
            compressed_size=csize,
            uncompressed_size=usize,
            local_header_offset=header_offset,
            method=method,
            flags=flags & ~FLAG_UTF8,
            dos_time=dos_time,
            dos_date=dos_date,
            version_made_by=made_on << 8 | made_by,
            internal_attr=internal_attr,
            external_attr=external_attr,
            extra=others,
            comment=comment,
            parsed_size=CENTRAL_HEADER.size + name_len + extra_len + comment_len,
        )


@dataclass(frozen=True)
class EndRecords:
    """What the end of a zip says about its central directory (classic or zip64 records)."""

    entries: int
    cd_size: int
    cd_offset: int
    comment: bytes = b""
    #: Where the classic end record starts (set by `parse`).
    end_offset: int = field(default=0, compare=False)
    zip64: bool = field(default=False, compare=False)

    def needs_zip64(self) -> bool:
        return (
            self.entries >= ZIP_FILECOUNT_LIMIT
            or self.cd_size >= U32_MAX
            or self.cd_offset >= U32_MAX
        )

    def build(self, *, force_zip64: bool = False) -> bytes:
        """The end records to write right after the central directory.

        The zip64 end record (when needed or forced) goes at `cd_offset + cd_size`, followed
        by its locator and the classic record with its overflowing fields at their maximum.
        """
        classic = [self.entries, self.cd_size, self.cd_offset]
        out = b""
        if force_zip64 or self.needs_zip64():
            out += ZIP64_END_RECORD.pack(
                stringEndArchive64,
                ZIP64_END_RECORD.size - 12,
                MADE_BY_UNIX | ZIP64_VERSION,
                ZIP64_VERSION,
                0,
                0,
                self.entries,
                self.entries,
                self.cd_size,
                self.cd_offset,
            )
            zip64_offset = self.cd_offset + self.cd_size
            out += ZIP64_LOCATOR.pack(stringEndArchive64Locator, 0, zip64_offset, 1)
            # Each classic field that overflows (every one, when forced) says "see zip64".
            maxima = [ZIP_FILECOUNT_LIMIT, U32_MAX, U32_MAX]
            classic = maxima if force_zip64 else list(map(min, classic, maxima))
        entries, cd_size, cd_offset = classic
        out += END_RECORD.pack(
            stringEndArchive, 0, 0, entries, entries, cd_size, cd_offset, len(self.comment)
        )
        return out + self.comment

    @classmethod
    def parse(cls, buf: Buffer) -> EndRecords:
        """Find and parse the end records of a whole zip held in `buf`.

        Raises `TruncatedError` when no end record is found (the usual sign of a cut file or
        a writer that never finished), `ArchiveError` when the records contradict the file,
        `UnsupportedError` for multi-disk archives.
        """
        size = len(buf)
        if size < END_RECORD.size:
            raise TruncatedError(
                f"a zip needs at least {END_RECORD.size} bytes, this file has {size}",
                offset=0,
                expected=END_RECORD.size,
                actual=size,
            )
        search_from = max(0, size - MAX_END_SEARCH)
        tail = bytes(buf[search_from:size])
        pos = len(tail) - END_RECORD.size
        found = -1
        while pos >= 0:
            pos = tail.rfind(stringEndArchive, 0, pos + 4)
            if pos < 0:
                break
            comment_len = END_RECORD.unpack_from(tail, pos)[7]
            if pos + END_RECORD.size + comment_len == len(tail):
                found = pos
                break
            pos -= 1
        if found < 0:
            raise TruncatedError(
                "no end-of-central-directory record: the file is cut short or is not a zip "
                "(a writer killed before close leaves this; try `nanorec recover`)",
                offset=size,
            )
        end_offset = search_from + found
        (_, disk, cd_disk, disk_entries, entries, cd_size, cd_offset, comment_len) = (
            END_RECORD.unpack_from(tail, found)
        )
        comment = tail[found + END_RECORD.size : found + END_RECORD.size + comment_len]
        locator_offset = end_offset - ZIP64_LOCATOR.size
        zip64 = False
        if (
            locator_offset >= 0
            and ZIP64_LOCATOR.unpack(buf[locator_offset : locator_offset + ZIP64_LOCATOR.size])[0]
            == stringEndArchive64Locator
        ):
            _, _, record_offset, _ = ZIP64_LOCATOR.unpack(
                buf[locator_offset : locator_offset + ZIP64_LOCATOR.size]
            )
            if record_offset + ZIP64_END_RECORD.size > locator_offset:
                raise ArchiveError(
                    "zip64 end locator points past itself",
                    offset=locator_offset,
                    expected=f"< {locator_offset - ZIP64_END_RECORD.size}",
                    actual=record_offset,
                )
            fields = ZIP64_END_RECORD.unpack(
                buf[record_offset : record_offset + ZIP64_END_RECORD.size]
            )
            if fields[0] != stringEndArchive64:
                raise bad_signature(
                    "bad zip64 end-of-central-directory signature",
                    record_offset,
                    stringEndArchive64,
                    fields[0],
                )
            disk, cd_disk, disk_entries, entries, cd_size, cd_offset = fields[4:10]
            zip64 = True
        if disk != 0 or cd_disk != 0 or disk_entries != entries:
            raise UnsupportedError("multi-disk zip archives are not supported", offset=end_offset)
        cd_limit = end_offset if not zip64 else locator_offset
        if cd_offset + cd_size > cd_limit:
            raise ArchiveError(
                f"central directory ({cd_size} bytes at {cd_offset}) runs past the end records",
                offset=end_offset,
                expected=f"<= {cd_limit}",
                actual=cd_offset + cd_size,
            )
        return cls(
            entries=entries,
            cd_size=cd_size,
            cd_offset=cd_offset,
            comment=comment,
            end_offset=end_offset,
            zip64=zip64,
        )


def parse_central_directory(buf: Buffer, end: EndRecords) -> list[CentralHeader]:
    """All central-directory records announced by `end`.

    Raises `ArchiveError` when the count or the total size disagrees with the records found,
    `TruncatedError` when a record runs past the buffer.
    """
    headers: list[CentralHeader] = []
    pos = end.cd_offset
    stop = end.cd_offset + end.cd_size
    # An entry takes at least 46 bytes, so a huge announced count is caught before looping.
    if end.entries * CENTRAL_HEADER.size > end.cd_size:
        raise ArchiveError(
            f"end record announces {end.entries} members in a {end.cd_size}-byte central directory",
            offset=end.end_offset,
            expected=f"<= {end.cd_size // CENTRAL_HEADER.size}",
            actual=end.entries,
        )
    for _ in range(end.entries):
        header = CentralHeader.parse(buf, pos)
        pos += header.parsed_size
        if pos > stop:
            raise ArchiveError(
                "central directory entry runs past the directory's announced size",
                offset=pos,
                expected=stop,
                actual=pos,
            )
        headers.append(header)
    if pos != stop:
        raise ArchiveError(
            "central directory size disagrees with its entries",
            offset=pos,
            expected=stop,
            actual=pos,
        )
    return headers


__all__ = ["CentralHeader", "EndRecords", "parse_central_directory"]
