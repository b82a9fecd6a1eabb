"""A `.db3` skeleton (`db3_skeleton.build_skeleton`'s bytes) written to a file, in bounded
memory.

Why: `build_skeleton` returns the skeleton whole (a third of a bag of small messages: ~330
MB for 1 GB) and holds a dozen temporaries of one int64 a piece (~80 MB each for 10 M
messages). Here the piece table is encoded a block of pieces at a time, the pieces are
sorted in place (each one's offset and 16-bit length as one int64 key, in the offsets'
own buffer), and the file between them is copied a block at a time, with numpy where the
stretches are small.
"""

from __future__ import annotations

from array import array
from typing import IO, Any, Final

import numpy as np
from numpy.typing import NDArray

from nanorec.errors import FormatError

from .db3_skeleton import SKELETON_HEAD, SKELETON_MAGIC, leb128, zigzag
from .storage import RELEASE_BYTES, gather, release_pages

_BLOCK: Final = 1 << 16
#: Bytes kept between a block's pieces that are gathered with numpy (more: sliced).
_GATHER: Final = 8 << 20


class PieceCounts:
    """Pieces a message, in message order: 1 for nearly every message (its data on its
    leaf page), so kept as how many there are and the others (an overflowing blob, an
    empty one): not 4 bytes a message."""

    def __init__(self) -> None:
        self.count = 0
        self._at = array("q")  # messages whose count is not 1, in order
        self._other = array("I")  # and their counts

    def __len__(self) -> int:
        return self.count

    def append(self, pieces: int) -> None:
        if pieces != 1:
            self._at.append(self.count)
            self._other.append(pieces)
        self.count += 1

    def add_ones(self, messages: int) -> None:
        self.count += messages

    def values(self, start: int = 0, stop: int | None = None) -> NDArray[np.uint32]:
        """The counts of messages `start` to `stop`, as uint32."""
        stop = self.count if stop is None else min(stop, self.count)
        out = np.ones(max(0, stop - start), np.uint32)
        at = np.frombuffer(self._at, np.int64) if self._at else np.zeros(0, np.int64)
        lo, hi = np.searchsorted(at, [start, stop])
        if hi > lo:
            out[at[lo:hi] - start] = np.frombuffer(self._other, "=u4")[lo:hi]
        return out


def write_skeleton(
    view: memoryview,
    counts: PieceCounts,
    positions: array[int],
    lengths: array[int],
    out: IO[bytes],
) -> None:
    """Write to `out` the skeleton of the file `view` (see `build_skeleton`), whose pieces
    are `counts` a message, at `positions` (int64) with `lengths`. `positions` is sorted in
    place (it is spent) and `lengths` (uint16: a piece lies on one page) emptied."""
    pos = np.frombuffer(positions, np.int64) if len(positions) else np.zeros(0, np.int64)
    lens = np.asarray(lengths, np.int64) if not len(lengths) else np.frombuffer(lengths, "=u2")
    start = out.tell()
    out.write(bytes(SKELETON_HEAD.size))
    written = 0
    for at in range(0, len(counts), _BLOCK):
        encoded = leb128(counts.values(at, at + _BLOCK).astype(np.uint64))
        out.write(encoded)
        written += len(encoded)
    sizes = [(written, len(counts))]
    sizes.append(_write_deltas(out, pos, lens))
    sizes.append(_write_leb(out, lens))
    end = out.tell()
    out.seek(start)
    out.write(
        SKELETON_HEAD.pack(
            SKELETON_MAGIC, sizes[0][1], len(pos), sizes[0][0], sizes[1][0], sizes[2][0]
        )
    )
    out.seek(end)
    # each piece as one sortable key, in place: its offset, then its length in 16 bits
    if len(pos) and int(pos.max()) >= 1 << 47:
        raise FormatError("a .db3 file beyond 128 TiB")
    pos <<= 16
    pos |= lens
    del lens
    del lengths[:]  # spent: its 2 bytes a piece are needed no more
    pos.sort()
    _write_kept(view, pos, out)


def _write_leb(out: IO[bytes], values: NDArray[Any]) -> tuple[int, int]:
    """LEB128 of `values`, a block at a time: (bytes written, values)."""
    written = 0
    for at in range(0, len(values), _BLOCK):
        encoded = leb128(values[at : at + _BLOCK].astype(np.uint64))
        out.write(encoded)
        written += len(encoded)
    return written, len(values)


def _write_deltas(out: IO[bytes], pos: NDArray[np.int64], lens: NDArray[Any]) -> tuple[int, int]:
    """Each piece's offset as a zigzag delta from the previous piece's end."""
    written = 0
    end = 0
    for at in range(0, len(pos), _BLOCK):
        block, sizes = pos[at : at + _BLOCK], lens[at : at + _BLOCK].astype(np.int64)
        prev = np.concatenate(([end], (block + sizes)[:-1]))
        end = int(block[-1] + sizes[-1])
        encoded = leb128(zigzag(block - prev))
        out.write(encoded)
        written += len(encoded)
    return written, len(pos)


def _write_kept(view: memoryview, keys: NDArray[np.int64], out: IO[bytes]) -> None:
    """The file without the pieces (`keys`: each piece's offset << 16 | length, sorted), a
    block at a time; FormatError when two pieces overlap."""
    data = np.frombuffer(view, np.uint8)
    at = released = 0
    for first in range(0, len(keys), _BLOCK):
        block = keys[first : first + _BLOCK]
        begin, ends = block >> 16, (block >> 16) + (block & 0xFFFF)
        kept = np.concatenate(([at], ends[:-1]))
        sizes = begin - kept
        if (sizes < 0).any():
            raise FormatError("two messages claim the same bytes")  # pages are claimed once
        if int(sizes.sum()) <= _GATHER:
            out.write(gather(data, kept, sizes).data)
        else:
            for off, size in zip(kept.tolist(), sizes.tolist(), strict=True):
                out.write(view[off : off + size])
        at = int(ends[-1])
        if at - released > RELEASE_BYTES:  # bounded RSS: a big file's pages given back
            released = at
            release_pages(view)
    out.write(view[at:])
