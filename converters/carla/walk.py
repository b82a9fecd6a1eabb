"""The packet walker: the one per-packet Python loop of the CARLA codec.

A CARLA file is a chain of `u8 id, u32 size, size bytes` packets with no index (spec §3),
so finding packet boundaries is inherently sequential. Everything else in the codec is
vectorised over the columns this walk produces, which makes this loop the floor of decode
speed: it is a plain header walk that only appends each header offset to a list. Ids and
sizes are then read back for all packets at once with numpy.

The walk stops cleanly at the first header or body that runs past the end of the buffer:
CARLA writes through a buffered stream, so a crashed recording ends at an arbitrary point
(spec §9). That is reported as a `Truncation`, never raised.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeAlias

import numpy as np
import numpy.typing as npt

from nanorec.buffers import Buffer

from .ids import PACKET_HEADER_SIZE

IntArray = npt.NDArray[np.int64]
#: What records are gathered from or scattered to: a buffer, or the bytes of a numpy array
#: (the encoder's output, the decoder's columns).
ByteBuffer: TypeAlias = Buffer | npt.NDArray[np.uint8]

_HEADER = struct.Struct("<BI")
PACKET_HEADER_DTYPE = np.dtype([("id", "u1"), ("size", "<u4")])
FRAME_END_ID = 1  # the same in every release (spec §4)


@dataclass(frozen=True)
class Truncation:
    """Where a cut-short recording stops making sense.

    `offset` is the absolute file offset of the incomplete packet's header (the first
    byte that is not part of a complete packet); `reason` says what was cut.
    """

    offset: int
    reason: str


@dataclass(frozen=True, eq=False)
class Packets:
    """Columns for a run of complete packets, in file order.

    `ids` (u1) and `sizes` (u4, body bytes) as read from the headers; `offsets` (int64) are
    the absolute offsets of the packet headers (bodies start 5 bytes later). `end` is the
    absolute offset just after the last packet. `truncation` is set only when the walk
    reached an incomplete packet; the bytes from `truncation.offset` on are not packets.
    """

    ids: npt.NDArray[np.uint8]
    offsets: IntArray
    sizes: npt.NDArray[np.uint32]
    start: int
    end: int
    truncation: Truncation | None

    def __len__(self) -> int:
        return len(self.ids)


def gather(buf: ByteBuffer, positions: npt.NDArray[Any], dtype: np.dtype[Any]) -> npt.NDArray[Any]:
    """Copy the `dtype` records that start at the absolute byte `positions` of `buf`.

    One fancy-indexing call over a view of the buffer whose elements overlap (stride 1
    byte), read as plain `V<n>` bytes (several times faster than indexing the structured
    dtype directly) and then reinterpreted. The caller guarantees every position is in
    range; the result is a copy, so it does not pin `buf`.
    """
    size = dtype.itemsize
    if len(positions) == 0:
        return np.empty(0, dtype=dtype)
    view = _overlapping(buf, size)
    records: npt.NDArray[Any] = view[positions].view(dtype)
    return records


def scatter(out: ByteBuffer, positions: npt.NDArray[Any], records: npt.NDArray[Any]) -> None:
    """Write each of `records` at the absolute byte `positions` of writable `out` (see `gather`)."""
    if len(positions) == 0:
        return
    size = records.dtype.itemsize
    view = _overlapping(out, size)
    view[positions] = np.ascontiguousarray(records).view(f"V{size}")


def _overlapping(buf: ByteBuffer, size: int) -> npt.NDArray[Any]:
    length = len(buf)
    view: npt.NDArray[Any] = np.ndarray(
        shape=(max(length - size + 1, 0),), dtype=f"V{size}", buffer=buf, strides=(1,)
    )
    return view


def walk(
    buf: Buffer,
    start: int,
    *,
    end: int | None = None,
    limit: int | None = None,
) -> Packets:
    """Walk the packets of `buf[start:end]` (absolute offsets; `end` defaults to len(buf)).

    With `limit` (an absolute offset), the walk stops after the first FrameEnd (id 1) that
    ends at or beyond `limit`, so that runs of whole frames can be decoded one at a time;
    if no FrameEnd comes within another `limit - start` bytes it stops at a packet
    boundary there. Never raises on content: an incomplete trailing packet is returned as
    `truncation`.

    Frames are walked one at a time in Python; after each, the following frames are
    checked in one vectorised step against its layout (`_Ahead`). Consecutive frames of a
    recording usually have identical packet ids and sizes, and a frame whose headers all
    match the previous frame's is exactly what the plain walk would have found.
    """
    stop = len(buf) if end is None else end
    last_header = stop - PACKET_HEADER_SIZE
    soft = last_header if limit is None else min(limit, last_header)
    chunks: list[IntArray] = []
    offsets: list[int] = []
    append = offsets.append
    unpack = _HEADER.unpack_from
    ahead = _Ahead()
    off = start
    ended = False
    while off <= soft:
        # The hot loop: a plain header walk, one append, stopping after a FrameEnd.
        first = len(offsets)
        ended = False
        while off <= soft:
            append(off)
            pid, size = unpack(buf, off)
            off += 5 + size
            if pid == FRAME_END_ID:
                ended = True
                break
        if not ended or off > stop:
            break
        if ahead.skip:
            ahead.skip -= 1
            continue
        block, off = ahead.check(buf, offsets[first:], off, soft, stop)
        if block is not None:
            chunks += [np.array(offsets, dtype=np.int64), block]
            offsets.clear()
    if limit is not None and not ended and off <= last_header:
        off = _finish_frame(buf, offsets, off, last_header, limit + max(limit - start, 1 << 20))
    truncation: Truncation | None = None
    if off > stop:  # the last packet's body runs past the end
        cut = offsets.pop()
        pid, size = _HEADER.unpack_from(buf, cut)
        truncation = Truncation(
            cut,
            f"packet id {pid} announces {size} body bytes, only {stop - cut - 5} left",
        )
        off = cut
    elif last_header < off < stop:  # fewer than 5 bytes left: a cut packet header
        truncation = Truncation(
            off, f"packet header cut: {stop - off} of {PACKET_HEADER_SIZE} bytes present"
        )
    chunks.append(np.array(offsets, dtype=np.int64))
    columns = np.concatenate(chunks) if len(chunks) > 1 else chunks[0]
    headers = gather(buf, columns, PACKET_HEADER_DTYPE)
    return Packets(
        np.ascontiguousarray(headers["id"]),
        columns,
        np.ascontiguousarray(headers["size"]),
        start,
        off,
        truncation,
    )


_HEADER_BYTES = np.dtype("V5")
_AHEAD_PACKETS = 1 << 18  # headers checked in one look-ahead step, at most
_AHEAD_FRAMES = 4096  # frames checked in one look-ahead step, at most
_AHEAD_BACKOFF = 256  # frames walked in Python before trying again, at most


class _Ahead:
    """Adaptive look-ahead over frames laid out like the last one.

    The number of frames checked at once doubles while they all match. When the next frame
    already differs, the next tries are spaced out (1, 2, 4... up to 256 frames walked in
    Python), so a recording whose frames always differ costs little more than the plain walk.
    """

    __slots__ = ("backoff", "frames", "skip")

    def __init__(self) -> None:
        self.frames = 4
        self.skip = 0
        self.backoff = 1

    def check(
        self, buf: Buffer, frame: list[int], off: int, soft: int, stop: int
    ) -> tuple[IntArray | None, int]:
        """Offsets of the packets of the frames from `off` laid out like `frame` (the
        header offsets of the frame that ends at `off`), and the offset after them."""
        span = off - frame[0]
        count = min(
            self.frames,
            (stop - off) // span,  # whole frames inside the buffer
            (soft - off) // span + 1,  # frames starting at or before `soft`
            max(1, _AHEAD_PACKETS // len(frame)),
        )
        if count < 1:
            return None, off
        here = np.array(frame, dtype=np.int64)
        template = gather(buf, here, _HEADER_BYTES).view(np.uint8)
        positions = here[None, :] + span * np.arange(1, count + 1, dtype=np.int64)[:, None]
        headers = gather(buf, positions.ravel(), _HEADER_BYTES).view(np.uint8)
        same = (headers.reshape(count, -1) == template[None, :]).all(axis=1)
        good = count if same.all() else int(same.argmin())
        if good == count:
            self.frames = min(2 * self.frames, _AHEAD_FRAMES)
        else:
            self.frames = max(4, good)
        if good < 2:
            self.skip = self.backoff
            self.backoff = min(2 * self.backoff, _AHEAD_BACKOFF)
        else:
            self.backoff = 1
        if not good:
            return None, off
        return positions[:good].ravel(), off + good * span


def _finish_frame(buf: Buffer, offsets: list[int], off: int, last_header: int, hard: int) -> int:
    """Continue the walk until just after a FrameEnd (or `hard`); returns the new offset."""
    unpack = _HEADER.unpack_from
    if offsets and buf[offsets[-1]] == FRAME_END_ID:
        return off
    while off <= last_header and off < hard:
        offsets.append(off)
        pid, size = unpack(buf, off)
        off += 5 + size
        if pid == FRAME_END_ID:
            break
    return off


def iter_walk(
    buf: Buffer,
    start: int,
    *,
    batch_bytes: int | Callable[[], int] = 8 << 20,
    first: Packets | None = None,
) -> Iterator[Packets]:
    """Yield `Packets` for consecutive runs of whole frames of about `batch_bytes` each (or
    of what `batch_bytes()` says before each batch, for a caller that adapts it).

    The last run carries the truncation, if any. Yields nothing for an empty body. `first`:
    the packets from `start` to the end of `buf`, walked already (by a family detection),
    yielded as they are when they start at `start` and are no larger than a batch (a walk
    would find the very same).
    """
    off = start
    stop = len(buf)
    while True:
        size = batch_bytes() if callable(batch_bytes) else batch_bytes
        whole = first is not None and first.start == off and stop - off <= size
        packets = first if whole and first is not None else walk(buf, off, limit=off + size)
        first = None
        if len(packets) or packets.truncation is not None:
            yield packets
        if packets.truncation is not None or packets.end >= stop or not len(packets):
            return
        off = packets.end


__all__ = ["PACKET_HEADER_DTYPE", "Packets", "Truncation", "gather", "iter_walk", "scatter", "walk"]
