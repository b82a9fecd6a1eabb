"""The `.pbstream` container: magic, then (u64 size, gzip member) records (spec §1-§2).

Framing never trusts a size: each is bounded by the bytes left, and a member is inflated
with a bound on its output (what deflate can make of its size, what its gzip trailer
declares, and `MAX_PAYLOAD`), so a lying size or a gzip bomb costs what the file holds, not
what it claims; a larger record is never inflated whole but kept as its member bytes.
Converting inflates only the start of a member (`peek_member`); readers inflate it whole
(`inflate_member`, `entry_payload`). `build_member` writes a member with Cartographer's
settings (boost gzip at level 1: header `1f 8b 08 00 00000000 04 ff`, raw deflate level 1,
window 2^15, memLevel 8): for new streams (subsets) and archives that hold payloads.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Final

from nanorec.buffers import Buffer
from nanorec.errors import FormatError

MAGIC: Final = bytes.fromhex("db01f55b7b1f1d7b")
#: The 10 header bytes of every member Cartographer writes (mtime 0, XFL 4, OS 255).
GZIP_HEADER: Final = bytes.fromhex("1f8b08000000000004ff")
SIZE: Final = struct.Struct("<Q")
_TRAILER: Final = struct.Struct("<II")
#: Deflate expands at most ~1032:1; a member claiming more output is refused.
_MAX_RATIO: Final = 1040
#: The largest payload held as one archive message. Cartographer's records are a few MB
#: (tens for a large pose graph or 3D submap); protobuf's own limit, 2 GiB, would let one
#: record take gigabytes of memory to convert. Larger records are kept compressed.
MAX_PAYLOAD: Final = 256 << 20

_FTEXT, _FHCRC, _FEXTRA, _FNAME, _FCOMMENT = 1, 2, 4, 8, 16


@dataclass(slots=True)  # not frozen: made once a record, frozen costs ~1 us
class Frame:
    """One complete record: its size prefix at `offset`, its member at `offset + 8`."""

    offset: int
    size: int

    @property
    def start(self) -> int:
        return self.offset + 8

    @property
    def end(self) -> int:
        return self.offset + 8 + self.size


@dataclass(slots=True)  # not frozen: made once a record, frozen costs ~1 us
class Cut:
    """The stream ends inside a record: bytes from `offset` on are the raw tail."""

    offset: int
    reason: str


def iter_frames(buf: Buffer, start: int = len(MAGIC)) -> Iterator[Frame | Cut]:
    """The records of `buf` from `start`, in order; a `Cut` last when the file is cut."""
    total = len(buf)
    pos = start
    while pos < total:
        if total - pos < SIZE.size:
            yield Cut(pos, f"{total - pos} bytes left where an 8-byte record size belongs")
            return
        (size,) = SIZE.unpack_from(buf, pos)
        left = total - pos - SIZE.size
        if size > left:
            yield Cut(pos, f"the record size says {size} bytes but only {left} follow")
            return
        yield Frame(pos, size)
        pos += SIZE.size + size


def build_member(payload: bytes) -> bytes:
    """`payload` as Cartographer writes it: one gzip member at the fastest level."""
    deflater = zlib.compressobj(1, zlib.DEFLATED, -15, 8, zlib.Z_DEFAULT_STRATEGY)
    body = deflater.compress(payload) + deflater.flush()
    trailer = _TRAILER.pack(zlib.crc32(payload), len(payload) & 0xFFFF_FFFF)
    return GZIP_HEADER + body + trailer


def _header_length(member: bytes, offset: int) -> int:
    """Length of the gzip header at the start of `member` (any flags), checked."""
    if len(member) < 18:
        raise FormatError(f"a {len(member)}-byte record is too short to be gzip", offset=offset)
    if member[0] != 0x1F or member[1] != 0x8B:
        raise FormatError("a record is not gzip data (no 1f 8b)", offset=offset)
    if member[2] != 8:
        raise FormatError(f"gzip compression method {member[2]} is not deflate", offset=offset)
    flags = member[3]
    pos = 10
    if flags & _FEXTRA:
        if pos + 2 > len(member):
            raise FormatError("a gzip header is cut in its extra field", offset=offset)
        pos += 2 + int.from_bytes(member[pos : pos + 2], "little")
    for flag in (_FNAME, _FCOMMENT):
        if flags & flag:
            zero = member.find(b"\0", pos)
            if zero < 0:
                raise FormatError("a gzip header string has no end", offset=offset)
            pos = zero + 1
    if flags & _FHCRC:
        pos += 2
    if pos + 8 > len(member):
        raise FormatError("a gzip header runs past its record", offset=offset)
    return pos


def declared_size(member: bytes) -> int:
    """The payload size a member's gzip trailer declares (ISIZE; 0 when it has none)."""
    return int.from_bytes(member[-4:], "little") if len(member) >= 18 else 0


#: Members that may inflate to more than this are inflated twice: first in steps keeping
#: nothing, so a bomb is refused without its output ever being held whole.
_STREAM_ABOVE: Final = 16 << 20
_STEP: Final = 1 << 20


def _past(limit: int, declared: int, offset: int) -> FormatError:
    return FormatError(
        f"a record inflates past {limit} bytes (its gzip trailer declares {declared})",
        offset=offset,
    )


def _inflated_size(deflated: memoryview, limit: int, declared: int, offset: int) -> None:
    """Inflate `deflated` in steps, keeping nothing; FormatError once it passes `limit`."""
    inflater = zlib.decompressobj(-15)
    produced = 0
    data: bytes | memoryview = deflated
    while not inflater.eof:
        produced += len(chunk := inflater.decompress(data, _STEP))
        if produced > limit:
            raise _past(limit, declared, offset)
        data = inflater.unconsumed_tail
        if not chunk and not data:
            return


def inflate_member(member: bytes, offset: int) -> bytes:
    """The payload of one gzip member (`offset`: where it starts in the file, for errors).

    The member must be exactly one gzip member with a valid CRC-32 and ISIZE; its output is
    bounded by what deflate can produce from its size. Raises `FormatError` otherwise.
    """
    pos = _header_length(member, offset)
    declared = declared_size(member)
    if declared > MAX_PAYLOAD:
        raise FormatError(
            f"a record declares {declared} bytes inflated, more than the {MAX_PAYLOAD} "
            "nanorec holds in one message",
            offset=offset,
        )
    # ISIZE is the length mod 2**32, exact below MAX_PAYLOAD: more output is a lie.
    limit = min(_MAX_RATIO * len(member) + 1024, declared)
    try:
        if limit > _STREAM_ABOVE:  # a big claim: check it keeping nothing before holding it
            _inflated_size(memoryview(member)[pos:], limit, declared, offset)
        inflater = zlib.decompressobj(-15)
        payload = inflater.decompress(memoryview(member)[pos:], limit + 1)
    except zlib.error as error:
        raise FormatError(f"a record's deflate data is damaged ({error})", offset=offset) from None
    if len(payload) > limit:
        raise _past(limit, declared, offset)
    if not inflater.eof:
        raise FormatError("a record's deflate stream ends early", offset=offset)
    _check_trailer(inflater.unused_data, payload, offset)
    return payload


def _check_trailer(rest: bytes, payload: bytes, offset: int) -> None:
    """FormatError unless `rest` (what follows the deflate data) is exactly the gzip trailer
    of `payload`."""
    if len(rest) != 8:
        raise FormatError(
            f"a record's gzip member is followed by {len(rest) - 8} more bytes inside it"
            if len(rest) > 8
            else "a record's gzip trailer is cut",
            offset=offset,
        )
    crc, isize = _TRAILER.unpack(rest)
    if crc != zlib.crc32(payload):
        raise FormatError("a record fails its gzip CRC-32", offset=offset)
    if isize != len(payload) & 0xFFFF_FFFF:
        raise FormatError("a record's gzip length (ISIZE) is wrong", offset=offset)


def entry_payload(entry: dict[str, Any]) -> bytes | None:
    """The payload of an archive record entry: its `member` inflated whole and checked
    (CRC-32, ISIZE; `FormatError` when damaged), or its `payload` (archives written before
    records kept their members: the payload, and a member only where it did not rebuild).
    None when the entry holds neither."""
    payload = entry.get("payload")
    if isinstance(payload, bytes):
        return payload
    member = entry.get("member")
    return inflate_member(member, 0) if isinstance(member, bytes) else None


def peek_payload(member: bytes, length: int = 256) -> bytes:
    """The first `length` payload bytes of a member, without inflating the rest (b"" when
    they cannot be read)."""
    try:
        pos = _header_length(member, 0)
        return zlib.decompressobj(-15).decompress(memoryview(member)[pos:], length)
    except (FormatError, zlib.error):
        return b""


def peek_member(member: bytes, offset: int, length: int, declared: int) -> bytes:
    """The first `length` bytes of a member's payload, checked as far as they go: the gzip
    header, the size its trailer declares (`MAX_PAYLOAD`), the deflate data inflated so far,
    and, when the payload is not longer than `length` (inflated whole), its CRC-32 and ISIZE.
    Raises `FormatError` for what it finds wrong. This is all `convert` inflates of a record:
    a record larger than `length` is checked whole (CRC) when it is read. `declared`: the
    member's `declared_size`."""
    pos = 10 if member[:10] == GZIP_HEADER and len(member) >= 18 else _header_length(member, offset)
    if declared > MAX_PAYLOAD:
        raise FormatError(
            f"a record declares {declared} bytes inflated, more than the {MAX_PAYLOAD} "
            "nanorec holds in one message",
            offset=offset,
        )
    inflater = zlib.decompressobj(-15)
    try:
        prefix: bytes = inflater.decompress(memoryview(member)[pos:], length)
    except zlib.error as error:
        raise FormatError(f"a record's deflate data is damaged ({error})", offset=offset) from None
    if inflater.eof:
        _check_trailer(inflater.unused_data, prefix, offset)
    elif len(prefix) < length:
        raise FormatError("a record's deflate stream ends early", offset=offset)
    return prefix


__all__ = [
    "GZIP_HEADER",
    "MAGIC",
    "SIZE",
    "Cut",
    "Frame",
    "build_member",
    "declared_size",
    "entry_payload",
    "inflate_member",
    "iter_frames",
    "peek_member",
    "peek_payload",
]
