"""Decode the walked packets of a batch, per packet id, into columnar tables (see
`codec.py`): every packet of one id at once, checks included, with numpy."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from nanorec.buffers import Buffer
from nanorec.errors import NanorecError

from .decode_wheels import decode_wheels
from .ids import SHAPES, Engine, Family, Kind, Shape
from .ragged import (
    Bad,
    Misfits,
    copy_runs,
    packet_counts,
    packet_error,
    split_bad,
    wrap_error,
)
from .records import VarRecord, fixed_dtype
from .records_fast import parse_var_fast
from .tables import (
    Batch,
    EmptyTable,
    FixedTable,
    RawTable,
    Table,
    VarTable,
)
from .walk import IntArray, Packets, gather


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
    misfits = Misfits(strict)
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
            table, bad = decode_wheels(buf, pid, kind, index, offsets, sizes)
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


def _decode_empty(
    pid: int, kind: Kind, index: IntArray, offsets: IntArray, sizes: IntArray
) -> tuple[Table | None, Bad]:
    good = sizes == 0
    errors: list[NanorecError] = [
        packet_error(pid, kind, int(o), f"has {int(s)} body bytes, expected none", actual=int(s))
        for o, s in zip(offsets[~good], sizes[~good], strict=True)
    ]
    return EmptyTable(kind, pid, index[good]), split_bad(index, good, errors)


def _decode_single(
    buf: Buffer,
    pid: int,
    kind: Kind,
    engine: Engine,
    index: IntArray,
    offsets: IntArray,
    sizes: IntArray,
) -> tuple[Table | None, Bad]:
    dtype = fixed_dtype(kind, engine)
    good = sizes == dtype.itemsize
    errors: list[NanorecError] = [
        packet_error(
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
    return FixedTable(kind, pid, index[good], None, records), split_bad(index, good, errors)


def count_errors(
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
            errors.append(packet_error(pid, kind, int(o), f"body of {s} bytes has no u16 count"))
        elif record is None:
            errors.append(
                packet_error(pid, kind, int(o), f"count 0 but {s} body bytes", actual=int(s))
            )
        else:
            expected = 2 + int(n) * record
            errors.append(
                packet_error(
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
) -> tuple[Table | None, Bad]:
    dtype = fixed_dtype(kind, engine)
    record = dtype.itemsize
    counts = packet_counts(buf, offsets, sizes)
    good = sizes == 2 + counts * record
    errors = count_errors(pid, kind, offsets, sizes, counts, ~good, record)
    if not good.all():
        offsets, counts = offsets[good], counts[good]
    records = _gather_runs(buf, offsets + 7, counts, dtype)
    table = FixedTable(kind, pid, index[good], counts.astype(np.uint16), records)
    return table, split_bad(index, good, errors)


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
) -> tuple[Table | None, Bad]:
    counts = packet_counts(buf, offsets, sizes)
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
            errors.append(packet_error(pid, kind, int(offsets[i]), what, actual=size))
            continue
        # A copy, so that no record keeps a view of (and pins) an mmap'ed file.
        body = bytes(buf[start : start + size])
        try:
            parsed = parse_var_fast(kind, body, engine, base=start)
        except NanorecError as error:
            errors.append(wrap_error(pid, kind, int(offsets[i]), error))
            continue
        records.extend(parsed)
        good[i] = True
    table = VarTable(kind, pid, index[good], counts[good].astype(np.uint16), records)
    return table, split_bad(index, good, errors)


def _raw_table(
    buf: Buffer, packets: Packets, unknown: list[IntArray], misfits: Misfits
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
