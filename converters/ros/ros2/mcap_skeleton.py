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

SKELETON_MAGIC = b"nrMCAPsk"
SKELETON_VERSION = 1
_SKELETON_HEAD = struct.Struct("<BQQQ")  # version, file size, operations, blob size

COPY, DATA, DROP, BEGIN, END = range(5)

#: opcode u8 + length u64 + channel u16 + sequence u32 + log_time u64 + publish_time u64
MESSAGE_HEAD = rec.RECORD_HEAD.size + rec.MESSAGE_HEAD.size
_U64 = struct.Struct("<Q")
#: A batch of operations holds at most this many datas, or about this many bytes of them.
_BATCH = 1 << 16
_BATCH_BYTES = 16 << 20


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
        head = _SKELETON_HEAD.pack(SKELETON_VERSION, file_size, len(self.kinds), len(self.blob))
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
    top = len(SKELETON_MAGIC) + _SKELETON_HEAD.size
    if len(sk) < top or bytes(sk[:8]) != SKELETON_MAGIC:
        raise FormatError("not an MCAP skeleton", offset=0)
    version, file_size, count, blob_size = _SKELETON_HEAD.unpack_from(sk, 8)
    if version != SKELETON_VERSION:
        raise FormatError("unknown MCAP skeleton version", offset=8, actual=version)
    if len(sk) != top + 9 * count + blob_size:
        raise FormatError("MCAP skeleton of another size", offset=0)
    source = as_source(datas)
    ops = _Ops(sk, top, count, blob_size, len(source))
    joined = _Joined(ops, sk[top + 9 * count :], source)
    written = 0
    first = 0
    while first < count:
        stop = ops.stop(first)
        for piece in joined.batch(first, stop):
            written += len(piece)
            yield piece
        first = stop
    if joined.chunk is not None:
        raise FormatError("MCAP skeleton ends inside a chunk")
    if written != file_size:
        raise FormatError("MCAP skeleton does not join to its file size", expected=file_size)


class _Ops:
    """A skeleton's operations as arrays: where each COPY's bytes are in the blob, which
    datas each DATA or DROP takes, and the size each DATA's record says."""

    def __init__(self, sk: memoryview, top: int, count: int, blob_size: int,
                 datas: int) -> None:  # fmt: skip
        self.kinds = np.frombuffer(sk, np.uint8, count, top).astype(np.int64)
        self.args = np.frombuffer(sk, "<u8", count, top + count).astype(np.int64)
        kinds, args = self.kinds, self.args
        if count and (kinds.max() > END or args.min() < 0):
            bad = int(np.flatnonzero((kinds > END) | (args < 0))[0])
            raise FormatError(f"bad MCAP skeleton operation {int(kinds[bad])}")
        copy = kinds == COPY
        lengths = np.where(copy, args, 0)
        self.blob_end = np.cumsum(lengths)
        if count and int(self.blob_end[-1]) != blob_size:
            raise FormatError(
                "MCAP skeleton copies past its blob"
                if int(self.blob_end[-1]) > blob_size
                else "MCAP skeleton does not join to its file size"
            )
        takes = np.where(kinds == DATA, 1, np.where(kinds == DROP, args, 0))
        self.data_end = np.cumsum(takes)
        total = int(self.data_end[-1]) if count else 0
        if total != datas:
            raise FormatError(
                f"{'fewer' if datas < total else 'more'} message datas than the MCAP skeleton holds"
            )
        self.data = np.flatnonzero(kinds == DATA)
        last = np.maximum.accumulate(np.where(copy, np.arange(count), -1))[self.data]
        self.sizes = self._sizes(sk[top + 9 * count :], last)

    def _sizes(self, blob: memoryview, last: NDArray[np.int64]) -> NDArray[np.int64]:
        """Each DATA's size, as the record before it says (FormatError when none does)."""
        ends = self.blob_end[np.maximum(last, 0)]
        if len(last) and (
            np.any(last < 0) or np.any(self.args[np.maximum(last, 0)] < MESSAGE_HEAD)
        ):
            raise FormatError("message data of another size than its MCAP record")
        at = ends - MESSAGE_HEAD + 1
        raw = np.frombuffer(blob, np.uint8)[at[:, None] + np.arange(8)]
        sizes: NDArray[np.int64] = raw.copy().view("<u8").reshape(-1).astype(np.int64)
        return sizes - rec.MESSAGE_HEAD.size

    def stop(self, first: int) -> int:
        """Where the batch of operations from `first` ends: at most `_BATCH` datas and
        about `_BATCH_BYTES` of them."""
        k = int(np.searchsorted(self.data, first))
        sizes = self.sizes[k : k + _BATCH]
        far = k + max(1, int(np.searchsorted(np.cumsum(sizes), _BATCH_BYTES)))
        if far >= len(self.data):
            return len(self.kinds)
        return int(self.data[far])


class _Joined:
    """The pieces of batches of operations, with a chunk's records carried across."""

    def __init__(self, ops: _Ops, blob: memoryview, source: Source) -> None:
        self.ops, self.blob, self.source = ops, blob, source
        self.chunk: list[bytes] | None = None
        self.method = 0

    def batch(self, first: int, stop: int) -> Iterator[bytes]:
        ops = self.ops
        kinds = ops.kinds[first:stop]
        lo = int(np.searchsorted(ops.data, first))
        hi = int(np.searchsorted(ops.data, stop))
        wanted = ops.data_end[ops.data[lo:hi]] - 1
        buffer, starts, lengths = self.source.pick(wanted)
        if np.any(lengths != ops.sizes[lo:hi]):
            raise FormatError("message data of another size than its MCAP record")
        blob_from = int(ops.blob_end[first - 1]) if first else 0
        blob_to = int(ops.blob_end[stop - 1])
        joined = b"".join((self.blob[blob_from:blob_to], buffer))
        begin = ops.blob_end[first:stop] - ops.args[first:stop] - blob_from
        begin[kinds == DATA] = starts + (blob_to - blob_from)
        end = begin + np.where(kinds == COPY, ops.args[first:stop], 0)
        end[kinds == DATA] = begin[kinds == DATA] + lengths
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
            arg = int(ops.args[first + mark])
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
