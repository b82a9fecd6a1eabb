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

from .storage import RELEASE_BYTES, release_pages

_MAGIC = b"NRDB3SK1"
_HEAD = struct.Struct("<8sQQQQQ")  # magic, messages, pieces, bytes of the 3 arrays
_BLOCK = 1 << 16


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
        _leb(np.asarray(counts, np.uint64)),
        _leb(_zigzag(pos - prev)),
        _leb(lens.astype(np.uint64)),
    ]
    del prev
    order = np.argsort(pos, kind="stable")
    starts = pos[order]
    ends = starts + lens[order]
    del pos, lens, order
    if len(starts) and np.any(starts[1:] < ends[:-1]):
        raise FormatError("two messages claim the same bytes")  # pages are claimed once
    out = bytearray(_HEAD.pack(_MAGIC, len(counts), len(starts), *map(len, parts)))
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


def _zigzag(x: npt.NDArray[np.int64]) -> npt.NDArray[np.uint64]:
    return ((x << 1) ^ (x >> 63)).astype(np.uint64)


def _unzigzag(u: npt.NDArray[np.uint64]) -> npt.NDArray[np.int64]:
    out: npt.NDArray[np.int64] = (u >> np.uint64(1)).astype(np.int64) ^ -(u & np.uint64(1)).astype(
        np.int64
    )
    return out


def _leb(v: npt.NDArray[np.uint64]) -> bytes:
    """LEB128 of each value (7 bits a byte, low first, high bit = more), vectorised, a
    block of values at a time (its temporaries are several times the values' size)."""
    if not len(v):
        return b""
    if len(v) > _BLOCK:
        return b"".join(_leb(v[at : at + _BLOCK]) for at in range(0, len(v), _BLOCK))
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
    """`n` LEB128 values from exactly the bytes `b` (FormatError when they are not)."""
    a = np.frombuffer(b, np.uint8)
    ends = np.flatnonzero(a < 0x80)
    if len(ends) != n or (len(a) and a[-1] >= 0x80):
        raise FormatError(f"skeleton table: {len(ends)} values where {n} were announced")
    if not n:
        return np.zeros(0, np.uint64)
    starts = np.concatenate(([0], ends[:-1] + 1))
    lens = ends - starts + 1
    if lens.max() > 9:
        raise FormatError("skeleton table: value too large")
    k = np.arange(len(a)) - np.repeat(starts, lens)
    vals = (a & 0x7F).astype(np.uint64) << (7 * k).astype(np.uint64)
    out: npt.NDArray[np.uint64] = np.bitwise_or.reduceat(vals, starts)
    return out


def join_db3(
    skeleton: bytes | memoryview, datas: Iterable[bytes | memoryview]
) -> Iterator[bytes | memoryview]:
    """The pieces of the original file, from its skeleton and the messages' data in the
    order `messages()` gave them. Data is held only while the file order still needs it."""
    sk = memoryview(skeleton).cast("B")
    if len(sk) < _HEAD.size or bytes(sk[:8]) != _MAGIC:
        raise FormatError("not a .db3 skeleton", offset=0)
    _, nmsg, npieces, *sizes = _HEAD.unpack_from(sk)
    at = _HEAD.size
    arrays = []
    for size, count in zip(sizes, (nmsg, npieces, npieces), strict=True):
        if at + size > len(sk) or count > size:
            raise TruncatedError("skeleton table cut short", offset=at)
        arrays.append(_unleb(sk[at : at + size], count))
        at += size
    body = sk[at:]
    counts = arrays[0].astype(np.int64)
    lens = arrays[2].astype(np.int64)
    if int(counts.sum()) != npieces or np.any(lens <= 0) or int(lens.sum()) > 1 << 50:
        raise FormatError("skeleton table is inconsistent")
    csum = np.cumsum(lens)
    pos = np.cumsum(_unzigzag(arrays[1])) + csum - lens
    order = np.argsort(pos, kind="stable")
    spos = pos[order]
    ends = spos + lens[order]
    total = len(body) + (int(csum[-1]) if npieces else 0)
    if npieces and (spos[0] < 0 or ends[-1] > total or np.any(spos[1:] < ends[:-1])):
        raise FormatError("skeleton pieces overlap or lie outside the file")
    msg = np.repeat(np.arange(nmsg), counts)
    first = np.cumsum(counts) - counts
    starts = (
        (csum - lens)[np.minimum(first, max(npieces - 1, 0))]
        if npieces
        else np.zeros(nmsg, np.int64)
    )
    inner = csum - lens - np.repeat(starts, counts)
    sizes_of = np.zeros(nmsg, np.int64)
    np.add.at(sizes_of, msg, lens)
    source = iter(datas)
    held: dict[int, memoryview] = {}
    left: dict[int, int] = {}
    pulled = 0
    fpos = bpos = 0
    for m, off, k, p in zip(
        msg[order].tolist(), inner[order].tolist(), lens[order].tolist(), spos.tolist(), strict=True
    ):
        while m not in held:
            pulled = _pull(source, pulled, sizes_of, held, left)
        if p > fpos:
            yield body[bpos : bpos + p - fpos]
            bpos += p - fpos
        yield held[m][off : off + k]
        fpos = p + k
        left[m] -= k
        if not left[m]:
            del held[m], left[m]
    while pulled < nmsg:
        pulled = _pull(source, pulled, sizes_of, held, left)
    if next(source, None) is not None:
        raise FormatError(f"more data than the {nmsg} messages of the skeleton")
    if bpos < len(body):
        yield body[bpos:]


def _pull(
    source: Iterator[bytes | memoryview],
    pulled: int,
    sizes: npt.NDArray[np.int64],
    held: dict[int, memoryview],
    left: dict[int, int],
) -> int:
    """Take the next message's data from `source`, checking its length."""
    if pulled >= len(sizes):
        raise FormatError("skeleton pieces name a message that does not exist")
    data = next(source, None)
    if data is None:
        raise FormatError(f"{pulled} data given, the skeleton has {len(sizes)} messages")
    view = memoryview(data).cast("B")
    if len(view) != sizes[pulled]:
        raise FormatError(
            f"message {pulled} has {len(view)} bytes, the skeleton {int(sizes[pulled])}"
        )
    if len(view):
        held[pulled] = view
        left[pulled] = len(view)
    return pulled + 1
