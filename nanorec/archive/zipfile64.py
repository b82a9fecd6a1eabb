"""A zip member's local header, and the field encodings it shares with the central directory.

Python's `zipfile` supplies the byte layouts, signatures and version numbers (used here); the
rest it cannot do for us: it reads only through a seekable file object (`ZipExtFile.seek`
costs O(offset) before Python 3.12), reports `BadZipFile` without saying where, and switches
to zip64 by its own 2 GiB rule. nanorec reads archives through `mmap` and writes them by
streaming, so this module parses the local file header (APPNOTE 4.3.7) at any offset of a
buffer, raising `TruncatedError`/`ArchiveError` that name the offset (local headers are all a
crashed writer leaves for `nanorec recover`), and builds it with the zip64 extra field (4.5.3)
chosen per value: a header is a frozen dataclass of *logical* values (true sizes and offsets)
that `build()` encodes and `parse()` resolves back. Its name, extra-field, bounds and
signature helpers serve `nanorec.archive.zipdirectory` (central directory and end records) too.
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
    ZIP_STORED,
    stringFileHeader,
    structFileHeader,
)

from nanorec.archive.source import RangeBuffer
from nanorec.errors import ArchiveError, TruncatedError

#: Anything the parsers accept: they only take its length and slice it.
Buffer = bytes | bytearray | memoryview | mmap.mmap | RangeBuffer

ZIP64_EXTRA_ID: Final = 0x0001

#: General-purpose flag bits nanorec looks at.
FLAG_ENCRYPTED: Final = 0x0001
FLAG_DATA_DESCRIPTOR: Final = 0x0008
FLAG_UTF8: Final = 0x0800

#: 1980-01-01 00:00:00, the zip epoch; NanoVer's writer uses it too (fixed dates make
#: archives byte-reproducible).
DOS_DATE_1980: Final = (0 << 9) | (1 << 5) | 1
DOS_TIME_0: Final = 0

U32_MAX: Final = 0xFFFF_FFFF

#: The local header's fixed 30 bytes, as `zipfile` spells them (the signature as 4 bytes,
#: "version needed" as a version byte and a system byte).
LOCAL_HEADER: Final = struct.Struct(structFileHeader)
EXTRA_HEADER: Final = struct.Struct("<HH")
U64: Final = struct.Struct("<Q")


def need_bytes(buf_len: int, offset: int, wanted: int, what: str) -> None:
    """Raise `TruncatedError` unless `wanted` bytes from `offset` fit in a `buf_len` buffer."""
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


def encode_name(name: str) -> tuple[bytes, int]:
    """The name bytes and the UTF-8 flag they need (none for plain ASCII, as zipfile does)."""
    try:
        return name.encode("ascii"), 0
    except UnicodeEncodeError:
        return name.encode("utf-8"), FLAG_UTF8


def decode_name(raw: bytes, flags: int, offset: int) -> str:
    """A member name as stored: UTF-8 when flagged, else cp437 (as zipfile reads it)."""
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


def split_zip64_extra(extra: bytes, offset: int) -> tuple[bytes | None, bytes]:
    """Separate the zip64 field's data from the other extra fields (kept raw, in order)."""
    zip64: bytes | None = None
    others = bytearray()
    for header_id, data in iter_extra_fields(extra, offset):
        if header_id == ZIP64_EXTRA_ID and zip64 is None:
            zip64 = data
        else:
            others += EXTRA_HEADER.pack(header_id, len(data)) + data
    return zip64, bytes(others)


def resolve_zip64(
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
        name, _ = encode_name(self.name)
        zip64_len = EXTRA_HEADER.size + 16 if self._uses_zip64() else 0
        return LOCAL_HEADER.size + len(name) + zip64_len + len(self.extra)

    def _uses_zip64(self) -> bool:
        return self.zip64 or self.compressed_size >= U32_MAX or self.uncompressed_size >= U32_MAX

    def build(self) -> bytes:
        """The header's bytes (30 fixed bytes, name, extra)."""
        name, utf8 = encode_name(self.name)
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
        need_bytes(len(buf), offset, LOCAL_HEADER.size, "local file header")
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
        ) = LOCAL_HEADER.unpack(buf[offset : offset + LOCAL_HEADER.size])
        if signature != stringFileHeader:
            raise bad_signature(
                "no local file header signature where the central directory points",
                offset,
                stringFileHeader,
                signature,
            )
        start = offset + LOCAL_HEADER.size
        need_bytes(len(buf), start, name_len + extra_len, "local file header name and extra")
        name = decode_name(bytes(buf[start : start + name_len]), flags, start)
        extra = bytes(buf[start + name_len : start + name_len + extra_len])
        zip64, others = split_zip64_extra(extra, start + name_len)
        if zip64 is not None and (usize == U32_MAX or csize == U32_MAX):
            # In a local header the zip64 field holds both sizes, uncompressed first.
            usize, csize = resolve_zip64([usize, csize], [U32_MAX, U32_MAX], zip64, offset, name)
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
        need_bytes(len(buf), offset, LOCAL_HEADER.size, "local file header")
        fields = LOCAL_HEADER.unpack(buf[offset : offset + LOCAL_HEADER.size])
        if fields[0] != stringFileHeader:
            raise bad_signature(
                "no local file header signature", offset, stringFileHeader, fields[0]
            )
        name_len: int = fields[-2]
        extra_len: int = fields[-1]
        return offset + LOCAL_HEADER.size + name_len + extra_len


__all__ = [
    "Buffer",
    "LocalHeader",
    "bad_signature",
    "build_zip64_extra",
    "decode_name",
    "encode_name",
    "iter_extra_fields",
    "need_bytes",
    "resolve_zip64",
    "split_zip64_extra",
]
