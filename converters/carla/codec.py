"""Decode CARLA recorder packets into columnar tables and encode them back, byte for byte.

Decoding is columnar and streaming. The walker (`walk.py`) finds the packets of a run of
frames (a *batch*); then, per packet id, every packet of the batch is decoded at once:

- FIXED/SINGLE kinds: one structured array holding every record of that id in the batch,
  plus per-packet record counts. Records are gathered with one numpy fancy-index over an
  overlapping view of the file buffer (`walk.gather`); the count fields are checked
  against the sizes for all packets at once.
- AnimVehicleWheels (VAR, but on the hot path of 0.9.15+ files: one record per vehicle
  per frame): record boundaries are found for all packets in lock step, one record index
  at a time, then ids, wheel counts and wheels are gathered like fixed records.
- the other VAR kinds (EventAdd, PhysicsControl, WalkerBones): the typed records of
  `records.py`, parsed in Python only for packets that have records.
- ids the family does not know (forks, user packets >= 100), and known ids whose body
  does not fit the layout, are carried as raw bodies and reported, never dropped.

Encoding rebuilds every byte from the decoded values (never from the input bytes):
packet sizes are re-derived from the encoded bodies, headers, counts and records are
scattered into one output buffer with numpy, VAR bodies are serialized by `records.py`,
raw bodies and the truncated tail are written verbatim. A batch that round-trips to its
input bytes proves the decoded values are complete.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from nanorec.errors import FormatError, NanorecError, TruncatedError

from .detect import Detection, resolve
from .header import Header
from .ids import SHAPES, Engine, Family, Kind, Shape
from .records import (
    U16,
    WHEEL_ANIM_DTYPE,
    PhysicsControl,
    VarRecord,
    VehicleWheels,
    fixed_dtype,
    parse_var_body,
    serialize_var_body,
)
from .walk import (
    PACKET_HEADER_DTYPE,
    Buffer,
    IntArray,
    Packets,
    Truncation,
    gather,
    iter_walk,
    scatter,
    walk,
)

DEFAULT_BATCH_BYTES = 8 << 20
_U16 = np.dtype("<u2")
_WHEELS_HEAD = np.dtype([("id", "<u4"), ("wheel_count", "<u4")])
_WHEEL_SIZE = WHEEL_ANIM_DTYPE.itemsize  # 9 bytes: u8 location, f32 steering, f32 rotation
_MAX_PACKET_SIZE = 0xFFFFFFFF


# --------------------------------------------------------------------------- tables


@dataclass(frozen=True, eq=False)
class FixedTable:
    """Every packet of one FIXED or SINGLE packet id in a batch.

    `index` holds the positions of these packets in the batch's packet sequence
    (ascending). `counts` is the u16 record count of each packet (None for SINGLE kinds:
    one record each). `records` holds all their records in file order.
    """

    kind: Kind
    packet_id: int
    index: IntArray
    counts: npt.NDArray[np.uint16] | None
    records: npt.NDArray[Any]

    def starts(self) -> IntArray:
        """Index in `records` of each packet's first record."""
        if self.counts is None:
            return np.arange(len(self.index), dtype=np.int64)
        return np.cumsum(self.counts, dtype=np.int64) - self.counts

    def packet(self, i: int) -> npt.NDArray[Any]:
        """The records of this table's `i`-th packet."""
        if self.counts is None:
            return self.records[i : i + 1]
        start = int(self.starts()[i])
        return self.records[start : start + int(self.counts[i])]


@dataclass(frozen=True, eq=False)
class EmptyTable:
    """Every packet of a body-less packet id (FrameEnd) in a batch."""

    kind: Kind
    packet_id: int
    index: IntArray


@dataclass(frozen=True, eq=False)
class VarTable:
    """Every packet of one VAR packet id (EventAdd, PhysicsControl, WalkerBones) in a batch.

    `records` is flat, in file order; `counts[i]` records belong to the `i`-th packet.
    """

    kind: Kind
    packet_id: int
    index: IntArray
    counts: npt.NDArray[np.uint16]
    records: list[VarRecord]

    def packet(self, i: int) -> list[VarRecord]:
        """The records of this table's `i`-th packet."""
        start = int(np.sum(self.counts[:i], dtype=np.int64))
        return self.records[start : start + int(self.counts[i])]

    @property
    def physics_wheel_sizes(self) -> frozenset[int]:
        """Wheel record sizes (bytes) of the PhysicsControl records that have wheels."""
        return frozenset(
            record.wheel_size
            for record in self.records
            if isinstance(record, PhysicsControl) and len(record.array("wheels"))
        )


@dataclass(frozen=True, eq=False)
class WheelsTable:
    """Every AnimVehicleWheels packet of a batch, columnar.

    Per packet: `counts` (vehicle records). Per vehicle record: `ids`, `wheel_counts`.
    Per wheel: `wheels` (`WHEEL_ANIM_DTYPE`: location code, steering and tire rotation
    angles in degrees), all in file order.
    """

    kind: Kind
    packet_id: int
    index: IntArray
    counts: npt.NDArray[np.uint16]
    ids: npt.NDArray[np.uint32]
    wheel_counts: npt.NDArray[np.uint32]
    wheels: npt.NDArray[Any]

    def records(self) -> list[VehicleWheels]:
        """All records as `VehicleWheels` values (slow path, for converters)."""
        ends = np.cumsum(self.wheel_counts, dtype=np.int64)
        return [
            VehicleWheels(int(vid), self.wheels[int(end - n) : int(end)])
            for vid, n, end in zip(self.ids, self.wheel_counts, ends, strict=True)
        ]


@dataclass(frozen=True, eq=False)
class RawTable:
    """Packets carried verbatim: `bodies[i]` of the packet at batch position `index[i]`.

    `reasons[i]` is None when the family does not know the id (forks, user packets), or
    says why a known packet's body did not fit its layout.
    """

    index: IntArray
    bodies: list[bytes]
    reasons: list[str | None]


Table = FixedTable | EmptyTable | VarTable | WheelsTable


@dataclass(frozen=True, eq=False)
class Batch:
    """A decoded run of frames.

    `packet_ids` is the packet sequence (what the encoder writes back, in order); `tables`
    maps each decoded packet id to its table; `raw` holds the packets carried verbatim.
    `packets` are the walk columns of the input (absolute offsets and sizes, for indexes).
    `tail` is the truncated remainder of the file (only in the last batch of a recording
    that ends mid-packet), written back verbatim after the packets.
    """

    packet_ids: npt.NDArray[np.uint8]
    tables: dict[int, Table]
    raw: RawTable
    packets: Packets
    tail: bytes = b""
    physics_wheel_sizes: frozenset[int] = field(default_factory=frozenset)

    @property
    def truncation(self) -> Truncation | None:
        return self.packets.truncation

    @property
    def offset(self) -> int:
        """Absolute input offset of the batch's first packet."""
        return self.packets.start

    @property
    def input_size(self) -> int:
        """Input bytes covered by the batch, tail included."""
        return self.packets.end - self.packets.start + len(self.tail)

    def table(self, kind: Kind, family: Family) -> Table | None:
        """The table of `kind` (by `family`'s id), or None when the batch has no such packet."""
        pid = family.kinds.get(kind)
        return None if pid is None else self.tables.get(pid)


# --------------------------------------------------------------------------- helpers


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
    src: Buffer,
    src_at: IntArray,
    dst: Buffer,
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


def _packet_error(
    pid: int, kind: Kind, offset: int, what: str, *, expected: object = None, actual: object = None
) -> FormatError:
    return FormatError(
        f"packet id {pid} ({kind.value}) at byte {offset}: {what}",
        offset=offset,
        expected=expected,
        actual=actual,
    )


class _Misfits:
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


# --------------------------------------------------------------------------- decode


def decode_packets(
    buf: Buffer, packets: Packets, family: Family, *, strict: bool = False, tail: bytes = b""
) -> Batch:
    """Decode the walked `packets` of `buf` with `family`'s id table and layouts.

    Known packets whose body does not fit their layout are carried raw (reason recorded);
    with `strict` the first of them (lowest offset) raises `FormatError` or
    `TruncatedError` naming its packet id and absolute offset.
    """
    ids = packets.ids
    engine = family.engine
    per_id = np.bincount(ids, minlength=256)
    order = np.argsort(ids, kind="stable")
    bounds = np.zeros(257, dtype=np.int64)
    np.cumsum(per_id, out=bounds[1:])
    tables: dict[int, Table] = {}
    unknown: list[IntArray] = []
    misfits = _Misfits(strict)
    wheel_sizes: set[int] = set()
    for pid in np.flatnonzero(per_id).tolist():
        index = order[bounds[pid] : bounds[pid + 1]].astype(np.int64)
        kind = family.kind_of(pid)
        if kind is None:
            unknown.append(index)
            continue
        shape = SHAPES[kind]
        offsets = packets.offsets[index]
        sizes = packets.sizes[index].astype(np.int64)
        table: Table | None
        if shape is Shape.EMPTY:
            table, bad = _decode_empty(pid, kind, index, offsets, sizes)
        elif shape is Shape.SINGLE:
            table, bad = _decode_single(buf, pid, kind, engine, index, offsets, sizes)
        elif shape is Shape.FIXED:
            table, bad = _decode_fixed(buf, pid, kind, engine, index, offsets, sizes)
        elif kind is Kind.ANIM_VEHICLE_WHEELS:
            table, bad = _decode_wheels(buf, pid, kind, index, offsets, sizes)
        else:
            table, bad = _decode_var(buf, pid, kind, engine, index, offsets, sizes)
            if kind is Kind.PHYSICS_CONTROL and isinstance(table, VarTable):
                wheel_sizes |= table.physics_wheel_sizes
        if table is not None:
            tables[pid] = table
        misfits.add(*bad)
    if strict and misfits.first is not None:
        raise misfits.first
    raw = _raw_table(buf, packets, unknown, misfits)
    return Batch(ids, tables, raw, packets, tail, frozenset(wheel_sizes))


_Bad = tuple[IntArray, list[NanorecError]]


def _split(index: IntArray, good: npt.NDArray[np.bool_], errors: list[NanorecError]) -> _Bad:
    return index[~good], errors


def _decode_empty(
    pid: int, kind: Kind, index: IntArray, offsets: IntArray, sizes: IntArray
) -> tuple[Table | None, _Bad]:
    good = sizes == 0
    errors: list[NanorecError] = [
        _packet_error(pid, kind, int(o), f"has {int(s)} body bytes, expected none", actual=int(s))
        for o, s in zip(offsets[~good], sizes[~good], strict=True)
    ]
    return EmptyTable(kind, pid, index[good]), _split(index, good, errors)


def _decode_single(
    buf: Buffer,
    pid: int,
    kind: Kind,
    engine: Engine,
    index: IntArray,
    offsets: IntArray,
    sizes: IntArray,
) -> tuple[Table | None, _Bad]:
    dtype = fixed_dtype(kind, engine)
    good = sizes == dtype.itemsize
    errors: list[NanorecError] = [
        _packet_error(
            pid,
            kind,
            int(o),
            f"has {int(s)} body bytes, expected {dtype.itemsize}",
            expected=dtype.itemsize,
            actual=int(s),
        )
        for o, s in zip(offsets[~good], sizes[~good], strict=True)
    ]
    records = gather(buf, offsets[good] + 5, dtype)
    return FixedTable(kind, pid, index[good], None, records), _split(index, good, errors)


def _counts(buf: Buffer, offsets: IntArray, sizes: IntArray) -> IntArray:
    """The u16 count at the start of each body (0 where the body has no room for it)."""
    counts = np.zeros(len(offsets), dtype=np.int64)
    room = sizes >= 2
    if room.any():
        counts[room] = gather(buf, offsets[room] + 5, _U16)
    return counts


def _count_errors(
    pid: int,
    kind: Kind,
    offsets: IntArray,
    sizes: IntArray,
    counts: IntArray,
    bad: npt.NDArray[np.bool_],
    record: int | None,
) -> list[NanorecError]:
    errors: list[NanorecError] = []
    for o, s, n in zip(offsets[bad], sizes[bad], counts[bad], strict=True):
        if s < 2:
            errors.append(_packet_error(pid, kind, int(o), f"body of {s} bytes has no u16 count"))
        elif record is None:
            errors.append(
                _packet_error(pid, kind, int(o), f"count 0 but {s} body bytes", actual=int(s))
            )
        else:
            expected = 2 + int(n) * record
            errors.append(
                _packet_error(
                    pid,
                    kind,
                    int(o),
                    f"count {n} needs 2 + {n} x {record} = {expected} body bytes, "
                    f"the packet has {s}",
                    expected=expected,
                    actual=int(s),
                )
            )
    return errors


def _decode_fixed(
    buf: Buffer,
    pid: int,
    kind: Kind,
    engine: Engine,
    index: IntArray,
    offsets: IntArray,
    sizes: IntArray,
) -> tuple[Table | None, _Bad]:
    dtype = fixed_dtype(kind, engine)
    record = dtype.itemsize
    counts = _counts(buf, offsets, sizes)
    good = sizes == 2 + counts * record
    errors = _count_errors(pid, kind, offsets, sizes, counts, ~good, record)
    if not good.all():
        offsets, counts = offsets[good], counts[good]
    records = _gather_runs(buf, offsets + 7, counts, dtype)
    table = FixedTable(kind, pid, index[good], counts.astype(np.uint16), records)
    return table, _split(index, good, errors)


def _gather_runs(
    buf: Buffer, starts: IntArray, counts: IntArray, dtype: np.dtype[Any]
) -> npt.NDArray[Any]:
    """All records of runs of `counts[i]` records at `starts[i]`, concatenated (a copy)."""
    record = dtype.itemsize
    total = int(counts.sum())
    filled = counts > 0
    if total and counts.min() == counts.max():  # one run length: one gather, no scatter
        blocks = gather(buf, starts, np.dtype(f"V{int(counts[0]) * record}"))
        return blocks.view(dtype)
    out = np.empty(total * record, dtype=np.uint8)
    first = np.cumsum(counts) - counts
    copy_runs(buf, starts[filled], out, first[filled] * record, counts[filled], record)
    return out.view(dtype)


def _decode_var(
    buf: Buffer,
    pid: int,
    kind: Kind,
    engine: Engine,
    index: IntArray,
    offsets: IntArray,
    sizes: IntArray,
) -> tuple[Table | None, _Bad]:
    counts = _counts(buf, offsets, sizes)
    empty = (counts == 0) & (sizes == 2)
    good = empty.copy()
    errors: list[NanorecError] = []
    records: list[VarRecord] = []
    for i in np.flatnonzero(~empty).tolist():
        start = int(offsets[i]) + 5
        size = int(sizes[i])
        if size < 2 or counts[i] == 0:
            what = (
                f"body of {size} bytes has no u16 count" if size < 2 else "count 0, body not empty"
            )
            errors.append(_packet_error(pid, kind, int(offsets[i]), what, actual=size))
            continue
        # A copy, so that no record keeps a view of (and pins) an mmap'ed file.
        body = bytes(buf[start : start + size])
        try:
            parsed = parse_var_body(kind, body, engine, base=start)
        except NanorecError as error:
            errors.append(_wrap(pid, kind, int(offsets[i]), error))
            continue
        records.extend(parsed)
        good[i] = True
    table = VarTable(kind, pid, index[good], counts[good].astype(np.uint16), records)
    return table, _split(index, good, errors)


def _wrap(pid: int, kind: Kind, offset: int, error: NanorecError) -> NanorecError:
    cls = TruncatedError if isinstance(error, TruncatedError) else FormatError
    return cls(
        f"packet id {pid} ({kind.value}) at byte {offset}: {error.message}",
        offset=error.offset if error.offset is not None else offset,
        expected=error.expected,
        actual=error.actual,
    )


def _decode_wheels(
    buf: Buffer,
    pid: int,
    kind: Kind,
    index: IntArray,
    offsets: IntArray,
    sizes: IntArray,
) -> tuple[Table | None, _Bad]:
    counts = _counts(buf, offsets, sizes)
    stop = offsets + 5 + sizes
    # Every vehicle record has at least its 8-byte head: this bounds all walks below.
    good = (sizes >= 2) & ((counts > 0) | (sizes == 2)) & (2 + 8 * counts <= sizes)
    filled = np.flatnonzero(good & (counts > 0))
    if good.all():
        uniform = _wheels_uniform(buf, filled, offsets, stop, counts)
        if uniform is not None:
            table = WheelsTable(
                kind,
                pid,
                index,
                counts.astype(np.uint16),
                np.ascontiguousarray(uniform[0]["id"]),
                np.ascontiguousarray(uniform[0]["wheel_count"]),
                uniform[1],
            )
            return table, _no_misfits()
    walking = counts[filled]
    first = np.cumsum(walking) - walking  # index of each filled packet's first record
    total = int(walking.sum())
    record_at = np.empty(total, dtype=np.int64)
    record_n = np.empty(total, dtype=np.int64)
    u32 = _u32_view(buf)
    rest = _wheels_by_template(buf, u32, filled, offsets, stop, counts, first, record_at, record_n)
    ended = _wheels_lock_step(u32, filled, rest, offsets, stop, counts, first, record_at, record_n)
    good[filled[rest[~ended]]] = False
    errors: list[NanorecError] = []
    for i in np.flatnonzero(~good).tolist():
        size, count = int(sizes[i]), int(counts[i])
        if size < 2:
            what = f"body of {size} bytes has no u16 count"
        elif count == 0:
            what = f"count 0 but {size} body bytes"
        elif 2 + 8 * count > size:
            what = f"count {count} needs at least 2 + {count} x 8 body bytes, the packet has {size}"
        else:
            what = (
                f"{count} vehicle records with their wheels do not end at the body's {size} bytes"
            )
        errors.append(_packet_error(pid, kind, int(offsets[i]), what, actual=size))
    if not ended.all():
        keep = np.repeat(good[filled], walking)
        record_at, record_n = record_at[keep], record_n[keep]
    heads = gather(buf, record_at, _WHEELS_HEAD)
    wheels = np.empty(int(record_n.sum()), dtype=WHEEL_ANIM_DTYPE)
    wheel_first = np.cumsum(record_n) - record_n
    copy_runs(
        buf, record_at + 8, wheels.view(np.uint8), wheel_first * _WHEEL_SIZE, record_n, _WHEEL_SIZE
    )
    table = WheelsTable(
        kind,
        pid,
        index[good],
        counts[good].astype(np.uint16),
        np.ascontiguousarray(heads["id"]),
        np.ascontiguousarray(heads["wheel_count"]),
        wheels,
    )
    return table, _split(index, good, errors)


_WHEEL_HEAD_STRUCT = struct.Struct("<4xI")


def _walk_wheels(
    buf: Buffer, start: int, stop: int, count: int
) -> tuple[IntArray, IntArray] | None:
    """Record offsets (relative to `start`) and wheel counts of one packet, or None."""
    at = start
    rel = np.empty(count, dtype=np.int64)
    wheels = np.empty(count, dtype=np.int64)
    unpack = _WHEEL_HEAD_STRUCT.unpack_from
    for k in range(count):
        if at + 8 > stop:
            return None
        (n,) = unpack(buf, at)
        rel[k] = at - start
        wheels[k] = n
        at += 8 + _WHEEL_SIZE * n
    return (rel, wheels) if at == stop else None


def _wheels_uniform(
    buf: Buffer, filled: IntArray, offsets: IntArray, stop: IntArray, counts: IntArray
) -> tuple[npt.NDArray[Any], npt.NDArray[Any]] | None:
    """(heads, wheels) when every filled packet has the layout of the first one, else None.

    The common case within a batch: the same vehicles in the same order in every frame.
    The bodies are copied whole (one large element each), then cut into record heads and
    wheel runs by column ranges, and the wheel counts read back confirm the layout.
    """
    if len(filled) < 2:
        return None
    size = stop[filled] - offsets[filled]
    count = counts[filled]
    if size.min() != size.max() or count.min() != count.max():
        return None
    lead = int(filled[0])
    layout = _walk_wheels(buf, int(offsets[lead]) + 7, int(stop[lead]), int(count[0]))
    if layout is None:
        return None
    rel, wheels = layout
    body = int(size[0]) - 7  # after the 5-byte header and the u16 count
    blocks = gather(buf, offsets[filled] + 7, np.dtype(f"V{body}")).view(np.uint8)
    blocks = blocks.reshape(len(filled), body)
    m = len(filled)
    # Runs of consecutive records with the same wheel count are regular 3-D blocks.
    edges = np.flatnonzero(np.diff(wheels)) + 1
    head_parts = []
    wheel_parts = []
    for lo, hi in zip([0, *edges.tolist()], [*edges.tolist(), len(wheels)], strict=True):
        n = int(wheels[lo])
        record = 8 + _WHEEL_SIZE * n
        start = int(rel[lo])
        run = blocks[:, start : start + (hi - lo) * record].reshape(m, hi - lo, record)
        head_parts.append(run[:, :, :8])
        if n:
            wheel_parts.append(run[:, :, 8:].reshape(m, -1))
    heads = np.concatenate(head_parts, axis=1).reshape(-1).view(_WHEELS_HEAD)
    if not np.all(heads["wheel_count"].reshape(m, -1) == wheels[None, :]):
        return None
    if not wheel_parts:
        return heads, np.empty(0, dtype=WHEEL_ANIM_DTYPE)
    return heads, np.concatenate(wheel_parts, axis=1).reshape(-1).view(WHEEL_ANIM_DTYPE)


def _no_misfits() -> _Bad:
    return np.empty(0, dtype=np.int64), []


def _wheels_by_template(
    buf: Buffer,
    u32: npt.NDArray[np.uint32],
    filled: IntArray,
    offsets: IntArray,
    stop: IntArray,
    counts: IntArray,
    first: IntArray,
    record_at: IntArray,
    record_n: IntArray,
) -> IntArray:
    """Place the records of packets laid out like another packet of the batch.

    Consecutive frames usually hold the same vehicles in the same order, hence packets of
    the same count and size with the same record layout. One packet per (count, size) is
    walked in Python; the others are checked against its layout in one vectorised read
    of their wheel counts. Returns the positions (in `filled`) still to be walked.
    """
    if len(filled) < 2:
        return np.arange(len(filled))
    keys = (counts[filled] << 32) | (stop[filled] - offsets[filled])
    _, inverse, sizes = np.unique(keys, return_inverse=True, return_counts=True)
    rest: list[IntArray] = [np.flatnonzero(sizes[inverse] < 2)]
    for group in np.flatnonzero(sizes >= 2).tolist():
        members = np.flatnonzero(inverse == group)
        lead = int(filled[members[0]])
        layout = _walk_wheels(buf, int(offsets[lead]) + 7, int(stop[lead]), int(counts[lead]))
        if layout is None:
            rest.append(members)
            continue
        rel, wheels = layout
        heads_at = (offsets[filled[members]] + 7)[:, None] + rel[None, :]
        same = (u32[heads_at + 4] == wheels[None, :]).all(axis=1)
        if not same.all():
            rest.append(members[~same])
            members, heads_at = members[same], heads_at[same]
        if len(members) == len(filled):  # one layout for the whole batch: no scatter
            record_at[:] = heads_at.ravel()
            record_n[:] = np.tile(wheels, len(members))
            continue
        slots = first[members][:, None] + np.arange(len(rel))[None, :]
        record_at[slots] = heads_at
        record_n[slots] = wheels[None, :]
    return np.sort(np.concatenate(rest))


def _wheels_lock_step(
    u32: npt.NDArray[np.uint32],
    filled: IntArray,
    rest: IntArray,
    offsets: IntArray,
    stop: IntArray,
    counts: IntArray,
    first: IntArray,
    record_at: IntArray,
    record_n: IntArray,
) -> npt.NDArray[np.bool_]:
    """Walk the k-th record of every packet in `rest` at once; True where a packet ends
    exactly at its size. Packets go in order of increasing count, so those still walking
    are always a suffix."""
    if not len(rest):
        return np.ones(0, dtype=bool)
    packets = filled[rest]
    order = np.argsort(counts[packets], kind="stable")
    walking = counts[packets][order]
    slots0 = first[rest][order]
    cursor = offsets[packets][order] + 7
    limit = max(len(u32) - 1, 0)
    done = np.searchsorted(walking, np.arange(int(walking[-1])), side="right")
    for k, j in enumerate(done.tolist()):
        at = cursor[j:]
        n = u32[np.minimum(at + 4, limit)].astype(np.int64)
        slots = slots0[j:] + k
        record_at[slots] = at
        record_n[slots] = n
        cursor[j:] = at + 8 + _WHEEL_SIZE * n
    ended = np.empty(len(rest), dtype=bool)
    ended[order] = cursor == stop[packets][order]
    return ended


def _u32_view(buf: Buffer) -> npt.NDArray[np.uint32]:
    """Every byte offset of `buf` read as a little-endian u32 (an overlapping view)."""
    length = len(buf)
    view: npt.NDArray[np.uint32] = np.ndarray(
        shape=(max(length - 3, 0),), dtype="<u4", buffer=buf, strides=(1,)
    )
    return view


def _raw_table(
    buf: Buffer, packets: Packets, unknown: list[IntArray], misfits: _Misfits
) -> RawTable:
    parts = [*unknown, *misfits.index]
    if not parts:
        return RawTable(np.empty(0, dtype=np.int64), [], [])
    index = np.concatenate(parts)
    reasons: list[str | None] = [None] * int(sum(len(part) for part in unknown))
    reasons += misfits.reasons
    order = np.argsort(index, kind="stable")
    index = index[order]
    bodies = []
    for i in index.tolist():
        start = int(packets.offsets[i]) + 5
        bodies.append(bytes(buf[start : start + int(packets.sizes[i])]))
    return RawTable(index, bodies, [reasons[i] for i in order.tolist()])


# --------------------------------------------------------------------------- encode


def encode_batch(batch: Batch, family: Family) -> bytearray:
    """The bytes of `batch`'s packets (and tail), rebuilt from its decoded values.

    Raises `FormatError` when a value does not fit the wire format (a count over 65535, a
    body over 4 GiB, records that disagree with the counts).
    """
    engine = family.engine
    count = len(batch.packet_ids)
    sizes = np.full(count, -1, dtype=np.int64)
    writers = []
    for table in batch.tables.values():
        body_sizes, writer = _plan(table, engine)
        sizes[table.index] = body_sizes
        writers.append((table.index, writer))
    raw = batch.raw
    if len(raw.index):
        sizes[raw.index] = [len(body) for body in raw.bodies]
    if count and sizes.min() < 0:
        missing = int(np.flatnonzero(sizes < 0)[0])
        raise FormatError(f"packet {missing} of the batch is in no table")
    if count and sizes.max() > _MAX_PACKET_SIZE:
        raise FormatError("a packet body is over 4 GiB, its u32 size cannot hold it")
    spans = sizes + 5
    headers_at = np.cumsum(spans) - spans
    total = int(spans.sum())
    out = bytearray(total + len(batch.tail))
    headers = np.empty(count, dtype=PACKET_HEADER_DTYPE)
    headers["id"] = batch.packet_ids
    headers["size"] = sizes
    scatter(out, headers_at, headers)
    bodies_at = headers_at + 5
    for index, writer in writers:
        writer(out, bodies_at[index])
    for i, body in zip(raw.index.tolist(), raw.bodies, strict=True):
        start = int(bodies_at[i])
        out[start : start + len(body)] = body
    out[total:] = batch.tail
    return out


_Writer = Any  # Callable[[bytearray, IntArray], None]


def _plan(table: Table, engine: Engine) -> tuple[IntArray, _Writer]:
    """Body sizes of `table`'s packets and a function writing their bodies at given offsets."""
    if isinstance(table, EmptyTable):
        return np.zeros(len(table.index), dtype=np.int64), lambda out, at: None
    if isinstance(table, FixedTable):
        return _plan_fixed(table, engine)
    if isinstance(table, WheelsTable):
        return _plan_wheels(table)
    return _plan_var(table, engine)


def _plan_fixed(table: FixedTable, engine: Engine) -> tuple[IntArray, _Writer]:
    dtype = fixed_dtype(table.kind, engine)
    records = table.records
    if records.dtype.itemsize != dtype.itemsize:
        raise FormatError(
            f"{table.kind.value} records are {records.dtype.itemsize} bytes, "
            f"the {engine.value} layout has {dtype.itemsize}"
        )
    if table.counts is None:
        if len(records) != len(table.index):
            raise FormatError(
                f"{table.kind.value}: {len(records)} records for {len(table.index)} packets"
            )

        def write_single(out: bytearray, at: IntArray) -> None:
            scatter(out, at, records)

        return np.full(len(table.index), dtype.itemsize, dtype=np.int64), write_single
    counts = table.counts.astype(np.int64)
    if int(counts.sum()) != len(records):
        raise FormatError(
            f"{table.kind.value}: counts add up to {int(counts.sum())}, "
            f"the table has {len(records)} records"
        )
    _check_counts(table.kind, counts)

    def write_fixed(out: bytearray, at: IntArray) -> None:
        scatter(out, at, counts.astype(_U16))
        filled = counts > 0
        first = np.cumsum(counts) - counts
        source = np.ascontiguousarray(records).view(np.uint8)
        record = dtype.itemsize
        copy_runs(source, first[filled] * record, out, at[filled] + 2, counts[filled], record)

    return 2 + counts * dtype.itemsize, write_fixed


def _check_counts(kind: Kind, counts: IntArray) -> None:
    if len(counts) and (counts.max() > 0xFFFF or counts.min() < 0):
        raise FormatError(f"{kind.value}: a packet count does not fit a u16")


def _plan_wheels(table: WheelsTable) -> tuple[IntArray, _Writer]:
    counts = table.counts.astype(np.int64)
    _check_counts(table.kind, counts)
    n = table.wheel_counts.astype(np.int64)
    if int(counts.sum()) != len(n) or int(n.sum()) != len(table.wheels):
        raise FormatError("anim_vehicle_wheels: counts disagree with the records")

    def write_wheels(out: bytearray, at: IntArray) -> None:
        heads = np.empty(len(n), dtype=_WHEELS_HEAD)
        heads["id"] = table.ids
        heads["wheel_count"] = n
        scatter(out, at, counts.astype(_U16))
        if _write_wheels_uniform(out, at, counts, heads, table.wheels):
            return
        records_at, _ = ragged_layout(at + 2, counts, 8 + _WHEEL_SIZE * n)
        scatter(out, records_at, heads)
        wheel_first = np.cumsum(n) - n
        source = np.ascontiguousarray(table.wheels).view(np.uint8)
        copy_runs(source, wheel_first * _WHEEL_SIZE, out, records_at + 8, n, _WHEEL_SIZE)

    _, packet_bytes = ragged_layout(
        np.zeros(len(counts), dtype=np.int64), counts, 8 + _WHEEL_SIZE * n
    )
    return 2 + packet_bytes, write_wheels


def _write_wheels_uniform(
    out: Buffer,
    at: IntArray,
    counts: IntArray,
    heads: npt.NDArray[Any],
    wheels: npt.NDArray[Any],
) -> bool:
    """Write the records when all packets have one layout (see `_wheels_uniform`)."""
    m = len(counts)
    if m < 2 or counts.min() != counts.max() or not counts[0]:
        return False
    layout = heads["wheel_count"].astype(np.int64).reshape(m, -1)
    first = layout[0]
    if not np.all(layout == first[None, :]):
        return False
    sizes = 8 + _WHEEL_SIZE * first
    blocks = np.empty((m, int(sizes.sum())), dtype=np.uint8)
    head_bytes = np.ascontiguousarray(heads).view(np.uint8).reshape(m, -1, 8)
    wheel_bytes = np.ascontiguousarray(wheels).view(np.uint8).reshape(m, -1)
    edges = np.flatnonzero(np.diff(first)) + 1
    start = record_index = wheel_column = 0
    for lo, hi in zip([0, *edges.tolist()], [*edges.tolist(), len(first)], strict=True):
        n = int(first[lo])
        record = 8 + _WHEEL_SIZE * n
        run = blocks[:, start : start + (hi - lo) * record].reshape(m, hi - lo, record)
        run[:, :, :8] = head_bytes[:, record_index : record_index + hi - lo]
        if n:
            width = (hi - lo) * _WHEEL_SIZE * n
            run[:, :, 8:] = wheel_bytes[:, wheel_column : wheel_column + width].reshape(
                m, hi - lo, -1
            )
            wheel_column += width
        start += (hi - lo) * record
        record_index = hi
    scatter(out, at + 2, blocks.reshape(-1).view(f"V{blocks.shape[1]}"))
    return True


def _plan_var(table: VarTable, engine: Engine) -> tuple[IntArray, _Writer]:
    counts = table.counts.astype(np.int64)
    _check_counts(table.kind, counts)
    if int(counts.sum()) != len(table.records):
        raise FormatError(f"{table.kind.value}: counts disagree with the records")
    sizes = np.full(len(counts), 2, dtype=np.int64)
    filled = np.flatnonzero(counts).tolist()
    bodies: list[bytes] = []
    start = 0
    ends = np.cumsum(counts).tolist()
    for i in filled:
        end = ends[i]
        start = end - int(counts[i])
        body = serialize_var_body(table.records[start:end], engine)
        bodies.append(body)
        sizes[i] = len(body)

    def write_var(out: bytearray, at: IntArray) -> None:
        scatter(out, at, counts.astype(_U16))
        for i, body in zip(filled, bodies, strict=True):
            begin = int(at[i])
            out[begin : begin + len(body)] = body

    return sizes, write_var


# --------------------------------------------------------------------------- per packet


def decode_body(
    kind: Kind, body: bytes | memoryview, family: Family, base_offset: int = 0
) -> npt.NDArray[Any] | list[VarRecord]:
    """Decode one packet body of `kind` (without its 5-byte header).

    FIXED kinds give a structured array (a view of `body`), SINGLE kinds a one-record
    array, FrameEnd an empty list, VAR kinds a list of typed records. `base_offset` is the
    body's absolute file offset, used in errors. Raises `FormatError`/`TruncatedError`
    when the body does not fit the layout.
    """
    shape = SHAPES[kind]
    size = len(body)
    if shape is Shape.EMPTY:
        if size:
            raise FormatError(
                f"{kind.value} has {size} body bytes, expected none", offset=base_offset
            )
        return []
    if shape is Shape.VAR:
        return parse_var_body(kind, body, family.engine, base=base_offset)
    dtype = fixed_dtype(kind, family.engine)
    if shape is Shape.SINGLE:
        if size != dtype.itemsize:
            raise FormatError(
                f"{kind.value} body is {size} bytes, expected {dtype.itemsize}",
                offset=base_offset,
                expected=dtype.itemsize,
                actual=size,
            )
        return np.frombuffer(body, dtype=dtype)
    if size < 2:
        raise TruncatedError(
            f"{kind.value} body of {size} bytes has no u16 count", offset=base_offset
        )
    (count,) = U16.unpack_from(body, 0)
    if size != 2 + count * dtype.itemsize:
        raise FormatError(
            f"{kind.value} count {count} needs {2 + count * dtype.itemsize} body bytes, has {size}",
            offset=base_offset,
            expected=2 + count * dtype.itemsize,
            actual=size,
        )
    return np.frombuffer(body, dtype=dtype, count=count, offset=2)


def encode_body(
    kind: Kind, decoded: npt.NDArray[Any] | Sequence[VarRecord], family: Family
) -> bytes:
    """The body bytes of one packet of `kind` from its decoded value (see `decode_body`)."""
    shape = SHAPES[kind]
    if shape is Shape.EMPTY:
        if len(decoded):
            raise FormatError(f"{kind.value} has no records")
        return b""
    if shape is Shape.VAR:
        if isinstance(decoded, np.ndarray):
            raise FormatError(f"{kind.value} needs a list of records, not an array")
        return serialize_var_body(decoded, family.engine)
    dtype = fixed_dtype(kind, family.engine)
    if not isinstance(decoded, np.ndarray) or decoded.dtype.itemsize != dtype.itemsize:
        raise FormatError(f"{kind.value} needs an array of {dtype.itemsize}-byte records")
    data = np.ascontiguousarray(decoded).tobytes()
    if shape is Shape.SINGLE:
        if len(decoded) != 1:
            raise FormatError(f"{kind.value} holds exactly one record, got {len(decoded)}")
        return data
    if len(decoded) > 0xFFFF:
        raise FormatError(f"{kind.value}: {len(decoded)} records do not fit a u16 count")
    return U16.pack(len(decoded)) + data


# --------------------------------------------------------------------------- recordings


def iter_batches(
    buf: Buffer,
    family: str | Family | None = None,
    start: int | None = None,
    *,
    strict: bool = False,
    batch_bytes: int = DEFAULT_BATCH_BYTES,
) -> Iterator[Batch]:
    """Decode the packets of a whole file `buf` in runs of whole frames.

    `start` is the offset of the first packet (the header size; parsed when None);
    `family` a release family (name or value; detected when None). Memory stays bounded
    by `batch_bytes` (plus one frame): pass an mmap for big files, or use `Reader`. The
    last batch carries the truncation and the truncated tail, if any. Raises
    `BadMagicError`/`TruncatedError` for a bad header (when it parses it), and with
    `strict` as `decode_packets` does.
    """
    if start is None:
        start = Header.parse(buf).size
    if not isinstance(family, Family):
        family = resolve(buf, start, family).family
    for packets in iter_walk(buf, start, batch_bytes=batch_bytes):
        tail = b""
        if packets.truncation is not None:
            tail = bytes(buf[packets.end : len(buf)])
        yield decode_packets(buf, packets, family, strict=strict, tail=tail)


@dataclass(frozen=True, eq=False)
class Recording:
    """A whole decoded recording: header, detected (or forced) family, batches."""

    header: Header
    detection: Detection
    batches: tuple[Batch, ...]

    @property
    def family(self) -> Family:
        return self.detection.family

    @property
    def truncation(self) -> Truncation | None:
        return self.batches[-1].truncation if self.batches else None


def _family_and_header(buf: Buffer, family: str | Family | None) -> tuple[Header, Detection]:
    header = Header.parse(buf)
    return header, resolve(buf, header.size, family)


def decode(
    source: bytes | bytearray | memoryview | str | os.PathLike[str],
    *,
    family: str | Family | None = None,
    strict: bool = False,
) -> Recording:
    """Decode a small recording (bytes, or a path read into memory) in one batch.

    `family` forces a release family (name or value); by default it is detected. Raises
    `BadMagicError`/`TruncatedError` for a bad header, `UnsupportedError` for an unknown
    family name, and with `strict` `FormatError`/`TruncatedError` for a packet that does
    not fit; `OSError` for an unreadable path.
    """
    buf = Path(source).read_bytes() if isinstance(source, (str, os.PathLike)) else source
    header, detection = _family_and_header(buf, family)
    packets = walk(buf, header.size)
    tail = bytes(buf[packets.end :]) if packets.truncation is not None else b""
    batch = decode_packets(buf, packets, detection.family, strict=strict, tail=tail)
    return Recording(header, detection, (batch,))


def encode(recording: Recording) -> bytes:
    """The file bytes of `recording`, rebuilt from its decoded values."""
    family = recording.family
    parts: list[bytes | bytearray] = [recording.header.serialize()]
    parts += [encode_batch(batch, family) for batch in recording.batches]
    return b"".join(parts)


class Reader:
    """A CARLA recorder file opened with mmap, decoded batch by batch.

    Use as a context manager. `header` and `detection` are read at open; `iter_batches`
    streams the packets. Raises like `decode` (`OSError` passes through).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        family: str | Family | None = None,
        strict: bool = False,
        batch_bytes: int = DEFAULT_BATCH_BYTES,
    ) -> None:
        self.path = Path(path)
        self.strict = strict
        self.batch_bytes = batch_bytes
        self._file = open(self.path, "rb")  # noqa: SIM115 - closed by close()
        self._map: mmap.mmap | None = None
        try:
            size = os.fstat(self._file.fileno()).st_size
            if size:
                self._map = mmap.mmap(self._file.fileno(), 0, access=mmap.ACCESS_READ)
            self.buf: Buffer = self._map if self._map is not None else b""
            self.size = size
            self.header, self.detection = _family_and_header(self.buf, family)
        except BaseException:
            self.close()
            raise

    @property
    def family(self) -> Family:
        return self.detection.family

    def iter_batches(self) -> Iterator[Batch]:
        """Decode the file's packets in runs of whole frames (see `codec.iter_batches`).

        Once the caller asks for the next batch, the file pages of the previous one are
        released from this process (they stay in the page cache), so the resident size
        stays bounded by a batch rather than growing to the file size.
        """
        released = 0
        for batch in iter_batches(
            self.buf,
            self.family,
            self.header.size,
            strict=self.strict,
            batch_bytes=self.batch_bytes,
        ):
            yield batch
            released = self._release(released, batch.packets.end)

    def _release(self, start: int, end: int) -> int:
        """Drop the mapped pages of [start, end) rounded to pages; returns the new start."""
        end -= end % mmap.PAGESIZE
        if self._map is None or end <= start or not hasattr(self._map, "madvise"):
            return start
        self._map.madvise(mmap.MADV_DONTNEED, start, end - start)
        return end

    def close(self) -> None:
        if self._map is not None:
            # A caller still holding a view keeps the map alive; it goes with the view.
            with contextlib.suppress(BufferError):
                self._map.close()
            self._map = None
        self._file.close()

    def __enter__(self) -> Reader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read(
    path: str | os.PathLike[str],
    *,
    family: str | Family | None = None,
    strict: bool = False,
    batch_bytes: int = DEFAULT_BATCH_BYTES,
) -> Recording:
    """Decode the file at `path` through mmap, batch by batch (see `Reader`, `decode`)."""
    with Reader(path, family=family, strict=strict, batch_bytes=batch_bytes) as reader:
        batches = tuple(reader.iter_batches())
        return Recording(reader.header, reader.detection, batches)


__all__ = [
    "Batch",
    "EmptyTable",
    "FixedTable",
    "RawTable",
    "Reader",
    "Recording",
    "Table",
    "VarTable",
    "WheelsTable",
    "decode",
    "decode_body",
    "decode_packets",
    "encode",
    "encode_batch",
    "encode_body",
    "iter_batches",
    "read",
]
