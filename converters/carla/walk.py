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
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from converters.carla.ids import PACKET_HEADER_SIZE

Buffer = bytes | bytearray | memoryview | Any  # anything with the buffer protocol (mmap too)
IntArray = npt.NDArray[np.int64]

_SIZE_FIELD = struct.Struct("<xI")  # the u32 size of a packet header, skipping the id
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


def gather(buf: Buffer, positions: npt.NDArray[Any], dtype: np.dtype[Any]) -> npt.NDArray[Any]:
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


def scatter(out: Buffer, positions: npt.NDArray[Any], records: npt.NDArray[Any]) -> None:
    """Write each of `records` at the absolute byte `positions` of writable `out` (see `gather`)."""
    if len(positions) == 0:
        return
    size = records.dtype.itemsize
    view = _overlapping(out, size)
    view[positions] = np.ascontiguousarray(records).view(f"V{size}")


def _overlapping(buf: Buffer, size: int) -> npt.NDArray[Any]:
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
    """
    stop = len(buf) if end is None else end
    last_header = stop - PACKET_HEADER_SIZE
    soft = last_header if limit is None else min(limit, last_header)
    offsets: list[int] = []
    append = offsets.append
    unpack = _SIZE_FIELD.unpack_from
    off = start
    # The hot loop: a plain header walk plus one append.
    while off <= soft:
        append(off)
        off += 5 + unpack(buf, off)[0]
    if limit is not None and off <= last_header:
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
    columns = np.array(offsets, dtype=np.int64)
    headers = gather(buf, columns, PACKET_HEADER_DTYPE)
    return Packets(
        np.ascontiguousarray(headers["id"]),
        columns,
        np.ascontiguousarray(headers["size"]),
        start,
        off,
        truncation,
    )


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


def iter_walk(buf: Buffer, start: int, *, batch_bytes: int = 8 << 20) -> Iterator[Packets]:
    """Yield `Packets` for consecutive runs of whole frames of about `batch_bytes` each.

    The last run carries the truncation, if any. Yields nothing for an empty body.
    """
    off = start
    stop = len(buf)
    while True:
        packets = walk(buf, off, limit=off + batch_bytes)
        if len(packets) or packets.truncation is not None:
            yield packets
        if packets.truncation is not None or packets.end >= stop or not len(packets):
            return
        off = packets.end


__all__ = ["PACKET_HEADER_DTYPE", "Packets", "Truncation", "gather", "iter_walk", "scatter", "walk"]
