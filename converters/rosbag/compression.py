"""Chunk compression: none, bz2, and ROS's "roslz4" (an LZ4 frame with fixed settings).

Rebuilding a compressed chunk from its records must give the stored bytes exactly; the
converter checks that per chunk and keeps the stored bytes where it does not (an LZ4 older
than r129 compresses differently: see the spec §3). lz4 needs the `lz4` package (the `ros`
extra); bz2 is in the standard library.
"""

from __future__ import annotations

import bz2
import importlib
import struct
from typing import Any, Final

from nanorec.errors import FormatError, UnsupportedError

KINDS: Final = ("none", "bz2", "lz4")
#: ROS's roslz4 frame header: magic, flags 0x64, block size 0x60 (1 MiB), header checksum.
LZ4_HEADER: Final = b"\x04\x22\x4d\x18\x64\x60\x85"
_LZ4_BLOCK: Final = 1 << 20
_U32: Final = struct.Struct("<I")


def _lz4(module: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError:
        raise UnsupportedError(
            "this bag has lz4 chunks: install the lz4 package (pip install 'nanorec[ros]')"
        ) from None


def decompress(kind: str, data: bytes, size: int, where: int) -> bytes:
    """The records of a chunk of `kind` whose header says `size` uncompressed bytes. A
    header that lies about the size is tolerated when the stream itself ends within a bound
    (the larger of 64x the stored bytes and 256 MiB, at most 4 GiB): output grows only as
    the stream really produces it, never to what a lying field claims.
    Raises `FormatError` naming `where` for a stream that does not decompress."""
    if kind == "none":
        return data
    if kind == "bz2":
        inflater: Any = bz2.BZ2Decompressor()
    elif kind == "lz4":
        inflater = _lz4("lz4.frame").LZ4FrameDecompressor()
    else:
        raise UnsupportedError(f"unknown chunk compression {kind!r}", offset=where)
    bound = min(max(size, len(data) * 64, 256 << 20), 4 << 30)
    try:
        parts = [inflater.decompress(data, size + 1)]
        produced = len(parts[0])
        while not inflater.eof and produced <= bound:
            more = inflater.decompress(b"", bound + 1 - produced)
            if not more and not inflater.eof:
                break
            parts.append(more)
            produced += len(more)
    except (OSError, ValueError, EOFError, RuntimeError) as error:
        raise FormatError(f"a {kind} chunk does not decompress ({error})", offset=where) from None
    if not inflater.eof or produced > bound:
        raise FormatError(f"a {kind} chunk's stream does not end", offset=where, expected=size)
    return parts[0] if len(parts) == 1 else b"".join(parts)


def decompress_prefix(kind: str, data: bytes, limit: int) -> bytes:
    """As much of a cut compressed chunk as decompresses (whole bz2/lz4 blocks), at most
    `limit` bytes; empty when nothing does."""
    try:
        if kind == "bz2":
            return bytes(bz2.BZ2Decompressor().decompress(data, limit))
        if kind == "lz4":
            frame = _lz4("lz4.frame")
            return bytes(frame.LZ4FrameDecompressor().decompress(data, max_length=limit))
    except (OSError, ValueError, EOFError, RuntimeError, UnsupportedError):
        pass
    return b""


def compress(kind: str, data: bytes) -> bytes:
    """`data` compressed as ROS writes a chunk of `kind`."""
    if kind == "none":
        return data
    if kind == "bz2":
        return bz2.compress(data, 9)
    if kind == "lz4":
        return roslz4(data)
    raise FormatError(f"unknown chunk compression {kind!r}")


def roslz4(data: bytes) -> bytes:
    """ROS's roslz4 stream: 1 MiB independent blocks (raw when compression does not shrink
    one), an end mark and the XXH32 content checksum."""
    block = _lz4("lz4.block")
    xxh = _xxh32(data)
    parts = [LZ4_HEADER]
    for start in range(0, len(data), _LZ4_BLOCK):
        chunk = data[start : start + _LZ4_BLOCK]
        packed = block.compress(chunk, mode="default", store_size=False)
        if len(packed) < len(chunk):
            parts += [_U32.pack(len(packed)), packed]
        else:
            parts += [_U32.pack(len(chunk) | 0x80000000), chunk]
    parts += [_U32.pack(0), _U32.pack(xxh)]
    return b"".join(parts)


def _xxh32(data: bytes) -> int:
    """XXH32 (seed 0) of `data`: from the content checksum lz4.frame computes."""
    frame = _lz4("lz4.frame")
    packed = frame.compress(
        data,
        block_size=frame.BLOCKSIZE_MAX1MB,
        block_linked=False,
        content_checksum=True,
        compression_level=0,
    )
    return int(_U32.unpack_from(packed, len(packed) - 4)[0])
