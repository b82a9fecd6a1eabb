"""The frames of a CARLA recording, decoded by the codec, as archive frame maps.

A frame is the packets from one FrameStart up to the next. The walk (`walk.py`) finds
them a batch at a time; the codec (`decode.decode_packets`) decodes and checks every packet
of a batch at once, per packet id; `FrameMaps` then turns each frame into the map an
archive message holds (`message.py`), taking the records straight from the file buffer
for the packets the codec accepted and carrying the others raw, as it says.

Consecutive frames of one layout (the same packet ids and sizes) come as a `Run`; its
frames between the first and the last are not decoded up front: conversion writes them
from the first one's map with numpy (`runs.py`) when their count fields match it, and
only the ones that do not are decoded, one by one, when asked for.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from nanorec.buffers import Buffer

from .decode import decode_packets
from .ids import SHAPES, Family, Kind, Shape
from .message import INDEX_KEY, KIND_KEYS, ORDER_KEY, RAW_KEY, var_to_maps
from .records import VarRecord
from .tables import Batch, VarTable
from .walk import Packets, Truncation, iter_walk

FRAME_START_ID = 0
FRAME_START_SIZE = 24  # u64 frame id, f64 duration, f64 elapsed
MIN_RUN = 3  # frames: the first is the template and the last waits for its successor


class Decoded:
    """A decoded batch, with the per-position lookups that building frame maps needs
    (made once per batch, not per frame)."""

    def __init__(self, batch: Batch) -> None:
        self.batch = batch
        raw = batch.raw
        self.raw: dict[int, tuple[bytes, str | None]] = dict(
            zip(raw.index.tolist(), zip(raw.bodies, raw.reasons, strict=True), strict=True)
        )
        self._var: dict[int, dict[int, int]] = {}

    def var_records(self, pid: int, position: int) -> list[VarRecord]:
        """The variable-length records of the packet at batch `position` (id `pid`)."""
        table = self.batch.tables[pid]
        assert isinstance(table, VarTable)
        rows = self._var.get(pid)
        if rows is None:
            rows = self._var[pid] = {at: row for row, at in enumerate(table.index.tolist())}
        return table.packet(rows[position])


@dataclass
class Frame:
    """One frame's packets (walk columns, absolute header offsets) and where they are in
    decoded batches (`parts`: batch, first and last position + 1; empty until decoded)."""

    ids: list[int]
    offsets: list[int]
    sizes: list[int]
    parts: list[tuple[Decoded, int, int]] = field(default_factory=list)

    @property
    def start(self) -> int:
        return self.offsets[0]

    @property
    def end(self) -> int:
        return self.offsets[-1] + 5 + self.sizes[-1]


@dataclass(frozen=True)
class Run:
    """`count` consecutive frames of one layout: `first`, then copies `stride` bytes apart,
    the last of them `last`. Only `first` is decoded up front (the others when asked for:
    most are written from its map, `runs.py`, the last one too once its successor proved it
    whole)."""

    first: Frame
    last: Frame
    count: int

    @property
    def stride(self) -> int:
        return self.first.end - self.first.start

    def frame(self, i: int) -> Frame:
        """The `i`-th frame of the run (decoded by `FrameMaps.encode` when asked for)."""
        if i == self.count - 1:
            return self.last
        return _shifted(self.first, i * self.stride)


def _shifted(first: Frame, shift: int) -> Frame:
    """A frame laid out as `first`, `shift` bytes after it (not decoded)."""
    return Frame(list(first.ids), [at + shift for at in first.offsets], list(first.sizes))


def iter_frames(
    buf: Buffer, start: int, family: Family, *, first: Packets | None = None
) -> Iterator[Frame | Run | Truncation]:
    """The frames from offset `start` on, in file order; consecutive frames of one layout
    (ids and sizes) come as one `Run` when there are `MIN_RUN` or more. `first`: the packets
    from `start` to the end of `buf`, already walked (`detect.Detection.packets`).

    The first frame may not start with a FrameStart (a prelude); the last may lack its
    FrameEnd (a crashed recording). A cut packet ends the walk and is yielded last, as
    the walk's `Truncation`.
    """
    pending = Frame([], [], [])
    batches = _Batches()
    for packets in iter_walk(buf, start, batch_bytes=batches.size, first=first):
        cuts = np.flatnonzero(packets.ids == FRAME_START_ID)
        runs = _runs(packets, cuts)
        decoded, where = _decode(buf, packets, family, runs, cuts)
        batches.decoded(len(decoded.batch.packet_ids), len(packets))
        head = int(cuts[0]) if len(cuts) else len(packets)
        _extend(pending, packets, decoded, where, 0, head)
        if len(cuts):
            if pending.ids:
                yield pending
            yield from _group(packets, decoded, where, cuts, runs)
            pending = Frame([], [], [])
            _extend(pending, packets, decoded, where, int(cuts[-1]), len(packets))
        if packets.truncation is not None:
            if pending.ids:
                yield pending
            yield packets.truncation
            return
    if pending.ids:
        yield pending


class _Batches:
    """How many bytes the walk takes at once: `BATCH_BYTES`, or `RUN_BATCH_BYTES` after a
    batch of which at most `RUN_SHARE` of the packets were decoded (nearly all in runs).
    A run ends with its batch and its first and last frames go the per-frame way, so
    larger batches mean fewer of them when runs are long (a 100 MB file of 15 KB frames:
    ~12 % less conversion time); a batch that is decoded whole (frames that all differ)
    stays small, and so does the memory its decoding takes."""

    BATCH_BYTES = 8 << 20
    RUN_BATCH_BYTES = 32 << 20
    RUN_SHARE = 1 / 16

    def __init__(self) -> None:
        self._size = self.BATCH_BYTES

    def size(self) -> int:
        return self._size

    def decoded(self, decoded: int, packets: int) -> None:
        """The last batch had `packets` packets, `decoded` of them decoded."""
        few = decoded <= packets * self.RUN_SHARE
        self._size = self.RUN_BATCH_BYTES if few else self.BATCH_BYTES


def _runs(packets: Packets, cuts: npt.NDArray[np.intp]) -> list[tuple[int, int]]:
    """(first, last + 1) frame numbers of the runs among the whole frames between
    consecutive `cuts` (the last, open frame excluded): frames of the same packet ids and
    sizes as the frame before, compared with numpy."""
    if len(cuts) < 2:
        return []
    counts = np.diff(cuts)
    key = (packets.ids.astype(np.int64) << 32) | packets.sizes.astype(np.int64)
    frames = len(counts)
    same = np.zeros(frames, bool)
    candidate = np.flatnonzero(counts[1:] == counts[:-1]) + 1
    if len(candidate):
        lengths = counts[candidate]
        firsts = np.cumsum(lengths) - lengths
        at = np.repeat(cuts[candidate] - firsts, lengths) + np.arange(int(lengths.sum()))
        equal = key[at] == key[at - np.repeat(lengths, lengths)]
        same[candidate] = np.logical_and.reduceat(equal, firsts)
    bounds = [*np.flatnonzero(~same).tolist(), frames]
    well_formed = packets.sizes[cuts[:-1]] == FRAME_START_SIZE
    return [
        (lo, hi) for lo, hi in itertools.pairwise(bounds) if hi - lo >= MIN_RUN and well_formed[lo]
    ]


def _decode(
    buf: Buffer,
    packets: Packets,
    family: Family,
    runs: list[tuple[int, int]],
    cuts: npt.NDArray[np.intp],
) -> tuple[Decoded, npt.NDArray[np.int64]]:
    """Decode the packets of `packets` but those of runs after their first frame; returns
    the decoded batch and each packet's position in it."""
    keep = np.ones(len(packets), bool)
    for lo, hi in runs:
        keep[cuts[lo + 1] : cuts[hi]] = False
    where = np.cumsum(keep) - 1
    if keep.all():
        return Decoded(decode_packets(buf, packets, family)), where
    chosen = Packets(
        packets.ids[keep],
        packets.offsets[keep],
        packets.sizes[keep],
        packets.start,
        packets.end,
        packets.truncation,
    )
    return Decoded(decode_packets(buf, chosen, family)), where


def _extend(
    frame: Frame,
    packets: Packets,
    decoded: Decoded,
    where: npt.NDArray[np.int64],
    lo: int,
    hi: int,
) -> None:
    if lo < hi:
        frame.ids += packets.ids[lo:hi].tolist()
        frame.offsets += packets.offsets[lo:hi].tolist()
        frame.sizes += packets.sizes[lo:hi].tolist()
        frame.parts.append((decoded, int(where[lo]), int(where[hi - 1]) + 1))


def _group(
    packets: Packets,
    decoded: Decoded,
    where: npt.NDArray[np.int64],
    cuts: npt.NDArray[np.intp],
    runs: list[tuple[int, int]],
) -> Iterator[Frame | Run]:
    """The whole frames between consecutive `cuts`, the runs as `Run`s."""

    def frame(i: int) -> Frame:
        made = Frame([], [], [])
        _extend(made, packets, decoded, where, int(cuts[i]), int(cuts[i + 1]))
        return made

    at = 0
    for lo, hi in [*runs, (len(cuts) - 1, len(cuts) - 1)]:
        yield from (frame(i) for i in range(at, lo))
        if hi > lo:
            first = frame(lo)  # the others at a constant stride: as it, not decoded
            last = _shifted(first, (hi - 1 - lo) * (first.end - first.start))
            yield Run(first, last, hi - lo)
        at = hi


_EMPTY: Final = object()  # a packet with no content: no key in the map


class FrameMaps:
    """Builds frame maps from decoded frames (the conversion's per-frame path)."""

    def __init__(self, family: Family) -> None:
        self.family = family
        # Frames repeat a handful of packet sequences: each is stored once (in the
        # archive's CARLA member) and a frame names its sequence by number.
        self.orders: dict[bytes, int] = {}
        self._table: list[tuple[Kind, str, Shape] | None] = [None] * 256
        for pid, kind in family.ids.items():
            self._table[pid] = (kind, KIND_KEYS[kind], SHAPES[kind])

    def encode(self, index: int, buf: Buffer, frame: Frame) -> tuple[dict[str, Any], list[str]]:
        """The map of archive message `index` for `frame` (decoded now if it was not), and
        why its known packets kept raw did not fit (a second packet of a kind, which the
        map has no room for, says so too)."""
        if not frame.parts:
            self._decode(buf, frame)
        view = memoryview(buf)
        out: dict[str, Any] = {INDEX_KEY: index}
        raw: list[list[Any]] = []
        misfits: list[str] = []
        seen: set[str] = set()  # kinds whose packet is already placed, empty ones included
        table = self._table
        ids, offsets, sizes = frame.ids, frame.offsets, frame.sizes
        position = 0
        for decoded, lo, hi in frame.parts:
            carried = decoded.raw
            for at in range(lo, hi):
                start = offsets[position] + 5
                size = sizes[position]
                kept = carried.get(at)
                if kept is not None:
                    raw.append([position, kept[0]])
                    if kept[1] is not None:
                        misfits.append(kept[1])
                    position += 1
                    continue
                entry = table[ids[position]]
                assert entry is not None  # the codec carries unknown ids raw
                kind, key, shape = entry
                content: object  # a view of the body, or its records as maps
                if shape is Shape.EMPTY or (shape is not Shape.SINGLE and size == 2):
                    content = _EMPTY  # no body, or a count of 0
                elif shape is Shape.SINGLE:
                    content = view[start : start + size]
                elif shape is Shape.FIXED or kind is Kind.ANIM_VEHICLE_WHEELS:
                    content = view[start + 2 : start + size]
                else:
                    content = var_to_maps(kind, decoded.var_records(ids[position], at))
                if key in seen:
                    raw.append([position, bytes(view[start : start + size])])
                    misfits.append(f"a second {kind.value} packet in frame {index}")
                else:
                    seen.add(key)
                    if content is not _EMPTY:
                        out[key] = content
                position += 1
        order = bytes(ids)
        number = self.orders.get(order)
        if number is None:  # first use: the sequence itself, so messages describe themselves
            self.orders[order] = len(self.orders)
            out[ORDER_KEY] = order
        else:
            out[ORDER_KEY] = number
        if raw:
            out[RAW_KEY] = raw
        return out, misfits

    def _decode(self, buf: Buffer, frame: Frame) -> None:
        packets = Packets(
            np.array(frame.ids, np.uint8),
            np.array(frame.offsets, np.int64),
            np.array(frame.sizes, np.uint32),
            frame.start,
            frame.end,
            None,
        )
        frame.parts = [(Decoded(decode_packets(buf, packets, self.family)), 0, len(frame.ids))]
