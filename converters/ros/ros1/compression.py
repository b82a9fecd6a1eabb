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
from collections.abc import Iterable, Iterator
from types import ModuleType
from typing import IO, Final, Protocol

from nanorec.errors import FormatError, UnsupportedError

KINDS: Final = ("none", "bz2", "lz4")
#: ROS's roslz4 frame header: magic, flags 0x64, block size 0x60 (1 MiB), header checksum.
LZ4_HEADER: Final = b"\x04\x22\x4d\x18\x64\x60\x85"
_LZ4_BLOCK: Final = 1 << 20
#: Decompressed data moves in pieces of this size (a multiple of the lz4 block).
PIECE: Final = 8 << 20
_U32: Final = struct.Struct("<I")


class _Inflater(Protocol):
    """What bz2's `BZ2Decompressor` and lz4's `LZ4FrameDecompressor` share."""

    def decompress(self, data: bytes, max_length: int = ..., /) -> bytes: ...

    @property
    def eof(self) -> bool: ...


def _lz4(module: str) -> ModuleType:
    try:
        return importlib.import_module(module)
    except ImportError:
        raise UnsupportedError(
            "this bag has lz4 chunks: install the lz4 package (pip install 'nanorec[ros]')"
        ) from None


def decompress_into(
    kind: str, data: bytes, size: int, where: int, out: IO[bytes], *, whole: bool = True
) -> int:
    """Decompress a chunk of `kind` whose header says `size` uncompressed bytes into `out`,
    a piece at a time (never held whole: a small stream may inflate to gigabytes); returns
    the bytes written. A header that lies about the size is tolerated when the stream
    itself ends within a bound (the larger of 64x the stored bytes and 256 MiB, at most the
    4 GiB a chunk's size field can say). `whole`: raise `FormatError` naming `where` for a
    stream that does not decompress or end; else (a cut chunk) stop quietly there."""
    if kind == "none":
        out.write(data)
        return len(data)
    if kind == "bz2":
        inflater: _Inflater = bz2.BZ2Decompressor()
    elif kind == "lz4":
        inflater = _lz4("lz4.frame").LZ4FrameDecompressor()
    else:
        raise UnsupportedError(f"unknown chunk compression {kind!r}", offset=where)
    bound = min(max(size, len(data) * 64, 256 << 20), 4 << 30)
    limit = bound + 1 if whole else bound  # one byte past the bound shows a stream past it
    produced = 0
    try:
        piece = inflater.decompress(data, min(PIECE, limit))
        while piece:
            out.write(piece)
            produced += len(piece)
            if inflater.eof or produced >= limit:
                break
            piece = inflater.decompress(b"", min(PIECE, limit - produced))
    except (OSError, ValueError, EOFError, RuntimeError) as error:
        if not whole:
            return produced
        raise FormatError(f"a {kind} chunk does not decompress ({error})", offset=where) from None
    if whole and (not inflater.eof or produced > bound):
        raise FormatError(f"a {kind} chunk's stream does not end", offset=where, expected=size)
    return produced


def matches(kind: str, pieces: Iterable[bytes], stored: bytes) -> bool:
    """Whether the data in `pieces` (each but the last a multiple of 1 MiB) compressed as
    ROS writes a chunk of `kind` gives `stored`, compared as it is produced."""
    done = 0
    for part in _stream(kind, pieces):
        if stored[done : done + len(part)] != part:
            return False
        done += len(part)
    return done == len(stored)


def _stream(kind: str, pieces: Iterable[bytes]) -> Iterator[bytes]:
    if kind == "bz2":
        packer = bz2.BZ2Compressor(9)
        for piece in pieces:
            yield packer.compress(piece)
        yield packer.flush()
    elif kind == "lz4":
        yield from _roslz4_stream(pieces)
    else:
        yield b"".join(pieces)


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
    return b"".join(_roslz4_stream([data]))


def _roslz4_stream(pieces: Iterable[bytes]) -> Iterator[bytes]:
    block = _lz4("lz4.block")
    frame = _lz4("lz4.frame")
    # the XXH32 (seed 0) of the content: from the checksum an lz4 frame ends with
    checksum = frame.LZ4FrameCompressor(
        block_size=frame.BLOCKSIZE_MAX1MB,
        block_linked=False,
        content_checksum=True,
        compression_level=0,
    )
    checksum.begin()
    yield LZ4_HEADER
    for piece in pieces:
        checksum.compress(piece)
        for start in range(0, len(piece), _LZ4_BLOCK):
            chunk = piece[start : start + _LZ4_BLOCK]
            packed = block.compress(chunk, mode="default", store_size=False)
            if len(packed) < len(chunk):
                yield _U32.pack(len(packed)) + packed
            else:
                yield _U32.pack(len(chunk) | 0x80000000) + chunk
    yield _U32.pack(0) + checksum.flush()[-4:]
