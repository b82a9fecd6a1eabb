"""A big MCAP chunk's records read a window at a time (#34 item 1).

Why: a chunk is inflated whole before its records are walked, which is right for rosbag2's
~1 MiB chunks, but a writer may be told to make chunks of gigabytes, and a 1.5 GiB chunk
then costs several times that in memory. A chunk whose records pass `WHOLE_CHUNK` is
decompressed as a stream instead: `chunk_windows` gives its complete records a window of
~`WINDOW` bytes at a time (a record cut by the window's end is carried to the next; one
larger than the window is read whole, never past its declared length, itself bounded by
the chunk's declared size and `mcap_records.chunk_limit`), with the checks the whole walk
makes (size, CRC, records filling the chunk, message records long enough), failing with a
`FormatError` where the whole walk would.

Such a chunk is never compressed again (`mcap_chunks`): compressing its records back to
the writer's bytes needs them whole (libmcap and the Python writer compress a chunk in one
call, and a stream compressor gives other bytes), so a compressed big chunk is kept as it
is in the skeleton, its messages still read.
"""

from __future__ import annotations

import zlib
from array import array
from collections.abc import Iterator
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from nanorec.buffers import Buffer
from nanorec.errors import FormatError, NanorecError

from . import mcap_records as rec
from .mcap_index import indexed_starts, walk_records
from .mcap_skeleton import MESSAGE_HEAD
from .storage import RELEASE_BYTES, release_pages

if TYPE_CHECKING:  # zstandard is optional (the `ros` extra)
    from zstandard import ZstdDecompressionReader

#: Records a chunk may decompress to and still be read whole (and compressed again).
WHOLE_CHUNK = 64 << 20
#: Decompressed bytes walked at a time in a bigger chunk.
WINDOW = 8 << 20
#: Compressed bytes handed to a decompressor at a time.
_INPUT = 1 << 20


def is_big(chunk: rec.ChunkHead) -> bool:
    """Whether `chunk` is read in windows rather than whole."""
    return chunk.uncompressed_size > WHOLE_CHUNK


def record_starts(
    records: Buffer, empty_run: int, offsets: NDArray[np.int64] | None = None
) -> tuple[NDArray[np.int64], int]:
    """Where each complete record of `records` starts, and where the last one ends (the
    walk of `mcap_file._walk`: it stops at a record running past the end, or where
    `empty_run` empty records' worth of zeros begins). `offsets`: where the chunk's
    MessageIndex records say its messages are (`mcap_index`), checked and used when right."""
    if offsets is not None:
        found = indexed_starts(records, offsets, empty_run)
        if found is not None:
            return found
    starts = array("q")
    pos = walk_records(records, 0, len(records), empty_run, starts)
    return np.frombuffer(starts, np.int64) if starts else np.zeros(0, np.int64), pos


class _Inflater:
    """A chunk's records as a stream: `read(n)` gives the next `min(n, left)` bytes, never
    more than the chunk declares; FormatError when the stream is damaged, ends early or
    goes on past the chunk's declared size."""

    def __init__(self, compression: str, data: memoryview, size: int) -> None:
        if compression and size > rec.chunk_limit(compression, len(data)):
            raise FormatError("MCAP chunk declares an impossible uncompressed size", actual=size)
        self.compression, self.data, self.left = compression, data, size
        self.taken = 0  # compressed bytes handed to an lz4 decompressor (or read, if none)
        self._zstd: ZstdDecompressionReader | None = None
        self._lz4_frame: rec.LZ4Decompressor = None
        if compression == "zstd":
            zstandard = rec.load("zstandard")
            declared = zstandard.frame_content_size(data)
            if declared not in (size, -1):
                raise FormatError("zstd frame size differs from the chunk's", actual=declared)
            self._zstd = zstandard.ZstdDecompressor().stream_reader(
                data, read_size=_INPUT, read_across_frames=False
            )
        elif compression == "lz4":
            self._lz4_frame = rec.load("lz4.frame").LZ4FrameDecompressor()
        elif compression:
            raise FormatError(f"unsupported MCAP chunk compression {compression!r}")
        elif len(data) != size:
            raise FormatError("uncompressed MCAP chunk of another size")

    def read(self, wanted: int) -> bytes | bytearray | memoryview:
        wanted = min(wanted, self.left)
        try:
            out = self._read(wanted)
            if len(out) == wanted and wanted == self.left:
                self._check_end()
        except NanorecError:
            raise
        except Exception as exc:  # zstd.ZstdError, lz4's RuntimeError: a damaged stream
            raise FormatError(f"{self.compression} chunk does not decompress: {exc}") from exc
        if len(out) != wanted:
            raise FormatError("MCAP chunk decompresses to another size", actual=len(out))
        self.left -= wanted
        return out

    def _read(self, wanted: int) -> bytearray | memoryview:
        if not self.compression:
            self.taken += wanted
            return self.data[self.taken - wanted : self.taken]
        out = bytearray()
        while len(out) < wanted:
            if self._zstd is not None:
                block = self._zstd.read(wanted - len(out))
            else:
                block = self._lz4(wanted - len(out))
            if not block:
                break
            out += block
        return out

    def _lz4(self, wanted: int) -> bytes:
        dec = self._lz4_frame
        if dec.eof:
            return b""
        piece: bytes | memoryview = b""
        if dec.needs_input:
            piece = self.data[self.taken : self.taken + _INPUT]
            if not piece:
                return b""
            self.taken += len(piece)
        out: bytes = dec.decompress(piece, max_length=wanted)
        return out

    def _check_end(self) -> None:
        """The stream has nothing past the declared size and ends with the chunk."""
        if self._zstd is not None:
            if self._zstd.read(1):
                raise FormatError("MCAP chunk decompresses to more than its declared size")
            return
        if self.compression != "lz4":
            return
        dec = self._lz4_frame
        while not dec.eof:
            if dec.needs_input and self.taken >= len(self.data):
                break
            if self._lz4(1):
                raise FormatError("MCAP chunk decompresses to more than its declared size")
            if not dec.needs_input and not dec.eof:
                break  # no progress: the frame does not end here
        if not dec.eof or dec.unused_data or self.taken < len(self.data):
            raise FormatError("lz4 frame does not end with the chunk")


def chunk_windows(
    buf: memoryview, pos: int, chunk: rec.ChunkHead, run: int
) -> Iterator[tuple[bytes | memoryview, NDArray[np.int64]]]:
    """The records of the chunk at `pos` of `buf` a window at a time: (records, where each
    starts), each window whole records. FormatError (at `pos`) as `checked_starts` and
    `McapFile._records` raise it on the whole chunk, once the window that shows it is
    reached (a caller keeps what it learned from a chunk only once this ends)."""
    data = buf[chunk.records_start : chunk.records_end]
    try:
        stream = _Inflater(chunk.compression, data, chunk.uncompressed_size)
        crc = 0
        carry = b""
        released = 0
        while stream.left or carry:
            need = WINDOW if len(carry) < 9 else _record_size(carry) - len(carry)
            piece = stream.read(max(need, WINDOW - len(carry)))
            crc = zlib.crc32(piece, crc)
            records = memoryview(b"".join((carry, piece)) if carry else piece)
            starts, end = _window_starts(records, run, not stream.left)
            carry = bytes(records[end:])
            if len(starts):
                yield records[:end], starts
            done = chunk.uncompressed_size - stream.left
            if done - released > RELEASE_BYTES:  # bounded RSS on a mapped file
                released = done
                release_pages(buf)
        if chunk.uncompressed_crc and crc != chunk.uncompressed_crc:
            raise FormatError("MCAP chunk CRC does not match its records")
    except FormatError as exc:
        raise FormatError(exc.message, offset=pos, actual=exc.actual) from exc


def _record_size(head: bytes | memoryview) -> int:
    """The size of the record starting `head` (its first 9 bytes at least)."""
    return 9 + int(rec.RECORD_HEAD.unpack_from(head)[1])


def _window_starts(
    records: bytes | memoryview, run: int, final: bool
) -> tuple[NDArray[np.int64], int]:
    """Where the window's records start and where the last one ends; those starting in the
    last `run` empty records' worth of bytes of a window that is not the chunk's last are
    left to the next (a run of zeros is judged as on the whole chunk)."""
    size = len(records)
    starts, end = record_starts(records, run)
    if size - end >= 9 and end + _record_size(records[end : end + 9]) <= size:
        raise FormatError("MCAP chunk records do not fill the chunk")  # a run of zeros
    if final:
        if end != size:
            raise FormatError("MCAP chunk records do not fill the chunk")
    elif len(starts):
        keep = int(np.searchsorted(starts, size - 9 * run))
        if keep < len(starts):
            end, starts = int(starts[keep]), starts[:keep]
    data = np.frombuffer(records, np.uint8)
    ends = np.append(starts[1:], end)
    if ((data[starts] == rec.MESSAGE) & (ends - starts < MESSAGE_HEAD)).any():
        raise FormatError("MCAP message record too short")
    return starts, end
