"""Honest MCAP files with one big chunk (tests of #34 item 1): a `std_msgs/msg/String` topic
whose messages fill a single zstd, lz4 or uncompressed chunk of any size, written a window
at a time (the file is small on disk: the messages repeat), never held whole in memory."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path
from typing import IO, Any

import numpy as np

MAGIC = b"\x89MCAP0\r\n"
_RECORD = struct.Struct("<BQ")
_SCHEMA_TEXT = b"string data\n"


def _string(text: bytes) -> bytes:
    return struct.pack("<I", len(text)) + text


def _record(opcode: int, content: bytes) -> bytes:
    return _RECORD.pack(opcode, len(content)) + content


def _window(first: int, count: int, size: int) -> bytes:
    """`count` Message records from number `first` on, each with a CDR string of `size`
    bytes of data (encapsulation, length, text, NUL)."""
    text = size - 9
    head = struct.pack("<BQHIQQ", 5, 22 + size, 1, 0, 0, 0)
    body = b"\x00\x01\x00\x00" + struct.pack("<I", text + 1) + b"x" * text + b"\x00"
    record = len(head) + size
    out = np.frombuffer((head + body) * count, np.uint8).reshape(count, record).copy()
    numbers = np.arange(first, first + count, dtype=np.int64)
    out[:, 11:15] = (numbers % (1 << 32)).astype("<u4").view(np.uint8).reshape(count, 4)
    stamps = (1_700_000_000_000_000_000 + numbers * 1_000_000).astype("<u8")
    out[:, 15:23] = stamps.view(np.uint8).reshape(count, 8)
    out[:, 23:31] = stamps.view(np.uint8).reshape(count, 8)
    return out.tobytes()


def _compressor(compression: str, total: int) -> Any:
    if compression == "zstd":
        import zstandard

        return zstandard.ZstdCompressor(level=1).compressobj(size=total)
    if compression == "lz4":
        import lz4.frame

        return lz4.frame.LZ4FrameCompressor()
    return None


def write_big_chunk(path: Path, chunk_bytes: int, message_bytes: int = 1024,
                    compression: str = "zstd") -> int:  # fmt: skip
    """An MCAP file at `path` whose one chunk holds at least `chunk_bytes` of message
    records of `message_bytes` of data each; returns the number of messages."""
    record = 31 + message_bytes
    count = max(1, -(-chunk_bytes // record))
    total = count * record
    per_window = max(1, (4 << 20) // record)
    with path.open("wb") as out:
        out.write(MAGIC)
        out.write(_record(1, _string(b"ros2") + _string(b"nanorec tests")))
        schema = struct.pack("<H", 1) + _string(b"std_msgs/msg/String") + _string(b"ros2msg")
        out.write(_record(3, schema + _string(_SCHEMA_TEXT)))
        channel = struct.pack("<HH", 1, 1) + _string(b"/chatter") + _string(b"cdr")
        out.write(_record(4, channel + struct.pack("<I", 0)))
        _chunk(out, compression, count, message_bytes, per_window, total)
        out.write(_record(15, struct.pack("<I", 0)))  # Data End
        out.write(_record(2, struct.pack("<QQI", 0, 0, 0)))  # Footer
        out.write(MAGIC)
    return count


def _chunk(out: IO[bytes], compression: str, count: int, size: int, per_window: int,
           total: int) -> None:  # fmt: skip
    """The Chunk record, its records compressed a window at a time, its lengths and CRC
    written in place afterwards."""
    start = out.tell()
    name = compression.encode()
    end_time = 1_700_000_000_000_000_000 + (count - 1) * 1_000_000
    head = struct.pack("<QQQI", 1_700_000_000_000_000_000, end_time, total, 0)
    out.write(_RECORD.pack(6, 0) + head + _string(name) + struct.pack("<Q", 0))
    compressor = _compressor(compression, total)
    crc = written = 0
    if compression == "lz4":
        written += out.write(compressor.begin(total))
    for first in range(0, count, per_window):
        window = _window(first, min(per_window, count - first), size)
        crc = zlib.crc32(window, crc)
        piece = window if compressor is None else compressor.compress(window)
        written += out.write(piece)
    if compressor is not None:
        written += out.write(compressor.flush())
    end = out.tell()
    out.seek(start + 1)
    out.write(struct.pack("<Q", end - start - 9))
    out.seek(start + 9 + 24)
    out.write(struct.pack("<I", crc))
    out.seek(start + 9 + 28 + 4 + len(name))
    out.write(struct.pack("<Q", written))
    out.seek(end)
