"""How far a zstd frame read from a bag may inflate (why: rosbag2 compresses whole storage
files and single messages with zstd, and a frame's few bytes can claim or really hold
gigabytes; every inflation is bounded by what those bytes can plausibly hold, so a bomb fails
with a `FormatError` in bounded time and memory, never a `MemoryError` or a full disk).

zstd cannot expand more than `MAX_RATIO` times (an RLE block, 3 header bytes and 1 byte of
data, gives at most 128 KiB: 32768x), so a frame inflating further is not zstd's output.
"""

from __future__ import annotations

import struct
from types import ModuleType
from typing import IO, Final

from nanorec.buffers import Buffer
from nanorec.errors import FormatError

from .storage import MCAP_MAGIC, SQLITE_MAGIC

#: zstd's largest possible expansion, with room to spare (32768x is its real bound).
MAX_RATIO: Final = 1 << 16
#: What a few bytes of frame header and block framing may add, whatever the ratio.
SLACK: Final = 1 << 20
#: The largest message nanorec inflates, whatever its frame says: far beyond any recorded
#: message (a 4K point cloud is tens of MiB), refused with a clear error past it.
MAX_MESSAGE: Final = 1 << 32
#: Zero bytes after an MCAP magic that no file starts with (a Header record's opcode is 1).
ZERO_HEAD: Final = 64
_SQLITE_HEADER: Final = struct.Struct(">16sH6xII60xI")


def ratio_limit(compressed: int) -> int:
    """The most `compressed` bytes of zstd can inflate to."""
    return MAX_RATIO * compressed + SLACK


def sqlite_size(head: bytes) -> int | None:
    """The size an SQLite database's 100-byte header declares (page size times the
    in-header page count, when the header's valid-for counter says it is current), None
    when `head` is not an SQLite header or its count is not current. FormatError for an
    SQLite header whose page size is impossible (such a file is not a database)."""
    if len(head) < 100 or not head.startswith(SQLITE_MAGIC):
        return None
    _, page, changes, pages, valid_for = _SQLITE_HEADER.unpack_from(head)
    size = 65536 if page == 1 else page
    if size < 512 or size > 65536 or size & (size - 1):
        raise FormatError(f"SQLite header declares page size {page}: not a database", offset=16)
    if not pages or changes != valid_for:
        return None
    return int(size * pages)


def inflate_message(zstandard: ModuleType, data: bytes, number: int) -> bytes:
    """A message's zstd frame (rosbag2's MESSAGE compression) inflated a MiB at a time,
    refused when it declares or gives more than its bytes can hold or than `MAX_MESSAGE`, or
    another size than it declares (a lying header costs what the frame really holds, never
    what it claims)."""
    limit = min(ratio_limit(len(data)), MAX_MESSAGE)
    try:
        declared = zstandard.frame_content_size(data)
    except zstandard.ZstdError as error:
        raise FormatError(f"message {number}: zstd: {error}") from None
    if declared > limit:
        raise FormatError(
            f"message {number}: its {len(data)}-byte zstd frame declares {declared} bytes, "
            f"more than it can hold (at most {limit}): refused",
            expected=limit,
            actual=declared,
        )
    if declared >= 0:  # rosbag2's ZSTD_compress writes it
        try:
            # one bytes object of the declared size (its pages are only in memory once
            # written: a lying header costs what the frame gives), and no join of pieces
            whole: bytes = zstandard.ZstdDecompressor().decompress(data)
        except zstandard.ZstdError as error:
            raise FormatError(
                f"message {number}: zstd frame does not give the {declared} bytes "
                f"it declares: {error}",
                expected=declared,
            ) from None
        return whole
    bound = limit
    pieces: list[bytes] = []
    produced = 0
    try:
        with zstandard.ZstdDecompressor().stream_reader(memoryview(data)) as reader:
            while produced <= bound and (block := reader.read(1 << 20)):
                pieces.append(block)
                produced += len(block)
    except zstandard.ZstdError as error:
        raise FormatError(f"message {number}: zstd: {error}") from None
    if produced > bound:
        raise FormatError(
            f"message {number}: zstd frame gives {'more than ' * (produced > bound)}"
            f"{produced} bytes, not the {bound} it may: refused",
            expected=bound,
            actual=produced,
        )
    return pieces[0] if len(pieces) == 1 else b"".join(pieces)


def _declared(head: bytes) -> int:
    """The most a storage file starting with `head` may hold by its own header: an SQLite
    header's size; FormatError for MCAP's magic followed by zeros (no record starts with
    them, and walking them takes minutes)."""
    if (
        head.startswith(MCAP_MAGIC)
        and len(head) >= 8 + ZERO_HEAD
        and not any(head[8 : 8 + ZERO_HEAD])
    ):
        raise FormatError("MCAP magic followed by zeros: not MCAP", offset=8)
    declared = sqlite_size(head[:100])
    return declared if declared is not None else 1 << 62


def inflate_file(zstandard: ModuleType, raw: Buffer, name: str, target: IO[bytes]) -> None:
    """A storage file compressed whole (rosbag2's FILE mode, `<file>.zstd`) inflated into
    `target`, a MiB at a time. Refused with a FormatError once it gives more than its bytes
    can hold, or more than an SQLite header at its start declares (page size times pages:
    rosbag2 compresses a closed database, whose header is current)."""
    limit = ratio_limit(len(raw))
    written = 0
    try:
        with zstandard.ZstdDecompressor().stream_reader(memoryview(raw)) as reader:
            while block := reader.read(1 << 20):
                if not written:
                    limit = min(limit, _declared(block))
                target.write(block)
                written += len(block)
                if written > limit:
                    raise FormatError(
                        f"inflates past {limit} bytes, more than it can hold: refused",
                        expected=limit,
                    )
    except zstandard.ZstdError as error:
        raise FormatError(f"{name}: zstd: {error}", offset=0) from None
    except FormatError as error:
        raise FormatError(f"{name}: {error.message}", offset=error.offset) from None
    target.flush()
