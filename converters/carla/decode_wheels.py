"""Decode AnimVehicleWheels packets (one record per vehicle, no fixed size, written every
frame in 0.9.15+): record boundaries for all packets at once (see `codec.py`)."""

from __future__ import annotations

import struct
from typing import Any

import numpy as np
import numpy.typing as npt

from nanorec.buffers import Buffer
from nanorec.errors import NanorecError

from .ids import Kind
from .ragged import (
    Bad,
    copy_runs,
    packet_counts,
    packet_error,
    split_bad,
    u32_view,
)
from .records import (
    WHEEL_ANIM_DTYPE,
)
from .tables import (
    WHEEL_SIZE,
    WHEELS_HEAD,
    Table,
    WheelsTable,
)
from .walk import IntArray, gather


def decode_wheels(
    buf: Buffer,
    pid: int,
    kind: Kind,
    index: IntArray,
    offsets: IntArray,
    sizes: IntArray,
) -> tuple[Table | None, Bad]:
    counts = packet_counts(buf, offsets, sizes)
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
            return table, no_misfits()
    walking = counts[filled]
    first = np.cumsum(walking) - walking  # index of each filled packet's first record
    total = int(walking.sum())
    record_at = np.empty(total, dtype=np.int64)
    record_n = np.empty(total, dtype=np.int64)
    u32 = u32_view(buf)
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
        errors.append(packet_error(pid, kind, int(offsets[i]), what, actual=size))
    if not ended.all():
        keep = np.repeat(good[filled], walking)
        record_at, record_n = record_at[keep], record_n[keep]
    heads = gather(buf, record_at, WHEELS_HEAD)
    wheels = np.empty(int(record_n.sum()), dtype=WHEEL_ANIM_DTYPE)
    wheel_first = np.cumsum(record_n) - record_n
    copy_runs(
        buf, record_at + 8, wheels.view(np.uint8), wheel_first * WHEEL_SIZE, record_n, WHEEL_SIZE
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
    return table, split_bad(index, good, errors)


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
        at += 8 + WHEEL_SIZE * n
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
        record = 8 + WHEEL_SIZE * n
        start = int(rel[lo])
        run = blocks[:, start : start + (hi - lo) * record].reshape(m, hi - lo, record)
        head_parts.append(run[:, :, :8])
        if n:
            wheel_parts.append(run[:, :, 8:].reshape(m, -1))
    heads = np.concatenate(head_parts, axis=1).reshape(-1).view(WHEELS_HEAD)
    if not np.all(heads["wheel_count"].reshape(m, -1) == wheels[None, :]):
        return None
    if not wheel_parts:
        return heads, np.empty(0, dtype=WHEEL_ANIM_DTYPE)
    return heads, np.concatenate(wheel_parts, axis=1).reshape(-1).view(WHEEL_ANIM_DTYPE)


def no_misfits() -> Bad:
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
        cursor[j:] = at + 8 + WHEEL_SIZE * n
    ended = np.empty(len(rest), dtype=bool)
    ended[order] = cursor == stop[packets][order]
    return ended
