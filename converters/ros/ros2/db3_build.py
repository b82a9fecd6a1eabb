"""A `.db3` skeleton (`db3_skeleton.build_skeleton`'s bytes) written to a file, in bounded
memory.

Why: `build_skeleton` returns the skeleton whole (a third of a bag of small messages: ~330
MB for 1 GB) and holds a dozen temporaries of one int64 a piece (~80 MB each for 10 M
messages). Here the piece table is encoded a block of pieces at a time, the pieces are
sorted in place (their starts, and their ends apart: pieces that do not overlap pair up
again once both are sorted, and if two do overlap the sorted columns show it), and the file
between them is copied a block at a time, with numpy where the stretches are small.
"""

from __future__ import annotations

from array import array
from typing import IO, Any, Final

import numpy as np

from nanorec.errors import FormatError

from .db3_skeleton import _HEAD, _MAGIC, _leb, _zigzag
from .storage import RELEASE_BYTES, gather, release_pages

_BLOCK: Final = 1 << 16
#: Bytes kept between a block's pieces that are gathered with numpy (more: sliced).
_GATHER: Final = 8 << 20


def write_skeleton(
    view: memoryview, counts: array[int], positions: array[int], lengths: array[int], out: IO[bytes]
) -> None:
    """Write to `out` the skeleton of the file `view` (see `build_skeleton`), whose pieces
    are `counts` a message, at `positions` (int64) with `lengths`. `positions` is sorted in
    place (it is spent), `counts` and `lengths` emptied."""
    pos = np.frombuffer(positions, np.int64) if len(positions) else np.zeros(0, np.int64)
    lens = np.asarray(lengths, np.int64) if not len(lengths) else np.frombuffer(lengths, "=u4")
    start = out.tell()
    out.write(bytes(_HEAD.size))
    sizes = [_write_leb(out, (np.frombuffer(counts, "=u4") if len(counts) else pos[:0]))]
    del counts[:]
    sizes.append(_write_deltas(out, pos, lens))
    sizes.append(_write_leb(out, lens))
    end = out.tell()
    out.seek(start)
    out.write(_HEAD.pack(_MAGIC, sizes[0][1], len(pos), sizes[0][0], sizes[1][0], sizes[2][0]))
    out.seek(end)
    ends = pos + lens
    del lens
    del lengths[:]  # spent too: its 4 bytes a piece are needed no more
    pos.sort()
    ends.sort()
    for at in range(0, len(pos) - 1, _BLOCK):
        stop = min(at + _BLOCK, len(pos) - 1)
        if (pos[at + 1 : stop + 1] < ends[at:stop]).any():
            raise FormatError("two messages claim the same bytes")  # pages are claimed once
    _write_kept(view, pos, ends, out)


def _write_leb(out: IO[bytes], values: Any) -> tuple[int, int]:
    """LEB128 of `values`, a block at a time: (bytes written, values)."""
    written = 0
    for at in range(0, len(values), _BLOCK):
        encoded = _leb(values[at : at + _BLOCK].astype(np.uint64))
        out.write(encoded)
        written += len(encoded)
    return written, len(values)


def _write_deltas(out: IO[bytes], pos: Any, lens: Any) -> tuple[int, int]:
    """Each piece's offset as a zigzag delta from the previous piece's end."""
    written = 0
    end = 0
    for at in range(0, len(pos), _BLOCK):
        block, sizes = pos[at : at + _BLOCK], lens[at : at + _BLOCK].astype(np.int64)
        prev = np.concatenate(([end], (block + sizes)[:-1]))
        end = int(block[-1] + sizes[-1])
        encoded = _leb(_zigzag(block - prev))
        out.write(encoded)
        written += len(encoded)
    return written, len(pos)


def _write_kept(view: memoryview, starts: Any, ends: Any, out: IO[bytes]) -> None:
    """The file without the pieces (sorted `starts` and `ends`), a block at a time."""
    data = np.frombuffer(view, np.uint8)
    at = released = 0
    for first in range(0, len(starts), _BLOCK):
        begin = starts[first : first + _BLOCK]
        kept = np.concatenate(([at], ends[first : first + _BLOCK][:-1]))
        sizes = begin - kept
        if int(sizes.sum()) <= _GATHER:
            out.write(gather(data, kept, sizes).data)
        else:
            for off, size in zip(kept.tolist(), sizes.tolist(), strict=True):
                out.write(view[off : off + size])
        at = int(ends[min(first + _BLOCK, len(ends)) - 1])
        if at - released > RELEASE_BYTES:  # bounded RSS: a big file's pages given back
            released = at
            release_pages(view)
    out.write(view[at:])
