"""MessagePack wire details nanorec relies on: container headers and the embedded timestamp.

NanoVer keeps a message's timestamp only in `index.msgpack`, which is written at close, so a
killed recorder loses every timestamp. nanorec appends one reserved entry, `"nanorec.t"`
(integer microseconds), at the end of every message map it writes. That keeps
`messages.msgpack` a plain sequence of maps any msgpack tool can read, keeps the file readable
by NanoVer (an extra top-level key is ignored), and lets `recover` rebuild the index from the
messages alone. Producers that pack their own messages (`ArchiveWriter.write_packed`) get the
entry added by patching the map header in place, which is what this module does without
decoding the message.
"""

from __future__ import annotations

import struct
import zlib
from typing import Any, Final

import msgpack

from nanorec.errors import FormatError

#: The two members every archive has, as NanoVer names them: the messages back to back, and
#: their index.
MESSAGES_MEMBER: Final = "messages.msgpack"
INDEX_MEMBER: Final = "index.msgpack"

#: Reserved top-level key holding a message's timestamp in integer microseconds.
TIMESTAMP_KEY: Final = "nanorec.t"
TIMESTAMP_KEY_PACKED: Final = msgpack.packb(TIMESTAMP_KEY)

_U8: Final = struct.Struct(">B")
_U16: Final = struct.Struct(">BH")
_U32: Final = struct.Struct(">BI")
_U32_ENTRY: Final = struct.Struct(f">{len(TIMESTAMP_KEY_PACKED)}sBI")
_U64_ENTRY: Final = struct.Struct(f">{len(TIMESTAMP_KEY_PACKED)}sBQ")

FIXMAP_MAX: Final = 15
MAP16_MAX: Final = 0xFFFF
MAP32_MAX: Final = 0xFFFF_FFFF


def map_header(count: int) -> bytes:
    """The shortest msgpack header for a map of `count` entries."""
    if count <= FIXMAP_MAX:
        return bytes((0x80 | count,))
    if count <= MAP16_MAX:
        return _U16.pack(0xDE, count)
    if count <= MAP32_MAX:
        return _U32.pack(0xDF, count)
    raise FormatError(f"a msgpack map holds at most {MAP32_MAX} entries, not {count}")


def array_header(count: int) -> bytes:
    """The shortest msgpack header for an array of `count` items."""
    if count <= 15:
        return bytes((0x90 | count,))
    if count <= 0xFFFF:
        return _U16.pack(0xDC, count)
    if count <= 0xFFFF_FFFF:
        return _U32.pack(0xDD, count)
    raise FormatError(f"a msgpack array holds at most {0xFFFF_FFFF} items, not {count}")


def bin_header(size: int) -> bytes:
    """The shortest msgpack header for a bin (raw bytes) of `size` bytes."""
    if size <= 0xFF:
        return _U8.pack(0xC4) + _U8.pack(size)
    if size <= 0xFFFF:
        return _U16.pack(0xC5, size)
    if size <= 0xFFFF_FFFF:
        return _U32.pack(0xC6, size)
    raise FormatError(f"a msgpack bin holds at most {0xFFFF_FFFF} bytes, not {size}")


def read_map_header(buf: bytes | memoryview, offset: int = 0) -> tuple[int, int]:
    """`(count, header_length)` of the msgpack map starting at `offset`.

    Raises `FormatError` if the bytes there do not start a map.
    """
    if offset >= len(buf):
        raise FormatError("expected a msgpack map, found the end of the data", offset=offset)
    first = buf[offset]
    if 0x80 <= first <= 0x8F:
        return first & 0x0F, 1
    if first == 0xDE and offset + 3 <= len(buf):
        return int.from_bytes(buf[offset + 1 : offset + 3], "big"), 3
    if first == 0xDF and offset + 5 <= len(buf):
        return int.from_bytes(buf[offset + 1 : offset + 5], "big"), 5
    raise FormatError(
        "a message must be a msgpack map", offset=offset, expected="map", actual=f"0x{first:02x}"
    )


def read_array_header(buf: bytes | memoryview, offset: int = 0) -> tuple[int, int]:
    """`(count, header_length)` of the msgpack array starting at `offset`.

    Raises `FormatError` if the bytes there do not start an array.
    """
    if offset >= len(buf):
        raise FormatError("expected a msgpack array, found the end of the data", offset=offset)
    first = buf[offset]
    if 0x90 <= first <= 0x9F:
        return first & 0x0F, 1
    if first == 0xDC and offset + 3 <= len(buf):
        return int.from_bytes(buf[offset + 1 : offset + 3], "big"), 3
    if first == 0xDD and offset + 5 <= len(buf):
        return int.from_bytes(buf[offset + 1 : offset + 5], "big"), 5
    raise FormatError(
        "expected a msgpack array", offset=offset, expected="array", actual=f"0x{first:02x}"
    )


def timestamp_entry(timestamp_us: int) -> bytes:
    """The packed `"nanorec.t": timestamp_us` map entry appended to each message."""
    if 0 <= timestamp_us <= 0xFFFF_FFFF:
        return _U32_ENTRY.pack(TIMESTAMP_KEY_PACKED, 0xCE, timestamp_us)
    if 0 <= timestamp_us <= 0xFFFF_FFFF_FFFF_FFFF:  # Unix times in µs: as msgpack packs them
        return _U64_ENTRY.pack(TIMESTAMP_KEY_PACKED, 0xCF, timestamp_us)
    return TIMESTAMP_KEY_PACKED + msgpack.packb(timestamp_us)


def timestamp_patch(packed: bytes | memoryview, timestamp_us: int) -> tuple[bytes, int, bytes]:
    """How to add the timestamp entry to a packed map, without decoding or copying it.

    Returns `(header, body_start, tail)`: the stored message is `header`, then
    `packed[body_start:]`, then `tail`. The header grows when the count crosses a header
    size (fixmap with 15 entries becomes map16, map16 with 65535 becomes map32).

    Raises `FormatError` if `packed` does not start with a map header.
    """
    count, header_len = read_map_header(packed)
    return map_header(count + 1), header_len, timestamp_entry(timestamp_us)


def embed_timestamp(packed: bytes | memoryview, timestamp_us: int) -> bytes:
    """`packed` (a msgpack map) with the `"nanorec.t"` entry appended. See `timestamp_patch`."""
    header, body_start, tail = timestamp_patch(packed, timestamp_us)
    return header + bytes(packed[body_start:]) + tail


__all__ = [
    "TIMESTAMP_KEY",
    "array_header",
    "bin_header",
    "embed_timestamp",
    "map_header",
    "read_array_header",
    "read_map_header",
    "timestamp_entry",
    "timestamp_patch",
]


#: The largest expansion `inflate_bounded` accepts for data whose size nothing records.
MAX_INFLATE_RATIO = 200
#: What a deflated archive member may inflate to beyond that ratio (small members).
INFLATE_SLACK = 1 << 20


def inflates_acceptably(inflated: int, deflated: int) -> bool:
    """Whether a reader accepts `deflated` bytes that claim to inflate to `inflated` (more
    than that is refused as a zip bomb; a writer stores such a member instead)."""
    return inflated <= MAX_INFLATE_RATIO * deflated + INFLATE_SLACK


def inflate_bounded(data: bytes, limit: int, what: str) -> bytes:
    """`zlib.decompress(data)`, refusing to produce more than `limit` bytes (a zip bomb, or
    a damaged stream, fails fast with bounded memory). Raises `FormatError` naming `what`."""
    inflater = zlib.decompressobj()
    try:
        out = inflater.decompress(data, limit + 1)
    except zlib.error as error:
        raise FormatError(f"{what} does not inflate ({error})") from None
    if len(out) > limit:
        raise FormatError(f"{what} inflates past {limit} bytes: refused", expected=limit)
    if not inflater.eof:
        raise FormatError(f"{what} ends before its compressed stream does")
    return out


#: What a side member (`ArchiveWriter.add_meta`) may inflate to beyond its source's size.
META_SLACK: Final = 64 << 20
#: The bound for a side member when no source size was recorded: this many times the archive.
META_RATIO_UNKNOWN: Final = 64
#: zlib level of a side member (`pack_meta`).
META_LEVEL: Final = 6


def pack_meta(value: Any, level: int = META_LEVEL) -> bytes:
    """A side member's bytes: `value` as msgpack, zlib-deflated at `level` (what
    `unpack_meta` reads)."""
    return zlib.compress(msgpack.packb(value), level)


def meta_limit(source_size: object, archive_size: int) -> int:
    """The most a side member may inflate to (why: an archive is input too; a hostile one
    must fail fast, not allocate): the recorded source's size plus slack, since a side member
    describes part of its source; without a recorded size, a multiple of the archive's."""
    if isinstance(source_size, int) and not isinstance(source_size, bool) and source_size >= 0:
        return source_size + META_SLACK
    return archive_size * META_RATIO_UNKNOWN + META_SLACK


def unpack_meta(data: bytes, limit: int, name: str) -> Any:
    """The value `pack_meta` packed, inflated to at most `limit` bytes; `FormatError` naming
    member `name` when it does not inflate or is not one msgpack value."""
    packed = inflate_bounded(data, limit, f"damaged {name} member:")
    try:
        return msgpack.unpackb(packed, strict_map_key=False)
    except (ValueError, TypeError, msgpack.UnpackException) as error:
        raise FormatError(f"damaged {name} member: not msgpack ({error})") from None
