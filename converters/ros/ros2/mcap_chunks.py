"""An MCAP file's chunks read as numpy columns: `McapFile.batches()`.

Why: `McapFile.messages()` costs a tuple, a `StoredMessage` and a few skeleton operations
a message, most of a conversion of small messages. Here a chunk's records are found by one
tight loop over their lengths (`record_starts`: a record's place depends on all before it,
so this one walk stays a loop), and the rest, per chunk, is numpy: the Message records'
channel, log time and data (opcode 0x05, u64 length, u16 channel, u32 sequence, u64
log_time, u64 publish_time, data), the datas cut out of the records and the skeleton's
COPY/DATA operations, the same bytes and operations `messages()` gives. Top-level
messages, damaged chunks and the chunk a file is cut in go through `messages()`'s code.
"""

from __future__ import annotations

import struct
import sys
import tempfile
import zlib
from array import array
from collections.abc import Callable, Iterator
from typing import IO, TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from nanorec.buffers import Buffer
from nanorec.errors import FormatError

from . import mcap_records as rec
from .mcap_index import index_offsets
from .mcap_skeleton import (
    BEGIN,
    COPY,
    DATA,
    DROP,
    END,
    MESSAGE_HEAD,
    SKELETON_HEAD,
    SKELETON_MAGIC,
    SKELETON_VERSION,
    Ops,
)
from .mcap_window import chunk_windows, is_big, record_starts
from .storage import Batch, StoredMessage, batched, release_pages

if TYPE_CHECKING:
    from .mcap_file import McapFile

_LENGTH = struct.Struct("<Q")


def checked_starts(
    records: Buffer, base: int, empty_run: int, offsets: NDArray[np.int64] | None = None
) -> NDArray[np.int64]:
    """`record_starts` of a chunk's records (`offsets`: its message index's guess), FormatError
    (at `base`) when they do not fill it or a message record is too short. (A list of a 64
    MiB chunk's records as tuples was ~100 MB; these starts are 8 bytes a record.)"""
    starts, end = record_starts(records, empty_run, offsets)
    data = np.frombuffer(records, np.uint8)
    ends = np.append(starts[1:], end)
    if ((data[starts] == rec.MESSAGE) & (ends - starts < MESSAGE_HEAD)).any():
        raise FormatError("MCAP message record too short", offset=base)
    if end != len(records):
        raise FormatError("MCAP chunk records do not fill the chunk", offset=base)
    return starts


def _fields(data: NDArray[np.uint8], at: NDArray[np.int64], dtype: str) -> NDArray[Any]:
    """The little-endian values of `dtype` at `at`."""
    width = np.dtype(dtype).itemsize
    index = at[:, None] + np.arange(width)
    values: NDArray[Any] = np.ascontiguousarray(data[index]).view(dtype).reshape(-1)
    return values


def _messages(
    records: Any, starts: NDArray[np.int64]
) -> tuple[Batch, NDArray[np.int64], NDArray[np.int64], NDArray[np.bool_]]:
    """The messages of `records` (a chunk's, whole records starting at `starts`) as a batch
    (their datas joined), where each data starts and ends, and which bytes are data."""
    data = np.frombuffer(records, np.uint8)
    ends = np.append(starts[1:], len(data))
    chosen = data[starts] == rec.MESSAGE
    starts, ends = starts[chosen], ends[chosen]
    channels = _fields(data, starts + 9, "<u2").astype(np.int64)
    times = _fields(data, starts + 15, "<u8")
    if len(times) and int(times.max()) >= 1 << 63:
        raise OverflowError("an MCAP log_time beyond 2**63 - 1 ns")
    cuts = starts + MESSAGE_HEAD
    lengths = ends - cuts
    # the records alternate kept and data stretches: [0, cut_0), [cut_0, end_0), ...
    stretches = np.empty(2 * len(cuts) + 1, np.int64)
    stretches[0:-1:2] = cuts - np.concatenate(([0], ends[:-1]))
    stretches[1::2] = lengths
    stretches[-1] = len(data) - (int(ends[-1]) if len(ends) else 0)
    is_data = np.repeat(np.tile(np.array([False, True]), len(cuts) + 1)[:-1], stretches)
    datas = data[is_data]
    offsets = np.cumsum(lengths) - lengths
    batch = Batch(channels, times.astype(np.int64), offsets, lengths, datas)
    return batch, cuts, ends, is_data


def mcap_batches(file: McapFile) -> Iterator[Batch]:
    """`file.messages()` as batches (see the module)."""
    if file._read:
        raise FormatError("McapFile.messages() can be read once")
    file._read = True
    ops = SpilledOps(file.scratch)
    buf = file._buf
    loose: list[StoredMessage] = []  # top-level messages, given before the next chunk's
    order = list(rec.REBUILDERS)
    for item in file.top_level(ops):
        if isinstance(item, StoredMessage):
            loose.append(item)
        else:
            yield from batched(loose)
            loose = []
            yield from _chunk(file, ops, *item, order, rec.EMPTY_RUN)
            ops.spill()
    yield from batched(loose)
    ops.raw(buf[file._stop :])
    if file._stop in file._salvaged:  # the chunk the file is cut in
        yield from batched(file._salvaged_messages(ops, file._stop, len(buf)))
    file._spilled = (ops, len(buf))


def _chunk(
    file: McapFile, ops: Ops, pos: int, end: int, order: list[int], run: int
) -> Iterator[Batch]:
    """One chunk's messages, its skeleton operations added to `ops` (`_chunk_messages`);
    a big one a window at a time (`mcap_window`)."""
    buf = file._buf
    chunk = rec.chunk_head(buf, pos, end)
    if is_big(chunk):
        yield from big_chunk(file, ops, pos, end, chunk, run)
        return
    records = file._records(pos, chunk)
    method: int | None = 0
    if chunk.compression:
        compressed = buf[chunk.records_start : chunk.records_end]
        method = rec.find_rebuilder(chunk.compression, compressed, bytes(records), order)
        if chunk.records_end - chunk.records_start >= 1 << 32:
            method = None  # END records the size in 32 bits
    starts = checked_starts(records, pos, run, index_offsets(buf, end))
    batch, cuts, ends, is_data = _messages(records, starts)
    count = len(batch.times)
    if method is None:  # kept: its bytes as they are, its datas dropped by join
        file.kept_chunks += 1
        ops.raw(buf[pos:end])
        if count:
            ops.op(DROP, count)
        yield batch
        return
    file.chunks += 1
    ops.raw(buf[pos : chunk.records_start])
    if method:
        name = rec.REBUILDERS[method][1]
        file.rebuilt_by[name] = file.rebuilt_by.get(name, 0) + 1
        ops.op(BEGIN, method)
    _cut(ops, records, cuts, ends, is_data)
    if method:
        compressed = buf[chunk.records_start : chunk.records_end]
        ops.op(END, (len(compressed) << 32) | zlib.crc32(compressed))
    ops.raw(buf[chunk.records_end : end])
    yield batch


def _cut(ops: Ops, records: Any, cuts: NDArray[np.int64], ends: NDArray[np.int64],
         is_data: NDArray[np.bool_]) -> None:  # fmt: skip
    """The operations of whole records (a chunk's, or a window of them) whose messages'
    datas start at `cuts` and end at `ends`: COPY everything since the last data up to
    each data, then DATA (what is left is `ops.pending`, copied before the next)."""
    size = len(records)
    count = len(cuts)
    if count:
        copies = cuts - np.concatenate(([0], ends[:-1]))
        copies[0] += ops.pending
        args = np.zeros(2 * count, np.uint64)
        args[0::2] = copies
        ops.kinds += bytes((COPY, DATA)) * count
        ops.args.frombytes(args.tobytes())
        ops.blob += np.frombuffer(records, np.uint8)[~is_data].data
        ops.pending = size - int(ends[-1])
    else:
        ops.blob += records
        ops.pending += size


def big_chunk(file: McapFile, ops: Ops, pos: int, end: int, chunk: rec.ChunkHead,
               run: int) -> Iterator[Batch]:  # fmt: skip
    """A big chunk's messages a window at a time: an uncompressed one's datas cut out as
    from any chunk, a compressed one kept as it is (it would need its records whole to be
    compressed again: see `mcap_window`)."""
    buf = file._buf
    kept = bool(chunk.compression)
    if kept:
        file.kept_chunks += 1
        ops.raw(buf[pos:end])
    else:
        file.chunks += 1
        ops.raw(buf[pos : chunk.records_start])
    count = 0
    for records, starts in chunk_windows(buf, pos, chunk, run):
        batch, cuts, ends, is_data = _messages(records, starts)
        count += len(cuts)
        if not kept:
            _cut(ops, records, cuts, ends, is_data)
            if isinstance(ops, SpilledOps):
                ops.spill()
        yield batch
    if kept and count:
        ops.op(DROP, count)
    if not kept:
        ops.raw(buf[chunk.records_end : end])


class SpilledOps(Ops):
    """`Ops` whose operations and blob go to temporary files once they pass `SPILL_BYTES`
    (a bag of small messages has ~50 bytes of them a message: ~800 MB for 1 GB of MCAP);
    `write_to` writes the skeleton `skeleton()` would give."""

    SPILL_BYTES = 16 << 20

    def __init__(self, scratch: Callable[[str], IO[bytes]] | None = None) -> None:
        """`scratch(what)`: a new temporary file (convert's, beside the output: a system
        temporary folder may be a RAM disk); else one in the system's temporary folder."""
        super().__init__()
        self._scratch = scratch
        self._files: list[IO[bytes]] = []
        self._counts = [0, 0]  # operations and blob bytes spilled

    def raw(self, piece: memoryview | bytes) -> None:
        """A piece past `SPILL_BYTES` (a big chunk kept whole) goes straight to the blob's
        file a slice at a time, never through memory whole."""
        if len(piece) < self.SPILL_BYTES:
            super().raw(piece)
            return
        self.spill(now=True)
        view = memoryview(piece)
        for at in range(0, len(view), self.SPILL_BYTES):
            self._files[2].write(view[at : at + self.SPILL_BYTES])
            release_pages(view)
        self._counts[1] += len(view)
        self.pending += len(view)

    def spill(self, *, now: bool = False) -> None:
        """Move what is in memory to the files, if it is large (or `now`)."""
        if not now and len(self.blob) + 9 * len(self.kinds) < self.SPILL_BYTES:
            return
        if not self._files:
            # closed by `write_to` or `close` (they outlive this call: no `with`)
            self._files = [
                tempfile.TemporaryFile(prefix=".nanorec-mcap-")  # noqa: SIM115
                if self._scratch is None
                else self._scratch(f"mcap-{what}")
                for what in ("kinds", "args", "blob")
            ]
        args = self.args
        if sys.byteorder != "little":
            args = array("Q", args)
            args.byteswap()
        self._files[0].write(self.kinds)
        self._files[1].write(args)
        self._files[2].write(self.blob)
        self._counts[0] += len(self.kinds)
        self._counts[1] += len(self.blob)
        del self.kinds[:], self.args[:], self.blob[:]

    def write_to(self, out: IO[bytes], file_size: int) -> None:
        """The skeleton (`skeleton(file_size)`'s bytes) written to `out`; the files closed."""
        if self.pending:
            self.kinds.append(COPY)
            self.args.append(self.pending)
            self.pending = 0
        self.spill(now=True)
        head = SKELETON_HEAD.pack(SKELETON_VERSION, file_size, *self._counts)
        out.write(SKELETON_MAGIC + head)
        for file in self._files:
            file.seek(0)
            while block := file.read(1 << 20):
                out.write(block)
            file.close()
        self._files = []

    def close(self) -> None:
        for file in self._files:
            file.close()
        self._files = []
