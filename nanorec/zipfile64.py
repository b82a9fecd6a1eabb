"""Byte layout of the zip records a nanorec archive uses, parse and build side by side.

The archive is read through `mmap` at absolute offsets and written by streaming, so nanorec
owns the zip structure instead of going through `zipfile` (whose `ZipExtFile.seek` costs
O(offset) before Python 3.12). Only what an uncompressed, single-disk archive needs lives
here: local file headers, the zip64 extra field, central-directory headers, and the end
records (classic, zip64 record, zip64 locator). Each record is a frozen dataclass holding
*logical* values (true sizes and offsets); `build()` chooses the zip64 representation when a
value does not fit in 32 bits (or when asked to), and `parse()` resolves it back. Parsers take
a buffer and an offset and raise `TruncatedError`/`ArchiveError` naming the offset; nothing
here opens a file.

Layout reference: PKWARE APPNOTE.TXT 6.3.x, sections 4.3.7 (local header), 4.3.12 (central
directory header), 4.3.14-4.3.16 (zip64 end record, locator, end record), 4.5.3 (zip64 extra).
"""

from __future__ import annotations

import mmap
import struct
from collections.abc import Iterator
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
    stringFileHeader,
    structCentralDir,
    structEndArchive,
    structEndArchive64,
    structEndArchive64Locator,
    structFileHeader,
)

from nanorec.errors import ArchiveError, TruncatedError, UnsupportedError

#: Anything the parsers accept: they only index and slice it.
Buffer = bytes | bytearray | memoryview | mmap.mmap

ZIP64_EXTRA_ID: Final = 0x0001

#: General-purpose flag bits nanorec looks at.
FLAG_ENCRYPTED: Final = 0x0001
FLAG_DATA_DESCRIPTOR: Final = 0x0008
FLAG_UTF8: Final = 0x0800

#: "Made by" high byte 3 = Unix, so `external_attr` carries a Unix mode.
MADE_BY_UNIX: Final = 3 << 8
#: Regular file, mode 0644, in the high 16 bits of `external_attr`.
EXTERNAL_ATTR_FILE: Final = 0o100644 << 16

#: 1980-01-01 00:00:00, the zip epoch; NanoVer's writer uses it too (fixed dates make
#: archives byte-reproducible).
DOS_DATE_1980: Final = (0 << 9) | (1 << 5) | 1
DOS_TIME_0: Final = 0

U32_MAX: Final = 0xFFFF_FFFF

# The fixed part of each record, as `zipfile` spells it (signatures as 4 bytes, and the
# "version" fields of the two headers as a version byte and a system byte).
LOCAL_HEADER: Final = struct.Struct(structFileHeader)  # 30 bytes
CENTRAL_HEADER: Final = struct.Struct(structCentralDir)  # 46 bytes
END_RECORD: Final = struct.Struct(structEndArchive)  # 22 bytes
ZIP64_END_RECORD: Final = struct.Struct(structEndArchive64)  # 56 bytes
ZIP64_LOCATOR: Final = struct.Struct(structEndArchive64Locator)  # 20 bytes
EXTRA_HEADER: Final = struct.Struct("<HH")
U64: Final = struct.Struct("<Q")

#: The end record may be followed by a comment of up to 65535 bytes.
MAX_END_SEARCH: Final = END_RECORD.size + ZIP_MAX_COMMENT


def _need(buf_len: int, offset: int, wanted: int, what: str) -> None:
    if offset < 0 or offset + wanted > buf_len:
        available = max(0, buf_len - offset)
        raise TruncatedError(
            f"{what} needs {wanted} bytes but only {available} remain",
            offset=offset,
            expected=wanted,
            actual=available,
        )


def bad_signature(message: str, offset: int, expected: bytes, actual: bytes) -> ArchiveError:
    """The error for a record whose signature is wrong (both reported as the u32 read)."""
    return ArchiveError(
        message,
        offset=offset,
        expected=int.from_bytes(expected, "little"),
        actual=int.from_bytes(actual, "little"),
    )


def _encode_name(name: str) -> tuple[bytes, int]:
    """The name bytes and the UTF-8 flag they need (none for plain ASCII, as zipfile does)."""
    try:
        return name.encode("ascii"), 0
    except UnicodeEncodeError:
        return name.encode("utf-8"), FLAG_UTF8


def _decode_name(raw: bytes, flags: int, offset: int) -> str:
    try:
        return raw.decode("utf-8" if flags & FLAG_UTF8 else "cp437")
    except UnicodeDecodeError as error:  # cp437 never fails; bad UTF-8 can
        raise ArchiveError(f"member name {raw!r} is not valid UTF-8", offset=offset) from error


def iter_extra_fields(extra: bytes, offset: int = 0) -> Iterator[tuple[int, bytes]]:
    """Yield `(header_id, data)` for each field of an extra block.

    Raises `ArchiveError` if a field announces more data than the block holds.
    """
    pos = 0
    while pos + EXTRA_HEADER.size <= len(extra):
        header_id, size = EXTRA_HEADER.unpack_from(extra, pos)
        start = pos + EXTRA_HEADER.size
        if start + size > len(extra):
            raise ArchiveError(
                f"extra field 0x{header_id:04x} announces {size} bytes but only "
                f"{len(extra) - start} remain",
                offset=offset + pos,
                expected=size,
                actual=len(extra) - start,
            )
        yield header_id, extra[start : start + size]
        pos = start + size


def build_zip64_extra(values: list[int]) -> bytes:
    """A zip64 extra field holding `values` (u64 each, in APPNOTE order), or b"" if none."""
    if not values:
        return b""
    data = b"".join(U64.pack(v) for v in values)
    return EXTRA_HEADER.pack(ZIP64_EXTRA_ID, len(data)) + data


def _split_zip64_extra(extra: bytes, offset: int) -> tuple[bytes | None, bytes]:
    """Separate the zip64 field's data from the other extra fields (kept raw, in order)."""
    zip64: bytes | None = None
    others = bytearray()
    for header_id, data in iter_extra_fields(extra, offset):
        if header_id == ZIP64_EXTRA_ID and zip64 is None:
            zip64 = data
        else:
            others += EXTRA_HEADER.pack(header_id, len(data)) + data
    return zip64, bytes(others)


def _resolve_zip64(
    fixed: list[int], maxima: list[int], zip64: bytes | None, offset: int, what: str
) -> list[int]:
    """Replace each fixed-width value at its maximum by the next u64 of the zip64 field."""
    values = list(fixed)
    pos = 0
    for i, (value, maximum) in enumerate(zip(fixed, maxima, strict=True)):
        if value != maximum:
            continue
        if zip64 is None or pos + 8 > len(zip64):
            raise ArchiveError(
                f"{what}: a size or offset field says 'see zip64 extra' but the zip64 "
                "extra field is missing or too short",
                offset=offset,
            )
        values[i] = U64.unpack_from(zip64, pos)[0]
        pos += 8
    return values


@dataclass(frozen=True)
class LocalHeader:
    """A local file header (APPNOTE 4.3.7): what precedes a member's data.

    With `zip64=True` the 32-bit size fields hold 0xFFFFFFFF and a zip64 extra field (first
    in the extra block) holds both sizes, which is how a streamed member of unknown final
    size is written; the header keeps its length when the sizes are patched at close.
    """

    name: str
    crc32: int = 0
    compressed_size: int = 0
    uncompressed_size: int = 0
    method: int = ZIP_STORED
    flags: int = 0
    dos_time: int = DOS_TIME_0
    dos_date: int = DOS_DATE_1980
    zip64: bool = False
    #: Extra fields other than zip64, raw.
    extra: bytes = b""
    #: The "version needed" field as found by `parse` (ignored by `build`).
    version_needed: int = field(default=0, compare=False)

    @property
    def size(self) -> int:
        """Bytes taken by this header: the data starts `size` bytes after it."""
        name, _ = _encode_name(self.name)
        zip64_len = EXTRA_HEADER.size + 16 if self._uses_zip64() else 0
        return LOCAL_HEADER.size + len(name) + zip64_len + len(self.extra)

    def _uses_zip64(self) -> bool:
        return self.zip64 or self.compressed_size >= U32_MAX or self.uncompressed_size >= U32_MAX

    def build(self) -> bytes:
        """The header's bytes (30 fixed bytes, name, extra)."""
        name, utf8 = _encode_name(self.name)
        if self._uses_zip64():
            sizes = (U32_MAX, U32_MAX)
            extra = build_zip64_extra([self.uncompressed_size, self.compressed_size])
            version = ZIP64_VERSION
        else:
            sizes = (self.compressed_size, self.uncompressed_size)
            extra = b""
            version = DEFAULT_VERSION
        extra += self.extra
        return (
            LOCAL_HEADER.pack(
                stringFileHeader,
                version,
                0,
                self.flags | utf8,
                self.method,
                self.dos_time,
                self.dos_date,
                self.crc32,
                sizes[0],
                sizes[1],
                len(name),
                len(extra),
            )
            + name
            + extra
        )

    @classmethod
    def parse(cls, buf: Buffer, offset: int) -> LocalHeader:
        """Parse the local header at `offset` of `buf`.

        Raises `TruncatedError` if it runs past the buffer, `ArchiveError` on a bad signature
        or a broken extra field.
        """
        _need(len(buf), offset, LOCAL_HEADER.size, "local file header")
        (
            signature,
            version,
            system,
            flags,
            method,
            dos_time,
            dos_date,
            crc,
            csize,
            usize,
            name_len,
            extra_len,
        ) = LOCAL_HEADER.unpack_from(buf, offset)
        if signature != stringFileHeader:
            raise bad_signature(
                "no local file header signature where the central directory points",
                offset,
                stringFileHeader,
                signature,
            )
        start = offset + LOCAL_HEADER.size
        _need(len(buf), start, name_len + extra_len, "local file header name and extra")
        name = _decode_name(bytes(buf[start : start + name_len]), flags, start)
        extra = bytes(buf[start + name_len : start + name_len + extra_len])
        zip64, others = _split_zip64_extra(extra, start + name_len)
        if zip64 is not None and (usize == U32_MAX or csize == U32_MAX):
            # In a local header the zip64 field holds both sizes, uncompressed first.
            usize, csize = _resolve_zip64([usize, csize], [U32_MAX, U32_MAX], zip64, offset, name)
        return cls(
            name=name,
            crc32=crc,
            compressed_size=csize,
            uncompressed_size=usize,
            method=method,
            flags=flags & ~FLAG_UTF8,
            dos_time=dos_time,
            dos_date=dos_date,
            zip64=zip64 is not None,
            extra=others,
            version_needed=system << 8 | version,
        )

    @staticmethod
    def data_offset(buf: Buffer, offset: int) -> int:
        """Absolute offset of the data following the local header at `offset`.

        Only the two length fields are read, so this works on a header whose sizes were
        never patched (a crashed writer). Raises `TruncatedError`/`ArchiveError`.
        """
        _need(len(buf), offset, LOCAL_HEADER.size, "local file header")
        fields = LOCAL_HEADER.unpack_from(buf, offset)
        if fields[0] != stringFileHeader:
            raise bad_signature(
                "no local file header signature", offset, stringFileHeader, fields[0]
            )
        name_len: int = fields[-2]
        extra_len: int = fields[-1]
        return offset + LOCAL_HEADER.size + name_len + extra_len


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
        name, _ = _encode_name(self.name)
        _, values = self._zip64_values()
        zip64_len = EXTRA_HEADER.size + 8 * len(values) if values else 0
        return CENTRAL_HEADER.size + len(name) + zip64_len + len(self.extra) + len(self.comment)

    def build(self) -> bytes:
        """The record's bytes."""
        name, utf8 = _encode_name(self.name)
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
        _need(len(buf), offset, CENTRAL_HEADER.size, "central directory header")
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
        ) = CENTRAL_HEADER.unpack_from(buf, offset)
        if signature != stringCentralDir:
            raise bad_signature(
                "bad central directory header signature", offset, stringCentralDir, signature
            )
        start = offset + CENTRAL_HEADER.size
        _need(len(buf), start, name_len + extra_len + comment_len, "central directory entry")
        name = _decode_name(bytes(buf[start : start + name_len]), flags, start)
        extra = bytes(buf[start + name_len : start + name_len + extra_len])
        comment_start = start + name_len + extra_len
        comment = bytes(buf[comment_start : comment_start + comment_len])
        zip64, others = _split_zip64_extra(extra, start + name_len)
        usize, csize, header_offset = _resolve_zip64(
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
            and ZIP64_LOCATOR.unpack_from(buf, locator_offset)[0] == stringEndArchive64Locator
        ):
            _, _, record_offset, _ = ZIP64_LOCATOR.unpack_from(buf, locator_offset)
            if record_offset + ZIP64_END_RECORD.size > locator_offset:
                raise ArchiveError(
                    "zip64 end locator points past itself",
                    offset=locator_offset,
                    expected=f"< {locator_offset - ZIP64_END_RECORD.size}",
                    actual=record_offset,
                )
            fields = ZIP64_END_RECORD.unpack_from(buf, record_offset)
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


__all__ = [
    "Buffer",
    "CentralHeader",
    "EndRecords",
    "LocalHeader",
    "build_zip64_extra",
    "iter_extra_fields",
    "parse_central_directory",
]
