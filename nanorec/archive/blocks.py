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

import zlib
from collections import deque
from collections.abc import Sequence
from concurrent.futures import Future, wait
from typing import Any, Final

import numpy as np

from nanorec.archive import blockcut
from nanorec.archive.blockdeflate import Block, FastBlocks, Pieces
from nanorec.archive.blockdeflate import compress_blocks as _compress_blocks
from nanorec.archive.crc import joined_crc
from nanorec.archive.deflate import FINAL_BLOCK, LEVEL, THREADS, shared_pool
from nanorec.errors import UsageError

#: A block ends before the message that would take it past this many uncompressed bytes.
BLOCK_BYTES: Final = 16 << 10
#: Blocks of this many messages or more (under ~128 bytes each in the archive) keep zlib's
#: level 6: ISA-L made the 29-byte messages of a real bag (~64 bytes archived, 256 a block)
#: ~11 % larger, past the 2x size budget; the ~100-byte ones of another bag (~120 a block)
#: only 5 %, for a sixth of the time, so those take ISA-L.
_TINY_MESSAGES: Final = 128


#: How many finished blocks may wait for the deflating threads.
_AHEAD: Final = 16
_AHEAD_BYTES: Final = 16 << 20
#: Blocks go to the threads in batches of about this many bytes: one hand-over (~40 us of
#: queue, wake-up and GIL) per batch, not per block, which ISA-L deflates in ~30 us.
_BATCH_BYTES: Final = 128 << 10


class BlockDeflater:
    """Compresses the messages stream, ending a block at message boundaries.

    Each block is deflated on its own (a fresh compressor ended by a full flush: the same
    stream a single compressor fully flushed there would make, byte-aligned and free of
    back-references across it) by a small pool of threads, zlib releasing the GIL, so the
    deflate runs beside the converter's own work on the other core. `add` returns the
    compressed bytes of the blocks finished so far, in order; `ready` those deflated by now
    (the writer's own flushes), `end_block` all of them, the open block closed
    (`ArchiveWriter.flush`). Where blocks end depends on the messages alone. The table
    (`offsets`, `starts`) lists each block's uncompressed and compressed start."""

    def __init__(
        self,
        block_bytes: int = BLOCK_BYTES,
        threads: int = THREADS,
        *,
        precompressed: bool = False,
        fast: bool = False,
    ) -> None:
        if fast and threads:
            raise UsageError("fast blocks are deflated in the writing thread (threads=0)")
        self.block_bytes = block_bytes
        self.threads = threads  # 0: deflate each block in the caller's thread, else shared ones
        # a small source's blocks: one compressor a level for them all (`FastBlocks`)
        self._fast = FastBlocks() if fast else None
        # most messages carry already-compressed bytes: see `blockdeflate.compress_block`
        self.precompressed = precompressed
        self.offsets: list[int] = []
        self.starts: list[int] = []
        self.crc = 0  # the zip member's CRC-32, set by `finish`
        # The member's CRC without reading a large message twice: a block of one message
        # takes that message's CRC, a block of several is read by its deflating thread (not
        # here); `crc.joined_crc` joins the blocks' CRCs (`_crcs`, one a block of `offsets`).
        self._crcs: list[int] = []
        self._open_crc = 0  # the CRC of the open block's first message
        self._in = 0  # uncompressed bytes so far
        self._out = 0  # compressed bytes returned so far
        self._open: list[bytes | memoryview] = []  # the open block's pieces
        self._block = 0  # uncompressed bytes in the open block
        self._count = 0  # messages in the open block
        self._batch: list[tuple[Block, bool, bool, bool]] = []  # blocks not handed over
        self._batch_bytes = 0
        # batches in work: each block's compressed pieces and its CRC (-1: its message's)
        self._pending: deque[tuple[Future[list[tuple[Pieces, int]]], int]] = deque()
        self._pending_bytes = 0  # uncompressed bytes waiting for the threads

    def add(self, pieces: Sequence[bytes | memoryview], length: int, crc: int) -> Pieces:
        """One message's pieces (`length` bytes in all, CRC-32 `crc`) -> compressed output
        ready now."""
        return self.add_run((pieces,), (length,), (crc,))

    def add_run(
        self,
        messages: Sequence[Sequence[bytes | memoryview]],
        lengths: Sequence[int],
        crcs: Sequence[int] | np.ndarray[Any, np.dtype[np.uint32]],
        *,
        lent: bool = False,
    ) -> Pieces:
        """Many messages (each its pieces, `lengths[i]` bytes in all, CRC-32 `crcs[i]`) ->
        compressed output ready now. The same blocks as adding them one by one: only
        integer arithmetic per message, the joins and hand-overs once a block (a per-message
        call was most of a compact conversion of ~100-byte messages). `lent`: the pieces
        stay unchanged until the blocks are collected, so a block of one message is
        deflated from its pieces, not from a copy (a camera image is not copied)."""
        out: Pieces = []
        block, count, size = self._block, self._count, self._in
        full, half = self.block_bytes, self.block_bytes // 2
        low, high = blockcut.HALF_BLOCK
        pieces_open = self._open
        offsets = self.offsets
        for pieces, length, crc in zip(messages, lengths, crcs, strict=True):
            if block and block + length > (half if low <= count <= high else full):
                self._block, self._count = block, count
                self._submit(lent=lent)
                block = count = 0
                if self._behind():  # (else collected once, after the run: see `_collect`)
                    out += self._collect(wait=True)
            if not block:
                offsets.append(size)
                self._open_crc = crc
            pieces_open.extend(pieces)
            size += length
            block += length
            count += 1
            if block >= (half if low <= count <= high else full):
                self._block, self._count = block, count
                self._submit(lent=lent)
                block = count = 0
                if self._behind():
                    out += self._collect(wait=True)
        self._block, self._count, self._in = block, count, size
        return out + self._collect(wait=False)

    def add_joined(
        self,
        joined: bytes,
        lengths: np.ndarray[Any, np.dtype[np.int64]],
        crcs: np.ndarray[Any, np.dtype[np.uint32]],
    ) -> Pieces:
        """`add_run` for messages back to back in `joined` (`lengths` bytes each, each > 0):
        blocks end where `add_run` would end them (`blockcut.cuts`, with numpy), each a
        slice of `joined`, not copied when it holds no bytes from before the run."""
        ends, _, _ = blockcut.cuts(lengths, self._block, self._count, self.block_bytes)
        view = memoryview(joined)
        offsets = np.concatenate(([0], np.cumsum(lengths))).tolist()
        done = 0
        out: Pieces = []
        for end in [*ends, -1]:  # -1: the rest, left open
            stop = len(lengths) if end < 0 else end
            if stop > done:
                size = offsets[stop] - offsets[done]
                if not self._block:
                    self.offsets.append(self._in)
                    self._open_crc = int(crcs[done])
                self._open.append(view[offsets[done] : offsets[stop]])
                self._in += size
                self._block += size
                self._count += stop - done
                done = stop
            if end >= 0:
                self._submit(borrow=type(joined) is bytes)
                if self._behind():
                    out += self._collect(wait=True)
        return out + self._collect(wait=False)

    def end_block(self) -> Pieces:
        """Close the open block and return every block's compressed bytes not yet returned."""
        self._submit()
        self._hand_over()
        return self._collect(wait=True, everything=True)

    def ready(self) -> Pieces:
        """Hand the closed blocks over and return those deflated by now, leaving the open
        block open (the writer's own flushes: see `MessageStream._flush_auto`)."""
        self._hand_over()
        return self._collect(wait=False)

    def finish(self) -> Pieces:
        """The end of the stream (the last blocks and the final empty one)."""
        out = self.end_block()
        if self._fast is not None:
            self.crc = self._fast.crc
        else:
            sizes = np.diff(np.array([*self.offsets, self._in], np.int64))
            self.crc = joined_crc(np.array(self._crcs, np.uint32), sizes)
        tail = FINAL_BLOCK
        self._out += len(tail)
        self.close()
        return [*out, tail]

    def close(self) -> None:
        """Drop the blocks not finished yet (those being deflated are waited for)."""
        running = [future for future, _ in self._pending if not future.cancel()]
        wait(running)
        self._pending.clear()
        self._pending_bytes = 0
        self._batch.clear()
        self._batch_bytes = 0

    def _submit(self, *, borrow: bool = False, lent: bool = False) -> None:
        """Close the open block: into the batch, handed over once the batch is full.
        `borrow`: its pieces are immutable (slices of a `bytes`): one piece is not copied;
        `lent` (see `add_run`): the pieces of a block of one message are not joined."""
        if not self._block:
            return
        single = self._count == 1  # its CRC is its message's: the bytes are not read again
        data: Block
        if (borrow and len(self._open) == 1) or (lent and single):
            data = tuple(self._open)
        else:
            data = (b"".join(self._open),)  # a copy: the caller may reuse its buffers
        self._crcs.append(self._open_crc if single else -1)
        self._batch.append((data, self._count < _TINY_MESSAGES, not single, self.precompressed))
        self._batch_bytes += self._block
        self._open.clear()
        self._block = self._count = 0
        if self._batch_bytes >= _BATCH_BYTES:
            self._hand_over()

    def _hand_over(self) -> None:
        if not self._batch:
            return
        batch, size = self._batch, self._batch_bytes
        self._batch, self._batch_bytes = [], 0
        if self.threads:
            # the level is sampled by the thread too: nothing but the hand-over stays here
            future = shared_pool().submit(_compress_blocks, batch)
        else:
            future = Future()
            fast = self._fast
            future.set_result(_compress_blocks(batch) if fast is None else fast.compress(batch))
        self._pending.append((future, size))
        self._pending_bytes += size

    def _collect(self, *, wait: bool, everything: bool = False) -> Pieces:
        """The compressed blocks finished, in order: with `wait`, waiting until the threads
        are no longer behind (`everything`: all). A run collects once at its end and when
        behind, not at every block: a `done()` check a block cost more than a small
        message's own deflate, and a tenth of a pbstream run's writing."""
        out: Pieces = []
        while self._pending and (wait or self._pending[0][0].done()):
            future, size = self._pending.popleft()
            self._pending_bytes -= size
            for pieces, crc in future.result():
                if crc >= 0:
                    self._crcs[len(self.starts)] = crc  # this block's: `starts` is in order
                self.starts.append(self._out)
                self._out += sum(len(piece) for piece in pieces)
                out += pieces
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


def _encode(values: list[int]) -> bytes:
    array = np.asarray(values, dtype="<u8")
    return zlib.compress(np.diff(array, prepend=np.uint64(0)).astype("<u8").tobytes(), LEVEL)


__all__ = ["BLOCK_BYTES", "BlockDeflater", "Pieces"]
