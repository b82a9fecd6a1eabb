"""The skeleton of a `.db3` file: a piece table, then the file with every piece of message
data cut out; and the join that puts the data back (see `db3.py` for why a table).

The table is three LEB128 arrays (pieces per message; each piece's offset as a zigzag delta
from the previous piece's end; piece lengths), about 4-5 bytes per message of one piece,
encoded and decoded with numpy.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from nanorec.errors import FormatError, TruncatedError

from .datas import Source, as_source, slices
from .storage import RELEASE_BYTES, release_pages

SKELETON_MAGIC = b"NRDB3SK1"
SKELETON_HEAD = struct.Struct("<8sQQQQQ")  # magic, messages, pieces, bytes of the 3 arrays
_BLOCK = 1 << 16
_BLOCK_BYTES = 16 << 20


def build_skeleton(
    view: memoryview, counts: Sequence[int], positions: Sequence[int], lengths: Sequence[int]
) -> bytearray:
    """The piece table and the file `view` without the pieces (`counts` pieces per message,
    in message order; each piece's file offset and length). Built a block of pieces at a
    time, temporaries dropped as soon as done: a bag holds millions of pieces."""
    pos = np.asarray(positions, np.int64)
    lens = np.asarray(lengths, np.int64)
    prev = np.concatenate(([0], (pos + lens)[:-1]))
    parts = [
        leb128(np.asarray(counts, np.uint64)),
        leb128(zigzag(pos - prev)),
        leb128(lens.astype(np.uint64)),
    ]
    del prev
    order = np.argsort(pos, kind="stable")
    starts = pos[order]
    ends = starts + lens[order]
    del pos, lens, order
    if len(starts) and np.any(starts[1:] < ends[:-1]):
        raise FormatError("two messages claim the same bytes")  # pages are claimed once
    out = bytearray(SKELETON_HEAD.pack(SKELETON_MAGIC, len(counts), len(starts), *map(len, parts)))
    for part in parts:
        out += part
    del parts
    at = released = 0
    for first in range(0, len(starts), _BLOCK):
        block = slice(first, first + _BLOCK)
        for off, end in zip(starts[block].tolist(), ends[block].tolist(), strict=True):
            out += view[at:off]
            at = end
        if at - released > RELEASE_BYTES:  # bounded RSS: a big file's pages given back
            released = at
            release_pages(view)
    out += view[at:]
    return out


def zigzag(x: npt.NDArray[np.int64]) -> npt.NDArray[np.uint64]:
    """Signed values as unsigned ones, small magnitudes small (0, -1, 1 -> 0, 1, 2)."""
    return ((x << 1) ^ (x >> 63)).astype(np.uint64)


def _unzigzag(u: npt.NDArray[np.uint64]) -> npt.NDArray[np.int64]:
    out: npt.NDArray[np.int64] = (u >> np.uint64(1)).astype(np.int64) ^ -(u & np.uint64(1)).astype(
        np.int64
    )
    return out


def leb128(v: npt.NDArray[np.uint64]) -> bytes:
    """LEB128 of each value (7 bits a byte, low first, high bit = more), vectorised, a
    block of values at a time (its temporaries are several times the values' size)."""
    if not len(v):
        return b""
    if len(v) > _BLOCK:
        return b"".join(leb128(v[at : at + _BLOCK]) for at in range(0, len(v), _BLOCK))
    nbytes = np.ones(len(v), np.int64)
    x = v >> np.uint64(7)
    while x.any():
        nbytes += x > 0
        x >>= np.uint64(7)
    starts = np.cumsum(nbytes) - nbytes
    idx = np.repeat(np.arange(len(v)), nbytes)
    k = np.arange(int(nbytes.sum())) - np.repeat(starts, nbytes)
    out = ((v[idx] >> (7 * k).astype(np.uint64)) & np.uint64(0x7F)).astype(np.uint8)
    out[k < nbytes[idx] - 1] |= 0x80
    return bytes(out.tobytes())


def _unleb(b: memoryview, n: int) -> npt.NDArray[np.uint64]:
    """`n` LEB128 values from exactly the bytes `b` (FormatError when they are not), a block
    of bytes at a time (the temporaries are 8-16 bytes per byte of the table)."""
    a = np.frombuffer(b, np.uint8)
    ends = np.flatnonzero(a < 0x80)
    if len(ends) != n or (len(a) and a[-1] >= 0x80):
        raise FormatError(f"skeleton table: {len(ends)} values where {n} were announced")
    out = np.zeros(n, np.uint64)
    first = 0
    for at in range(0, n, _BLOCK):
        block = ends[at : at + _BLOCK]
        out[at : at + len(block)] = _unleb_block(a[first : int(block[-1]) + 1], block - first)
        first = int(block[-1]) + 1
    return out


def _unleb_block(a: npt.NDArray[np.uint8], ends: npt.NDArray[np.intp]) -> npt.NDArray[np.uint64]:
    """The values whose last bytes are at `ends` in `a` (which they fill)."""
    starts = np.concatenate(([0], ends[:-1] + 1))
    lens = ends - starts + 1
    if lens.max() > 9:
        raise FormatError("skeleton table: value too large")
    k = np.arange(len(a)) - np.repeat(starts, lens)
    vals = (a & 0x7F).astype(np.uint64) << (7 * k).astype(np.uint64)
    out: npt.NDArray[np.uint64] = np.bitwise_or.reduceat(vals, starts)
    return out


def _narrow_unsigned(values: npt.NDArray[np.uint64]) -> npt.NDArray[Any]:
    """Decoded table values as int32 when they all fit, else int64 (FormatError past it)."""
    top = int(values.max()) if len(values) else 0
    if top >= 1 << 63:
        raise FormatError("skeleton table is inconsistent")
    return values.astype(np.int32 if top < 1 << 31 else np.int64)


def _narrow(values: npt.NDArray[np.int64]) -> npt.NDArray[Any]:
    """`values` as int32 when they all fit (half the memory), else as they are."""
    if not len(values) or (int(values.max()) < 1 << 31 and int(values.min()) >= -(1 << 31)):
        return values.astype(np.int32)
    return values


def join_db3(
    skeleton: bytes | memoryview, datas: Source | Iterable[bytes | memoryview]
) -> Iterator[bytes | memoryview]:
    """The original file, in pieces of a few MiB, from its skeleton and the messages' data
    in the order `messages()` gave them (a `Source`, or byte strings). The pieces are taken
    a block at a time in file order; the data of a message whose pieces go on past the
    block (an overflow chain) is held until its last piece."""
    sk = memoryview(skeleton).cast("B")
    if len(sk) < SKELETON_HEAD.size or bytes(sk[:8]) != SKELETON_MAGIC:
        raise FormatError("not a .db3 skeleton", offset=0)
    _, nmsg, npieces, *sizes = SKELETON_HEAD.unpack_from(sk)
    at = SKELETON_HEAD.size
    arrays = []
    for size, count in zip(sizes, (nmsg, npieces, npieces), strict=True):
        if at + size > len(sk) or count > size:
            raise TruncatedError("skeleton table cut short", offset=at)
        arrays.append(_unleb(sk[at : at + size], count))
        at += size
    body = sk[at:]
    source = as_source(datas)
    pieces = _Pieces(arrays, nmsg, npieces, len(body))
    if len(source) != nmsg:
        raise FormatError(f"{len(source)} data given, the skeleton has {nmsg} messages")
    held: dict[int, bytes] = {}
    release_pages(sk)  # the tables are read: a mapped skeleton's pages given back
    bpos = first = released = 0
    while first < npieces:
        stop = pieces.stop(first)
        out, bpos = pieces.block(first, stop, source, body, bpos, held)
        yield out
        first = stop
        if bpos - released > RELEASE_BYTES:
            released = bpos
            release_pages(sk)
    pieces.check_empty(source)
    if bpos < len(body):
        yield body[bpos:]


class _Pieces:
    """The skeleton's pieces in file order: for each, its message, its offset in that
    message's data, its length and its file position."""

    def __init__(self, arrays: list[npt.NDArray[np.uint64]], nmsg: int, npieces: int,
                 body: int) -> None:  # fmt: skip
        # Millions of pieces: each column as narrow as its values allow, temporaries
        # dropped as soon as done.
        counts = _narrow_unsigned(arrays[0])
        lens = _narrow_unsigned(arrays[2])
        deltas = _unzigzag(arrays[1])
        arrays.clear()  # the caller's list: its columns go now
        if int(counts.sum()) != npieces or np.any(lens <= 0) or int(lens.sum()) > 1 << 50:
            raise FormatError("skeleton table is inconsistent")
        csum = np.cumsum(lens, dtype=np.int64)
        pos = np.cumsum(deltas, out=deltas)
        pos += csum
        pos -= lens
        order = np.argsort(pos, kind="stable")
        self.pos = pos[order]
        del pos
        self.lens = _narrow(lens[order])
        total = body + (int(csum[-1]) if npieces else 0)
        if npieces and (self.pos[0] < 0 or int(self.pos[-1]) + int(self.lens[-1]) > total):
            raise FormatError("skeleton pieces overlap or lie outside the file")
        for at in range(0, npieces - 1, _BLOCK * 16):  # a block at a time: no column of ends
            stop = min(at + _BLOCK * 16, npieces - 1)
            if np.any(self.pos[at + 1 : stop + 1] < self.pos[at:stop] + self.lens[at:stop]):
                raise FormatError("skeleton pieces overlap or lie outside the file")
        some = counts > 0
        first = (np.cumsum(counts) - counts)[some]
        self.sizes = np.zeros(nmsg, np.int64)
        if npieces:
            self.sizes[some] = np.add.reduceat(lens, first, dtype=np.int64)
        self.sizes = _narrow(self.sizes)
        starts = csum - lens  # each piece's offset among the message's data, then
        del csum, lens
        starts -= np.repeat(starts[first], counts[some])
        self.inner = _narrow(starts[order])
        del starts
        self.msg = _narrow(np.repeat(np.arange(nmsg, dtype=np.int64), counts))[order]
        rank = np.empty(npieces, self.msg.dtype if npieces <= nmsg else np.int64)
        rank[order] = np.arange(npieces)
        del order
        self.empty = np.flatnonzero(~some)
        #: Per message, the file-order number of its first and last piece.
        self.first = np.full(nmsg, -1, rank.dtype)
        self.last = np.full(nmsg, -1, rank.dtype)
        if npieces:
            self.first[some] = np.minimum.reduceat(rank, first)
            self.last[some] = np.maximum.reduceat(rank, first)
        self.end = 0  # file position after the pieces joined so far

    def stop(self, first: int) -> int:
        """Where the block of pieces from `first` ends: at most `_BLOCK` pieces, and at most
        `_BLOCK_BYTES` of the file (a block of image pieces is a few, not 65536)."""
        far = int(np.searchsorted(self.pos, self.pos[first] + _BLOCK_BYTES))
        return min(first + _BLOCK, len(self.pos), max(far, first + 1))

    def block(
        self,
        first: int,
        stop: int,
        source: Source,
        body: memoryview,
        bpos: int,
        held: dict[int, bytes],
    ) -> tuple[bytes, int]:
        """Pieces `first` to `stop - 1` with the file's bytes before each: the bytes, and
        how far the body is used."""
        msg = self.msg[first:stop]
        number = np.arange(first, stop)
        new = msg[self.first[msg] == number]  # messages whose first piece is here
        buffer, starts, lengths = source.pick(new)
        wrong = np.flatnonzero(lengths != self.sizes[new])
        if len(wrong):
            k = int(wrong[0])
            raise FormatError(
                f"message {int(new[k])} has {int(lengths[k])} bytes, the skeleton "
                f"{int(self.sizes[new[k]])}"
            )
        carried = np.unique(msg[self.first[msg] < first])
        keys, places = new, starts
        if len(carried):
            extra = b"".join(held[m] for m in carried.tolist())
            sizes = self.sizes[carried]
            keys = np.concatenate((new, carried))
            places = np.concatenate((starts, len(buffer) + np.cumsum(sizes) - sizes))
            buffer = bytes(buffer) + extra
        for m in carried[self.last[carried] < stop].tolist():
            del held[m]
        for m, start, length in zip(
            new[self.last[new] >= stop].tolist(),
            starts[self.last[new] >= stop].tolist(),
            lengths[self.last[new] >= stop].tolist(),
            strict=True,
        ):
            held[m] = bytes(buffer[start : start + length])
        sort = np.argsort(keys, kind="stable")
        data = places[sort][np.searchsorted(keys[sort], msg)] + self.inner[first:stop]
        pos = self.pos[first:stop]
        lens = self.lens[first:stop]
        gaps = pos - np.concatenate(([self.end], (pos + lens)[:-1]))
        self.end = int(pos[-1] + lens[-1])
        used = int(gaps.sum())
        if bpos + used > len(body):
            raise FormatError("skeleton pieces lie outside the file")
        # one buffer to slice: this block's body bytes, then the data
        joined = bytes(body[bpos : bpos + used]) + bytes(buffer)
        gap_at = np.cumsum(gaps) - gaps
        begin = np.empty(2 * len(gaps), np.int64)
        end = np.empty(2 * len(gaps), np.int64)
        begin[0::2] = gap_at
        end[0::2] = gap_at + gaps
        begin[1::2] = data + used
        end[1::2] = data + used + lens
        return slices(joined, begin, end), bpos + used

    def check_empty(self, source: Source) -> None:
        """Messages without a piece must have no data."""
        for at in range(0, len(self.empty), _BLOCK):
            _, _, lengths = source.pick(self.empty[at : at + _BLOCK])
            wrong = np.flatnonzero(lengths)
            if len(wrong):
                m = int(self.empty[at + int(wrong[0])])
                raise FormatError(f"message {m} has {int(lengths[wrong[0]])} bytes, the skeleton 0")
