"""The skeleton of a `.db3` file: a piece table, then the file with every piece of message
data cut out; and the join that puts the data back (see `db3.py` for why a table).

The table is three LEB128 arrays (pieces per message; each piece's offset as a zigzag delta
from the previous piece's end; piece lengths), about 4-5 bytes per message of one piece,
encoded and decoded with numpy.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator, Sequence

import numpy as np
import numpy.typing as npt

from nanorec.errors import FormatError, TruncatedError

from .datas import Ints, Source, as_source, gather_into
from .storage import RELEASE_BYTES, release_pages

SKELETON_MAGIC = b"NRDB3SK1"
SKELETON_HEAD = struct.Struct("<8sQQQQQ")  # magic, messages, pieces, bytes of the 3 arrays
_BLOCK = 1 << 16
_BLOCK_BYTES = 16 << 20


def build_skeleton(
    view: memoryview,
    counts: Sequence[int] | npt.NDArray[np.uint32],
    positions: Sequence[int],
    lengths: Sequence[int],
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


def join_db3(
    skeleton: bytes | memoryview, datas: Source | Iterable[bytes | memoryview]
) -> Iterator[bytes | memoryview]:
    """The original file, in pieces of a few MiB, from its skeleton and the messages' data
    in the order `messages()` gave them (a `Source`, or byte strings).

    The table is read a window of messages at a time (never whole: 10 M messages made
    ~0.3 GB of columns) and twice: first each window's least piece position, then the
    pieces, held until no later window can hold a piece before them and then joined in
    file order. A `.db3` lays its messages nearly in order (a page's cells back to front),
    so few wait. A message whose pieces are joined in two blocks is read twice."""
    sk = memoryview(skeleton).cast("B")
    if len(sk) < SKELETON_HEAD.size or bytes(sk[:8]) != SKELETON_MAGIC:
        raise FormatError("not a .db3 skeleton", offset=0)
    _, nmsg, npieces, *sizes = SKELETON_HEAD.unpack_from(sk)
    at = SKELETON_HEAD.size
    views = []
    for size, count in zip(sizes, (nmsg, npieces, npieces), strict=True):
        if at + size > len(sk) or count > size:
            raise TruncatedError("skeleton table cut short", offset=at)
        views.append(sk[at : at + size])
        at += size
    body = sk[at:]
    source = as_source(datas)
    if len(source) != nmsg:
        raise FormatError(f"{len(source)} data given, the skeleton has {nmsg} messages")
    lows = [int(w.pos.min()) if len(w.pos) else 1 << 62 for w in _windows(views, nmsg, npieces)]
    # after window k, no piece lies before frontier[k]: the least position of the windows after
    frontier = np.minimum.accumulate(np.array([*lows[1:], 1 << 62], np.int64)[::-1])[::-1]
    joined = _Joined(source, body)
    held = _Window.none()
    for k, window in enumerate(_windows(views, nmsg, npieces)):
        joined.check_empty(window)
        held = held.plus(window)
        ready = held.pos < frontier[k]
        yield from joined.pieces(held.where(ready))
        held = held.where(~ready)
        if joined.bpos - joined.released > RELEASE_BYTES:
            joined.released = joined.bpos
            release_pages(sk)
    if joined.bpos < len(body):
        yield body[joined.bpos :]


class _Leb:
    """LEB128 values read in order from exactly the bytes `data`, `count` of them."""

    def __init__(self, data: memoryview, count: int) -> None:
        self.bytes = np.frombuffer(data, np.uint8)
        self.count = count
        self.at = self.taken = 0

    def take(self, n: int) -> npt.NDArray[np.uint64]:
        """The next `n` values. FormatError past the announced count or bytes."""
        if self.taken + n > self.count:
            raise FormatError(f"skeleton table: more than the {self.count} values announced")
        if not n:
            return np.zeros(0, np.uint64)
        chunk = self.bytes[self.at : self.at + 10 * n]  # a value is at most 9 bytes
        ends = np.flatnonzero(chunk < 0x80)[:n]
        if len(ends) < n:
            raise FormatError(f"skeleton table: {self.count} values announced, fewer found")
        stop = int(ends[-1]) + 1
        self.at += stop
        self.taken += n
        if self.taken == self.count and self.at != len(self.bytes):
            raise FormatError(f"skeleton table: more than the {self.count} values announced")
        return _unleb_block(chunk[:stop], ends)


class _Window:
    """Pieces of a window of messages: each one's file position, length, message, offset
    in that message's data and that data's size (the message's pieces added up)."""

    def __init__(self, pos: Ints, lens: Ints, msg: Ints, inner: Ints, size: Ints,
                 empty: Ints) -> None:  # fmt: skip
        self.pos, self.lens, self.msg, self.inner, self.size = pos, lens, msg, inner, size
        #: The window's messages without a piece (no data).
        self.empty = empty

    @staticmethod
    def none() -> _Window:
        nothing = np.zeros(0, np.int64)
        return _Window(nothing, nothing, nothing, nothing, nothing, nothing)

    def plus(self, other: _Window) -> _Window:
        if not len(self.pos):
            return other
        pos, lens, msg, inner, size = (
            np.concatenate((a, b)) for a, b in zip(self.columns(), other.columns(), strict=True)
        )
        return _Window(pos, lens, msg, inner, size, other.empty)

    def columns(self) -> tuple[Ints, Ints, Ints, Ints, Ints]:
        return self.pos, self.lens, self.msg, self.inner, self.size

    def where(self, keep: npt.NDArray[np.bool_]) -> _Window:
        pos, lens, msg, inner, size = (column[keep] for column in self.columns())
        return _Window(pos, lens, msg, inner, size, self.empty[:0])


def _windows(views: list[memoryview], nmsg: int, npieces: int) -> Iterator[_Window]:
    """The table's pieces a window of messages at a time (at most `_BLOCK` pieces, or one
    message), in message order; checks the table adds up."""
    counts_in, deltas_in, lens_in = (_Leb(v, n) for v, n in zip(views, (nmsg, npieces, npieces),
                                                                  strict=True))  # fmt: skip
    carry = np.zeros(0, np.int64)
    first = end = 0  # the window's first message; the file position after the last piece
    while first < nmsg:
        if len(carry) < _BLOCK and counts_in.taken < nmsg:
            more = counts_in.take(min(_BLOCK, nmsg - counts_in.taken))
            if int(more.max()) > npieces:
                raise FormatError("skeleton table is inconsistent")
            carry = np.concatenate((carry, more.astype(np.int64)))
        total = np.cumsum(carry)
        take = max(1, int(np.searchsorted(total, _BLOCK, side="right")))
        counts, carry = carry[:take], carry[take:]
        n = int(total[take - 1])
        deltas = _unzigzag(deltas_in.take(n))
        raw = lens_in.take(n)
        if n and (int(raw.min()) == 0 or int(raw.max()) > 1 << 40):
            raise FormatError("skeleton table is inconsistent")
        lens = raw.astype(np.int64)
        csum = np.cumsum(lens)
        pos: Ints = end + np.cumsum(deltas) + csum - lens
        end = int(pos[-1] + lens[-1]) if n else end
        some = counts > 0
        starts = (np.cumsum(counts) - counts)[some]
        msg = np.repeat(np.arange(first, first + take, dtype=np.int64), counts)
        inner = csum - lens
        sizes = np.add.reduceat(lens, starts) if n else np.zeros(0, np.int64)
        inner -= np.repeat(inner[starts], counts[some])
        size = np.repeat(sizes, counts[some])
        empty: Ints = first + np.flatnonzero(~some)
        yield _Window(pos, lens, msg, inner, size, empty)
        first += take
    if deltas_in.taken != npieces or lens_in.taken != npieces:
        raise FormatError("skeleton table is inconsistent")


class _Joined:
    """The file joined so far: how far its body is used and where its last piece ended."""

    def __init__(self, source: Source, body: memoryview) -> None:
        self.source, self.body = source, body
        self.bpos = self.end = self.released = 0

    def check_empty(self, window: _Window) -> None:
        """Messages without a piece must have no data."""
        if not len(window.empty):
            return
        _, _, lengths = self.source.pick(window.empty)
        wrong = np.flatnonzero(lengths)
        if len(wrong):
            m = int(window.empty[int(wrong[0])])
            raise FormatError(f"message {m} has {int(lengths[wrong[0]])} bytes, the skeleton 0")

    def pieces(self, ready: _Window) -> Iterator[memoryview]:
        """`ready`'s pieces in file order with the body's bytes before each, in blocks of
        at most `_BLOCK` pieces and about `_BLOCK_BYTES`."""
        order = np.argsort(ready.pos, kind="stable")
        pos = ready.pos[order]
        first = 0
        while first < len(pos):
            far = int(np.searchsorted(pos, pos[first] + _BLOCK_BYTES))
            stop = min(first + _BLOCK, len(pos), max(far, first + 1))
            yield self._block(ready, order[first:stop])
            first = stop

    def _block(self, ready: _Window, take: Ints) -> memoryview:
        pos, lens = ready.pos[take], ready.lens[take]
        msg, inner, size = ready.msg[take], ready.inner[take], ready.size[take]
        gaps = pos - np.concatenate(([self.end], (pos + lens)[:-1]))
        if int(gaps.min()) < 0:
            raise FormatError("skeleton pieces overlap or lie outside the file")
        used = int(gaps.sum())
        if self.bpos + used > len(self.body):
            raise FormatError("skeleton pieces lie outside the file")
        new, where, back = np.unique(msg, return_index=True, return_inverse=True)
        buffer, starts, lengths = self.source.pick(new)
        wrong = np.flatnonzero(lengths != size[where])
        if len(wrong):
            k = int(wrong[0])
            raise FormatError(
                f"message {int(new[k])} has {int(lengths[k])} bytes, the skeleton "
                f"{int(size[where[k]])}"
            )
        data = starts[back] + inner
        self.end = int(pos[-1] + lens[-1])
        # each piece's body bytes (the gap before it), then its data, copied into place
        out = np.empty(used + int(lens.sum()), np.uint8)
        out_at = np.cumsum(gaps + lens) - lens - gaps
        gather_into(out, out_at, self.body[self.bpos : self.bpos + used], np.cumsum(gaps) - gaps,
                    gaps)  # fmt: skip
        gather_into(out, out_at + gaps, buffer, data, lens)
        self.bpos += used
        return out.data
