"""The compact layout's codec: `messages.msgpack` deflated in independent blocks.

A compact archive stores `messages.msgpack` as one raw-deflate stream (zip method 8, so
`zipfile` and NanoVer read it unchanged) in which the compressor is fully flushed
(`Z_FULL_FLUSH`: byte-aligned, no back-references across it) at message boundaries every
`BLOCK_BYTES` or so. Any such point is a place where a fresh `zlib.decompressobj(-15)` can
start, so the block table (each block's uncompressed offset and compressed start, kept in
`nanorec.msgpack` under `"blocks"`) gives random access: reading a message inflates only the
start of its block, up to the message's end. A message larger than a block gets a block of
its own, so a read never inflates more than `max(BLOCK_BYTES, message)`. A block whose
bytes do not deflate (a sample of it, at level 1) is written as stored deflate blocks (level
0): the member stays one deflate stream and the reader needs no notion of it, and the
writer spends no time deflating already-compressed data (pbstream's gzip members).

The table is `{"count", "size", "offset", "start"}`: the block count, the member's compressed
size (a table describes that stream only: another zip tool deflating the member again makes it
void) and two delta-deflated `<u8` arrays. An archive without a valid table is still read,
through the reader's slow path (inflated once into a temporary file).
"""

from __future__ import annotations

import importlib
import struct
import zlib
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Final

import numpy as np

from nanorec import blockcut
from nanorec.blockread import BlockReader
from nanorec.crc import crc32

#: A block ends before the message that would take it past this many uncompressed bytes.
BLOCK_BYTES: Final = 16 << 10
#: zlib level for every deflated member (6: 16 KiB blocks at level 1 were 12% larger).
LEVEL: Final = 6
#: ISA-L level when `isal` is installed (2: as small as its 3, faster than its 1 here).
ISAL_LEVEL: Final = 2
#: Blocks of this many messages or more (under ~128 bytes each in the archive) keep zlib's
#: level 6: ISA-L made the 29-byte messages of a real bag (~64 bytes archived, 256 a block)
#: ~11 % larger, past the 2x size budget; the ~100-byte ones of another bag (~120 a block)
#: only 5 %, for a sixth of the time, so those take ISA-L.
_TINY_MESSAGES: Final = 128


def _load_isal() -> Any:
    """ISA-L's zlib-compatible module (optional: the `fast` extra), or None."""
    try:
        return importlib.import_module("isal.isal_zlib")
    except ImportError:  # pragma: no cover - depends on the environment
        return None


_isal_zlib: Any = _load_isal()
#: Compressed bytes, as pieces written one after the other.
Pieces = list[bytes | memoryview]
#: Threads deflating blocks, and how many finished blocks may wait for them.
_THREADS: Final = 2
_AHEAD: Final = 16
_AHEAD_BYTES: Final = 16 << 20
#: `add_joined` hands blocks over together, up to about this many bytes at a time (one
#: hand-over a block cost the writing thread ~15 µs each, a tenth of a pbstream run).
_BATCH_BYTES: Final = 1 << 20
_WBITS: Final = -zlib.MAX_WBITS
#: A block is stored when this many bytes from its middle deflate (level 1) to more than
#: `_STORE_ABOVE` of their size.
_SAMPLE: Final = 1024
_STORE_ABOVE: Final = 0.9
_STORED_MAX: Final = 0xFFFF
_STORED_HEADER: Final = struct.Struct("<BHH")


def deflater(*, fast: bool = False) -> Any:
    """A raw-deflate compressor as every compact member uses (zip method 8).

    `fast`: ISA-L's when the `isal` package is there (the `fast` extra). Deflate at zlib's
    level 6 runs at ~20 MB/s a core, most of a compact conversion and a tenth of what an
    MCAP writer's zstd chunks take; ISA-L's level 2 makes the same format (zlib and NanoVer
    inflate it) ~12x faster, 2-6 % larger on CARLA frames, but ~11 % larger on blocks of
    tiny messages (29-byte ROS messages), whose archives the size budget binds: those
    keep zlib (see `_deflate_block`).

    Without `fast`, a `MemberDeflater`: zlib's level 6 on both cores (a whole member such as
    `index.msgpack`, ~2 bytes a message, was a tenth of a small-message conversion)."""
    if fast:
        return _compressor(fast=True)
    return MemberDeflater()


def _compressor(*, fast: bool) -> Any:
    if fast and _isal_zlib is not None:
        return _isal_zlib.compressobj(ISAL_LEVEL, zlib.DEFLATED, _WBITS)
    return zlib.compressobj(LEVEL, zlib.DEFLATED, _WBITS)


#: A member is deflated in pieces of this size, each on its own (ended by a sync flush: the
#: pieces joined are one raw-deflate stream), by `_THREADS` threads.
_MEMBER_PIECE: Final = 1 << 20


#: A member's pieces past this many bytes are deflated by ISA-L (when installed): a member
#: that large is the index of millions of messages (`index.msgpack`, ~80 bytes a message),
#: whose zlib level 6 took as long as the messages' own conversion; ISA-L's level 2 is ~12x
#: faster for ~15 % more of such a member. Smaller members (every one of a bag whose size
#: budget binds) keep zlib's level 6.
_MEMBER_FAST_AFTER: Final = 8 << 20


def _deflate_piece(data: bytes, fast: bool) -> bytes:
    compressor = _compressor(fast=fast)
    out: bytes = compressor.compress(data) + compressor.flush(zlib.Z_SYNC_FLUSH)
    return out


class MemberDeflater:
    """zlib's `compressobj` interface (`compress`, `flush`) for one member: the data is cut
    in 1 MiB pieces deflated by two threads (zlib releases the GIL), in order. A piece starts
    without the previous one's window: ~0.1 % larger than one stream at 1 MiB pieces.
    Pieces past `_MEMBER_FAST_AFTER` use ISA-L."""

    def __init__(self) -> None:
        self._open: list[bytes] = []
        self._size = 0
        self._pool: ThreadPoolExecutor | None = None
        self._pending: deque[Future[bytes]] = deque()
        self._done = 0  # bytes handed to the threads

    def compress(self, data: Any) -> bytes:
        self._open.append(data if type(data) is bytes else bytes(data))
        self._size += len(data)
        if self._size >= _MEMBER_PIECE:
            self._submit()
        out = []
        while self._pending and (self._pending[0].done() or len(self._pending) > 2 * _THREADS):
            out.append(self._pending.popleft().result())
        return b"".join(out)

    def flush(self, mode: int = zlib.Z_FINISH) -> bytes:
        """Everything not returned yet; `Z_FINISH` (the default) ends the stream."""
        if self._size and not self._pending and self._pool is None:
            out = [_deflate_piece(b"".join(self._open), False)]  # small: no hand-over
            self._open.clear()
            self._size = 0
        else:
            self._submit()
            out = [future.result() for future in self._pending]
            self._pending.clear()
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None
        if mode == zlib.Z_FINISH:
            out.append(_compressor(fast=False).flush(zlib.Z_FINISH))  # the final empty block
        return b"".join(out)

    def _submit(self) -> None:
        if not self._size:
            return
        data = b"".join(self._open)
        self._open.clear()
        self._size = 0
        if self._pool is None:
            self._pool = ThreadPoolExecutor(_THREADS, thread_name_prefix="nanorec-member")
        fast = self._done >= _MEMBER_FAST_AFTER
        self._done += len(data)
        self._pending.append(self._pool.submit(_deflate_piece, data, fast))


class BlockDeflater:
    """Compresses the messages stream, ending a block at message boundaries.

    Each block is deflated on its own (a fresh compressor ended by a full flush: the same
    stream a single compressor fully flushed there would make, byte-aligned and free of
    back-references across it) by a small pool of threads, zlib releasing the GIL, so the
    deflate runs beside the converter's own work on the other core. `add` returns the
    compressed bytes of the blocks finished so far, in order; `end_block` (at every flush of
    the writer) waits for all of them, so a killed writer loses at most what it had not
    flushed. The table (`offsets`, `starts`) lists each block's uncompressed and compressed
    start."""

    def __init__(self, block_bytes: int = BLOCK_BYTES, threads: int = _THREADS) -> None:
        self.block_bytes = block_bytes
        self.threads = threads  # 0: deflate each block in the caller's thread
        self.offsets: list[int] = []
        self.starts: list[int] = []
        self.crc = 0  # CRC-32 of the uncompressed stream so far (the zip member's)
        self._in = 0  # uncompressed bytes so far
        self._out = 0  # compressed bytes returned so far
        self._open: list[bytes | memoryview] = []  # the open block's pieces
        self._block = 0  # uncompressed bytes in the open block
        self._count = 0  # messages in the open block
        self._pool: ThreadPoolExecutor | None = None
        self._pending: deque[tuple[Future[list[Pieces]], int]] = deque()
        self._pending_bytes = 0  # uncompressed bytes waiting for the threads

    def add(
        self, pieces: tuple[bytes | memoryview, ...], length: int, crc: int | None = None
    ) -> Pieces:
        """One message's pieces (`length` bytes in all) -> compressed output ready now.

        `crc`: the stream's CRC-32 after these pieces, when the caller took it (chained from
        `self.crc`, see `ArchiveWriter.write_stored_rows`); else it is taken here."""
        if crc is None:
            crc = self.crc
            for piece in pieces:
                crc = crc32(piece, crc)
        self.crc = crc
        block = self._block
        submitted = bool(block) and block + length > self._limit()
        if submitted:
            self._submit()
            block = 0
        if not block:
            self.offsets.append(self._in)
        self._open.extend(pieces)
        self._in += length
        self._block = block = block + length
        self._count += 1
        if block >= self._limit():
            self._submit()
        elif not submitted:
            # finished blocks are collected when one more is submitted (or at
            # `end_block`): a `done()` check per message cost more than a small message's
            # own deflate
            return []
        return self._collect(wait=self._behind()) if self._pending else []

    def add_joined(
        self, joined: bytes, lengths: np.ndarray[Any, np.dtype[np.int64]], crc: int
    ) -> Pieces:
        """`add` for messages back to back in `joined` (`lengths` bytes each, each > 0):
        blocks end where one `add` per message would end them (`blockcut.cuts`), each
        handed over as one slice of `joined`. `crc`: the stream's CRC-32 after them."""
        self.crc = crc
        ends, _, _ = blockcut.cuts(lengths, self._block, self._count, self.block_bytes)
        view = memoryview(joined)
        offsets = np.concatenate(([0], np.cumsum(lengths))).tolist()
        done = 0
        out: Pieces = []
        batch: list[tuple[bytes | memoryview, bool]] = []
        batch_bytes = 0
        for end in [*ends, -1]:  # -1: the rest, left open
            stop = len(lengths) if end < 0 else end
            if stop > done:
                size = offsets[stop] - offsets[done]
                if not self._block:
                    self.offsets.append(self._in)
                self._open.append(view[offsets[done] : offsets[stop]])
                self._in += size
                self._block += size
                self._count += stop - done
                done = stop
            if end >= 0:
                block = self._take(borrow=type(joined) is bytes)
                if block is not None:
                    batch.append(block)
                    batch_bytes += len(block[0])
                if batch_bytes >= _BATCH_BYTES:  # one hand-over for many blocks
                    self._hand_over(batch)
                    batch, batch_bytes = [], 0
                    if self._behind():
                        out += self._collect(wait=True)
        if batch:
            self._hand_over(batch)
        return out + self._collect(wait=False)

    def _limit(self) -> int:
        """Where the open block ends: `block_bytes`, or half of it when the half holds
        4-16 messages (messages of 0.5-2 KiB: a read inflates up to half a block before its
        message, so half as much, for a few % of size; smaller messages need the whole block
        to deflate well, and two or three larger ones make a block anyway)."""
        return blockcut.limit(self._count, self.block_bytes)

    def end_block(self) -> Pieces:
        """Close the open block and return every block's compressed bytes not yet returned."""
        self._submit()
        return self._collect(wait=True, everything=True)

    def finish(self) -> Pieces:
        """The end of the stream (the last blocks and the final empty one)."""
        out = self.end_block()
        tail: bytes = _compressor(fast=False).flush(zlib.Z_FINISH)
        self._out += len(tail)
        self.close()
        return [*out, tail]

    def close(self) -> None:
        """Stop the compressing threads (what they had not finished is dropped)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        self._pending.clear()
        self._pending_bytes = 0

    def _submit(self, *, borrow: bool = False) -> None:
        """Hand the open block over. `borrow`: its pieces are immutable (slices of a
        `bytes`): a block of one piece is not copied."""
        block = self._take(borrow=borrow)
        if block is not None:
            self._hand_over([block])

    def _take(self, *, borrow: bool) -> tuple[bytes | memoryview, bool] | None:
        """The open block's bytes and whether ISA-L deflates it (see `_submit`); None when
        it is empty. The next block starts empty."""
        if not self._block:
            return None
        if borrow and len(self._open) == 1:
            data: bytes | memoryview = self._open[0]
        else:
            data = b"".join(self._open)  # a copy: the caller may reuse its buffers
        fast = self._count < _TINY_MESSAGES
        self._open.clear()
        self._block = self._count = 0
        return data, fast

    def _hand_over(self, blocks: list[tuple[bytes | memoryview, bool]]) -> None:
        """Have `blocks` compressed, in order, by one thread (or here, without threads)."""
        size = sum(len(data) for data, _ in blocks)
        if not self.threads:
            done: Future[list[Pieces]] = Future()
            done.set_result(_compress_blocks(blocks))
            self._pending.append((done, size))
            self._pending_bytes += size
            return
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix="nanorec-deflate")
        # the level is sampled by the thread too: nothing but the hand-over stays here
        self._pending.append((self._pool.submit(_compress_blocks, blocks), size))
        self._pending_bytes += size

    def _collect(self, *, wait: bool, everything: bool = False) -> Pieces:
        out: Pieces = []
        while self._pending and (wait or self._pending[0][0].done()):
            future, size = self._pending.popleft()
            for pieces in future.result():
                self.starts.append(self._out)
                self._out += sum(len(piece) for piece in pieces)
                out += pieces
            self._pending_bytes -= size
            wait = everything or self._behind()
        return out

    def _behind(self) -> bool:
        """Whether the threads are too far behind (memory held for them is bounded)."""
        return len(self._pending) > _AHEAD or self._pending_bytes > _AHEAD_BYTES

    @property
    def uncompressed_size(self) -> int:
        return self._in

    def table(self) -> dict[str, Any]:
        """The block table as stored in the description."""
        return {
            "count": len(self.offsets),
            "size": self._out,
            "offset": _encode(self.offsets),
            "start": _encode(self.starts),
        }


def _level(data: bytes | memoryview) -> int:
    """`LEVEL`, or 0 (stored deflate blocks, still one valid deflate stream for any zip
    reader) when a sample from the middle of `data` does not deflate: already-compressed
    bytes such as gzip members, where deflating costs ~15 ms a MB for nothing."""
    if len(data) >= 2 * _SAMPLE:
        middle = len(data) // 2
        sample = data[middle - _SAMPLE // 2 : middle + _SAMPLE // 2]
        if len(_sample_deflate(sample, 1)) > _STORE_ABOVE * _SAMPLE:
            return 0
    return LEVEL


#: zlib's `compress` sets up a compressor per call: ~80 us for a 1 KiB sample, more than
#: deflating a block of small messages; ISA-L's level 1 gives about the same size in ~10 us.
_sample_deflate: Any = zlib.compress if _isal_zlib is None else _isal_zlib.compress


def _compress_blocks(blocks: list[tuple[bytes | memoryview, bool]]) -> list[Pieces]:
    """`_compress_block` of each (data, fast), its level sampled."""
    return [_compress_block(data, None, fast) for data, fast in blocks]


def _compress_block(data: bytes | memoryview, level: int | None, fast: bool) -> Pieces:
    """One block, fully flushed, as pieces to write one after the other: stored (level 0,
    `_stored`), or deflated by ISA-L when `fast` (see `deflater`). `level` None:
    `_level(data)`."""
    if level is None:
        level = _level(data)
    if level == 0:
        return _stored(data)
    compressor = _compressor(fast=fast)
    return [compressor.compress(data) + compressor.flush(zlib.Z_FULL_FLUSH)]


def _stored(data: bytes | memoryview) -> Pieces:
    """`data` as stored deflate blocks (BTYPE 00: a zero header byte, LEN, NLEN, up to 65,535
    bytes each), byte-aligned like a full flush: what zlib writes at level 0, without the
    ~70 µs zlib spends setting up a compressor for a block, and without copying `data`."""
    view = memoryview(data)
    parts: Pieces = []
    for start in range(0, len(data), _STORED_MAX):
        chunk = view[start : start + _STORED_MAX]
        parts += (_STORED_HEADER.pack(0, len(chunk), len(chunk) ^ 0xFFFF), chunk)
    return parts


def _encode(values: list[int]) -> bytes:
    array = np.asarray(values, dtype="<u8")
    return zlib.compress(np.diff(array, prepend=np.uint64(0)).astype("<u8").tobytes(), LEVEL)


__all__ = ["BLOCK_BYTES", "LEVEL", "BlockDeflater", "BlockReader", "deflater"]
