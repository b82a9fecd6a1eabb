"""Columnar helpers shared by the decoder and the encoder: positions of ragged runs of
records, block copies between buffers, and the misfit bookkeeping of the decoder."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from nanorec.buffers import Buffer
from nanorec.errors import FormatError, NanorecError, TruncatedError

from .ids import Kind
from .tables import U16_DTYPE
from .walk import ByteBuffer, IntArray, gather, scatter


def ragged_positions(starts: IntArray, counts: npt.NDArray[Any], stride: int) -> IntArray:
    """Absolute positions of `counts[i]` records of `stride` bytes from `starts[i]`, flat."""
    counts = counts.astype(np.int64, copy=False)
    total = int(counts.sum())
    if total == 0:
        return np.empty(0, dtype=np.int64)
    first = np.cumsum(counts) - counts
    positions = np.repeat(starts - first * stride, counts)
    positions += np.arange(0, total * stride, stride, dtype=np.int64)
    return positions


_MAX_RUN_GROUPS = 64  # distinct run lengths copied as whole blocks before going per record


def copy_runs(
    src: ByteBuffer,
    src_at: IntArray,
    dst: ByteBuffer,
    dst_at: IntArray,
    counts: npt.NDArray[Any],
    record: int,
) -> None:
    """Copy runs of `counts[i]` records of `record` bytes from `src_at[i]` to `dst_at[i]`.

    The records of one packet are contiguous, so runs of equal length are copied as single
    large elements (close to memcpy speed); with many distinct lengths it falls back to one
    element per record. `dst` must be writable; positions are absolute byte offsets.
    """
    counts = counts.astype(np.int64, copy=False)
    if not len(counts):
        return
    top = int(counts.max())
    if top < 1 << 12:  # small run lengths: bincount is much cheaper than a sort or hash
        lengths = np.flatnonzero(np.bincount(counts)[1:]) + 1
    else:
        lengths = np.unique(counts)
        lengths = lengths[lengths > 0]
    if len(lengths) > _MAX_RUN_GROUPS:
        kind = np.dtype(f"V{record}")
        records = gather(src, ragged_positions(src_at, counts, record), kind)
        scatter(dst, ragged_positions(dst_at, counts, record), records)
        return
    for length in lengths.tolist():
        same = counts == length if len(lengths) > 1 else counts > 0
        blocks = gather(src, src_at[same], np.dtype(f"V{length * record}"))
        scatter(dst, dst_at[same], blocks)


def ragged_layout(
    starts: IntArray, counts: npt.NDArray[Any], item_sizes: IntArray
) -> tuple[IntArray, IntArray]:
    """Lay variable-size items out back to back per group.

    Group `i` owns the next `counts[i]` items of `item_sizes` and starts at `starts[i]`.
    Returns (absolute position of each item, total bytes of each group).
    """
    counts = counts.astype(np.int64, copy=False)
    before = np.zeros(len(item_sizes) + 1, dtype=np.int64)
    np.cumsum(item_sizes, out=before[1:])
    bounds = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=bounds[1:])
    group_bytes = before[bounds[1:]] - before[bounds[:-1]]
    shift = np.repeat(starts - before[bounds[:-1]], counts)
    return shift + before[:-1], group_bytes


def packet_error(
    pid: int, kind: Kind, offset: int, what: str, *, expected: object = None, actual: object = None
) -> FormatError:
    return FormatError(
        f"packet id {pid} ({kind.value}) at byte {offset}: {what}",
        offset=offset,
        expected=expected,
        actual=actual,
    )


class Misfits:
    """Known packets whose body does not fit: carried raw, or the first one raised."""

    def __init__(self, strict: bool) -> None:
        self.strict = strict
        self.index: list[IntArray] = []
        self.reasons: list[str] = []
        self.first: NanorecError | None = None

    def add(self, index: IntArray, errors: Sequence[NanorecError]) -> None:
        if not len(index):
            return
        self.index.append(index)
        self.reasons.extend(str(error) for error in errors)
        for error in errors:
            if self.first is None or (error.offset or 0) < (self.first.offset or 0):
                self.first = error


Bad = tuple[IntArray, list[NanorecError]]


def split_bad(index: IntArray, good: npt.NDArray[np.bool_], errors: list[NanorecError]) -> Bad:
    return index[~good], errors


def wrap_error(pid: int, kind: Kind, offset: int, error: NanorecError) -> NanorecError:
    cls = TruncatedError if isinstance(error, TruncatedError) else FormatError
    return cls(
        f"packet id {pid} ({kind.value}) at byte {offset}: {error.message}",
        offset=error.offset if error.offset is not None else offset,
        expected=error.expected,
        actual=error.actual,
    )


def packet_counts(buf: Buffer, offsets: IntArray, sizes: IntArray) -> IntArray:
    """The u16 count at the start of each body (0 where the body has no room for it)."""
    counts = np.zeros(len(offsets), dtype=np.int64)
    room = sizes >= 2
    if room.any():
        counts[room] = gather(buf, offsets[room] + 5, U16_DTYPE)
    return counts


def u32_view(buf: Buffer) -> npt.NDArray[np.uint32]:
    """Every byte offset of `buf` read as a little-endian u32 (an overlapping view)."""
    length = len(buf)
    view: npt.NDArray[np.uint32] = np.ndarray(
        shape=(max(length - 3, 0),), dtype="<u4", buffer=buf, strides=(1,)
    )
    return view
