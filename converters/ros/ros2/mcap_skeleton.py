"""The skeleton of an MCAP storage file, and the join that fills it again.

A skeleton is a list of operations over a blob of kept bytes: COPY n (the next n bytes of the
blob), DATA (the next message's data), DROP n (consume n datas: a kept chunk's), BEGIN
method / END size+crc (the pieces between are a chunk's records, compressed again). `Ops`
writes it while `mcap_file` walks the file; `join_mcap` reads it back.
"""

from __future__ import annotations

import struct
import sys
import zlib
from array import array
from collections.abc import Iterable, Iterator

import numpy as np
from numpy.typing import NDArray

from nanorec.errors import FormatError

from . import mcap_records as rec
from .datas import Source, as_source, slices
from .storage import RELEASE_BYTES, release_pages

SKELETON_MAGIC = b"nrMCAPsk"
SKELETON_VERSION = 1
SKELETON_HEAD = struct.Struct("<BQQQ")  # version, file size, operations, blob size

COPY, DATA, DROP, BEGIN, END = range(5)

#: opcode u8 + length u64 + channel u16 + sequence u32 + log_time u64 + publish_time u64
MESSAGE_HEAD = rec.RECORD_HEAD.size + rec.MESSAGE_HEAD.size
_U64 = struct.Struct("<Q")
#: A batch of operations holds at most this many datas, or about this many bytes of them.
_BATCH = 1 << 16
_BATCH_BYTES = 16 << 20
#: Operations read at once when the skeleton is opened.
_WINDOW = 1 << 18
#: A COPY this long (a big chunk kept as it is) is given as views of the blob, not joined.
_BIG_COPY = 16 << 20


class Ops:
    """The skeleton being written: operations, and the blob of bytes COPY takes from."""

    def __init__(self) -> None:
        self.kinds = bytearray()
        self.args = array("Q")
        self.blob = bytearray()
        self.pending = 0

    def raw(self, piece: memoryview | bytes) -> None:
        self.blob += piece
        self.pending += len(piece)

    def op(self, kind: int, arg: int) -> None:
        if self.pending:
            self.kinds.append(COPY)
            self.args.append(self.pending)
            self.pending = 0
        self.kinds.append(kind)
        self.args.append(arg)

    def skeleton(self, file_size: int) -> bytes:
        if self.pending:
            self.kinds.append(COPY)
            self.args.append(self.pending)
            self.pending = 0
        args = self.args
        if sys.byteorder != "little":
            args = array("Q", args)
            args.byteswap()
        head = SKELETON_HEAD.pack(SKELETON_VERSION, file_size, len(self.kinds), len(self.blob))
        return b"".join((SKELETON_MAGIC, head, self.kinds, args.tobytes(), self.blob))


def join_mcap(
    skeleton: bytes | memoryview, datas: Source | Iterable[bytes | memoryview]
) -> Iterator[bytes | memoryview]:
    """The pieces of the original file, byte for byte: `skeleton` with `datas` (in the order
    `messages()` yielded them: a `Source`, or byte strings) put back, and rebuilt chunks
    compressed again. The operations are read as arrays, and taken a batch at a time (one
    read of the batch's data, each run of pieces joined at once).

    Raises FormatError when the datas do not fit (another count, another size) or a chunk does
    not compress back to its recorded size and CRC (another zstd/lz4 library release)."""
    sk = memoryview(skeleton)
    top = len(SKELETON_MAGIC) + SKELETON_HEAD.size
    if len(sk) < top or bytes(sk[:8]) != SKELETON_MAGIC:
        raise FormatError("not an MCAP skeleton", offset=0)
    version, file_size, count, blob_size = SKELETON_HEAD.unpack_from(sk, 8)
    if version != SKELETON_VERSION:
        raise FormatError("unknown MCAP skeleton version", offset=8, actual=version)
    if len(sk) != top + 9 * count + blob_size:
        raise FormatError("MCAP skeleton of another size", offset=0)
    source = as_source(datas)
    ops = _Ops(sk, top, count, blob_size, len(source))
    joined = _Joined(ops, sk[top + 9 * count :], source)
    release_pages(sk)  # the operations are checked: a mapped skeleton's pages given back
    written = released = 0
    for window in range(ops.windows):
        first = ops.load(window)
        while first < ops.end:
            stop = ops.stop(first)
            for piece in joined.batch(first, stop):
                written += len(piece)
                yield piece
            first = stop
            if written - released > RELEASE_BYTES:
                released = written
                release_pages(sk)
    if joined.chunk is not None:
        raise FormatError("MCAP skeleton ends inside a chunk")
    if written != file_size:
        raise FormatError("MCAP skeleton does not join to its file size", expected=file_size)


class _Ops:
    """A skeleton's operations (views of it) and, per DATA operation of the window loaded,
    its place and the size its record says. The operations are checked once at open, a
    window at a time; then each window's DATA operations are worked out again as it is
    joined (why: columns of every DATA operation took 8 bytes a message, 80 MB at 10 M)."""

    def __init__(self, sk: memoryview, top: int, count: int, blob_size: int,
                 datas: int) -> None:  # fmt: skip
        self.sk = sk
        self.kinds = np.frombuffer(sk, np.uint8, count, top)
        self.args = np.frombuffer(sk, "<u8", count, top + count)
        self.blob = np.frombuffer(sk, np.uint8, blob_size, top + 9 * count)
        #: Per window, where the blob is, the last COPY's end and length and the datas taken
        #: before its first operation.
        self.states: list[tuple[int, int, int, int]] = []
        state = (0, -1, -1, 0)
        for first in range(0, count, _WINDOW):
            self.states.append(state)
            _, _, state = self._scan(first, state)
            if first // _WINDOW % 2 == 1:  # bounded RSS: a mapped skeleton's pages given back
                release_pages(sk)
        if state[0] != blob_size:
            raise FormatError("MCAP skeleton does not join to its file size")
        if state[3] != datas:
            raise FormatError(
                f"{'fewer' if datas < state[3] else 'more'} message datas than the MCAP "
                "skeleton holds"
            )
        self.windows = len(self.states)
        #: Per DATA operation of the window loaded, its number among the operations and its
        #: data's size; where the window ends.
        self.data = np.zeros(0, np.int64)
        self.sizes = np.zeros(0, np.int64)
        self.end = 0

    def _scan(
        self, first: int, state: tuple[int, int, int, int]
    ) -> tuple[NDArray[np.int64], NDArray[np.int64], tuple[int, int, int, int]]:
        """The window of operations from `first`, from the state before it: its DATA
        operations' places and sizes, and the state after it. FormatError when it is bad."""
        blob_at, last_end, last_length, taken = state
        kinds = self.kinds[first : first + _WINDOW]
        wide = self.args[first : first + _WINDOW]
        bad = np.flatnonzero((kinds > END) | (wide >= np.uint64(1 << 62)))
        if len(bad):
            raise FormatError(f"bad MCAP skeleton operation {int(kinds[bad[0]])}")
        args = wide.astype(np.int64)
        copy = kinds == COPY
        blob_end = blob_at + np.cumsum(np.where(copy, args, 0))
        if int(blob_end[-1]) > len(self.blob):
            raise FormatError("MCAP skeleton copies past its blob")
        taken += int(np.where(kinds == DATA, 1, np.where(kinds == DROP, args, 0)).sum())
        data = np.flatnonzero(kinds == DATA)
        last = np.maximum.accumulate(np.where(copy, np.arange(len(kinds)), -1))[data]
        ends = np.where(last >= 0, blob_end[np.maximum(last, 0)], last_end)
        lengths = np.where(last >= 0, args[np.maximum(last, 0)], last_length)
        if np.any(lengths < MESSAGE_HEAD):
            raise FormatError("message data of another size than its MCAP record")
        at = ends - MESSAGE_HEAD + 1
        raw = self.blob[at[:, None] + np.arange(8)].copy().view("<u8").reshape(-1)
        sizes = raw.astype(np.int64) - rec.MESSAGE_HEAD.size
        if copy.any():
            c = int(np.flatnonzero(copy)[-1])
            last_end, last_length = int(blob_end[c]), int(args[c])
        return first + data, sizes, (int(blob_end[-1]), last_end, last_length, taken)

    def load(self, window: int) -> int:
        """Window `window`'s DATA operations worked out: its first operation's number."""
        first = window * _WINDOW
        self.data, self.sizes, _ = self._scan(first, self.states[window])
        self.end = min(first + _WINDOW, len(self.kinds))
        return first

    def stop(self, first: int) -> int:
        """Where the batch of operations from `first` ends: at most `_BATCH` datas and
        about `_BATCH_BYTES` of them, inside the window loaded."""
        k = int(np.searchsorted(self.data, first))
        sizes = self.sizes[k : k + _BATCH]
        far = k + max(1, int(np.searchsorted(np.cumsum(sizes), _BATCH_BYTES)))
        if far >= len(self.data):
            return self.end
        return int(self.data[far])


class _Joined:
    """The pieces of batches of operations, in order: where the blob and the datas are at
    the next operation, and a chunk's records carried across batches."""

    def __init__(self, ops: _Ops, blob: memoryview, source: Source) -> None:
        self.ops, self.blob, self.source = ops, blob, source
        self.chunk: list[bytes] | None = None
        self.method = 0
        self.blob_at = 0
        self.taken = 0

    def batch(self, first: int, stop: int) -> Iterator[bytes | memoryview]:
        """The pieces of operations `first` to `stop`; a COPY past `_BIG_COPY` splits them,
        its bytes given as views of the blob (why: joined with the batch's datas, a 1 GiB
        kept chunk would be copied whole in memory)."""
        args = self.ops.args[first:stop]
        big = np.flatnonzero((self.ops.kinds[first:stop] == COPY) & (args >= _BIG_COPY))
        at = first
        for mark in big.tolist():
            if first + mark > at:
                yield from self._batch(at, first + mark)
            size = int(args[mark])
            piece = self.blob[self.blob_at : self.blob_at + size]
            self.blob_at += size
            if self.chunk is not None:
                self.chunk.append(bytes(piece))
            else:
                for start in range(0, size, _BIG_COPY):
                    yield piece[start : start + _BIG_COPY]
            at = first + mark + 1
        if at < stop:
            yield from self._batch(at, stop)

    def _batch(self, first: int, stop: int) -> Iterator[bytes]:
        ops = self.ops
        kinds = ops.kinds[first:stop]
        args = ops.args[first:stop].astype(np.int64)
        copy, data = kinds == COPY, kinds == DATA
        lengths = np.where(copy, args, 0)
        blob_end = np.cumsum(lengths)
        taken = self.taken + np.cumsum(np.where(data, 1, np.where(kinds == DROP, args, 0)))
        lo = int(np.searchsorted(ops.data, first))
        hi = int(np.searchsorted(ops.data, stop))
        buffer, starts, sizes = self.source.pick(taken[data] - 1)
        if np.any(sizes != ops.sizes[lo:hi]):
            raise FormatError("message data of another size than its MCAP record")
        used = int(blob_end[-1])
        joined = b"".join((self.blob[self.blob_at : self.blob_at + used], buffer))
        self.blob_at += used
        self.taken = int(taken[-1])
        begin = blob_end - lengths
        begin[data] = starts + used
        end = begin + lengths
        end[data] = begin[data] + sizes
        marks = np.flatnonzero((kinds == BEGIN) | (kinds == END)).tolist()
        at = 0
        for mark in [*marks, len(kinds)]:
            if mark > at:
                piece = slices(joined, begin[at:mark], end[at:mark])
                if self.chunk is None:
                    yield piece
                else:
                    self.chunk.append(piece)
            if mark == len(kinds):
                break
            arg = int(args[mark])
            if kinds[mark] == BEGIN:
                self.chunk, self.method = [], arg
            elif self.chunk is None:
                raise FormatError(f"bad MCAP skeleton operation {END}")
            else:
                out = rec.rebuild(self.method, b"".join(self.chunk))
                self.chunk = None
                if (len(out) << 32) | zlib.crc32(out) != arg:
                    raise FormatError("MCAP chunk does not compress back to its bytes")
                yield out
            at = mark + 1
