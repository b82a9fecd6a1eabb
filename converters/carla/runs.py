"""Runs of same-layout CARLA frames, turned into archive messages with numpy.

CARLA writes the same packets, of the same sizes, frame after frame for long stretches (the
same actors, the same wheels): such frames lie in the file at a constant stride, so a run
of them is a 2-D array (frames x bytes) over the file buffer, and their archive messages
(`message.py`) are a 2-D array too, whose columns are either constant (keys, msgpack
headers), copied from columns of the frames (the records), or per frame (the index and the
timestamp). Building them is a handful of strided copies per run instead of ~20 Python
steps per frame, the cost that kept conversion at a fifth of the MCAP writer's speed.

The first frame of a run goes the per-frame way (decoded and checked by the codec, then
`frames.FrameMaps`: its map is the template). The others join the fast path only when their count
fields (and, while some actor has no pose yet, their Position ids) equal the template's
byte for byte: with equal sizes that makes every check of the codec give the
same answer, so their messages are exactly what it would have built.
"""

from __future__ import annotations

import itertools
import struct
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import msgpack
import numpy as np
import numpy.typing as npt

from nanorec.archive.wire import TIMESTAMP_KEY, map_header
from nanorec.buffers import Buffer

from .frames import Frame, Run
from .ids import SHAPES, Family, Kind, Shape
from .message import INDEX_KEY, KEY_KINDS, KIND_KEYS, ORDER_KEY, wheel_records
from .records import FIXED_DTYPES, WHEEL_ANIM_DTYPE
from .world_tables import SPARSE_FIXED_KINDS, WorldTablesBuilder

#: Kinds a fast frame may hold: records the world tables never look at frame by frame.
_EVENT_KINDS = frozenset({Kind.EVENT_ADD, Kind.EVENT_DEL, Kind.EVENT_PARENT, *SPARSE_FIXED_KINDS})
_ELAPSED_AT = 5 + 16  # FrameStart: header, then u64 frame id, f64 duration, f64 elapsed
_TIMESTAMP_KEY = msgpack.packb(TIMESTAMP_KEY)
_MESSAGE_HEAD = b"\x82" + msgpack.packb("frame")  # {"frame": ..., "nanorec.t": ...}
_MAX_STAMP = float(1 << 62)
#: Messages built per numpy pass: small enough to stay in cache from the copy to the write.
_CHUNK_BYTES = 1 << 20
WHEELS = Kind.ANIM_VEHICLE_WHEELS
WHEEL_SIZE = WHEEL_ANIM_DTYPE.itemsize  # 9 bytes a wheel, after 8 of vehicle id and count


@dataclass(frozen=True)
class FastRows:
    """Stored archive messages of frames `1..count` of a run, ready for
    `ArchiveWriter.write_stored_rows`, in groups of one row length each."""

    groups: Iterator[tuple[npt.NDArray[np.uint8], npt.NDArray[np.int64]]]  # built lazily
    count: int
    last_time: int
    last_frame_id: int


def _uint(values: npt.NDArray[np.int64]) -> tuple[npt.NDArray[np.int64], list[str]]:
    """msgpack's width class of each non-negative int (0: fixint, 1: u8 ... 4: u64), and the
    big-endian dtype of each class (after its marker byte)."""
    classes = np.searchsorted(np.array([128, 256, 1 << 16, 1 << 32]), values, side="right")
    return classes, ["", ">u1", ">u2", ">u4", ">u8"]


_UINT_MARKERS = (0, 0xCC, 0xCD, 0xCE, 0xCF)  # by width class; fixints have none


def fast_rows(
    buf: Buffer,
    run: Run,
    at: int,
    template: Mapping[str, Any],
    family: Family,
    orders: Mapping[bytes, int],
    world: WorldTablesBuilder,
    first_index: int,
    last_time: int,
    *,
    last: bool = False,
) -> FastRows | None:
    """The messages of frames `at + 1`, `at + 2`... of `run` while they match frame `at`
    (the run's last frame only with `last`: once its successor proved it whole): `template`
    is the map `FrameMaps` built for frame `at` (or for an earlier frame of the run that
    frame `at` matched), `first_index` the archive index of frame `at + 1`. None when the
    template does not allow it (raw packets, events, variable-length records other than
    wheels) or frame `at + 1` does not match."""
    first = run.first  # every frame of the run has its packets at the same relative offsets
    segments = _segments(first, template, family)
    if segments is None:
        return None
    check, regions = _check_columns(first, template, family, world)
    count = run.count - at
    frames = np.frombuffer(
        buf, np.uint8, count=count * run.stride, offset=first.start + at * run.stride
    )
    frames = frames.reshape(count, run.stride)[: count if last else count - 1]
    ok = (frames[1:, check] == frames[0, check]).all(axis=1)
    for start, records, size, field in regions:
        ids = frames[:, start : start + records * size].reshape(-1, records, size)
        ids = ids[:, :, field : field + 4].view("<u4")  # one compare per value, not four
        ok &= (ids[1:] == ids[0]).all(axis=(1, 2))
    elapsed = frames[1:, _ELAPSED_AT : _ELAPSED_AT + 8].copy().view("<f8")[:, 0]
    valid = np.isfinite(elapsed) & (elapsed >= 0)
    ok &= ~valid | (elapsed * 1e6 < _MAX_STAMP)
    count = int(np.argmin(ok)) if not ok.all() else len(ok)
    if count == 0:
        return None
    body = frames[1 : 1 + count]
    micros = np.where(valid[:count], np.rint(elapsed[:count] * 1e6), -1).astype(np.int64)
    stamps = np.maximum.accumulate(np.concatenate([[last_time], micros]))[1:]
    indexes = np.arange(first_index, first_index + count, dtype=np.int64)
    number = orders[bytes(first.ids)]
    order = msgpack.packb(ORDER_KEY) + msgpack.packb(number)
    index_classes, index_types = _uint(indexes)
    stamp_classes = (stamps > 0xFFFF_FFFF).astype(np.int64)
    split = np.flatnonzero(np.diff(index_classes * 2 + stamp_classes)) + 1
    step = max(1, _CHUNK_BYTES // run.stride)
    cuts = sorted({*split.tolist(), *range(0, count, step), count})
    groups = (
        _build(
            body[lo:hi],
            segments,
            indexes[lo:hi],
            index_types[int(index_classes[lo])],
            int(index_classes[lo]),
            order,
            stamps[lo:hi],
        )
        for lo, hi in itertools.pairwise(cuts)
    )
    frame_id = struct.unpack_from("<Q", body[count - 1], 5)[0]
    return FastRows(groups, count, int(stamps[-1]), int(frame_id))


def _segments(
    first: Frame, template: Mapping[str, Any], family: Family
) -> list[tuple[bytes, int, int]] | None:
    """Per content key of the template, in its order: (the bytes before the content: key
    and bin header, where the content starts in the frame, its length); None when frames
    of this layout cannot take the fast path."""
    keys = list(template)
    if keys[0] != INDEX_KEY or keys[-1] != ORDER_KEY:
        return None
    start = first.start
    where: dict[str, tuple[int, int]] = {}
    for pid, offset, size in zip(first.ids, first.offsets, first.sizes, strict=True):
        kind = family.ids.get(pid)
        if kind is None:
            return None
        shape = SHAPES[kind]
        body = offset + 5 - start
        if shape is Shape.SINGLE:
            where.setdefault(KIND_KEYS[kind], (body, size))
        elif shape is not Shape.EMPTY:
            where.setdefault(KIND_KEYS[kind], (body + 2, size - 2))
    segments = []
    for key in keys[1:-1]:
        kind = KEY_KINDS.get(key)
        content = template[key]
        if (
            kind is None
            or kind in _EVENT_KINDS
            or not isinstance(content, bytes | memoryview)
            or (SHAPES[kind] is Shape.VAR and kind is not Kind.ANIM_VEHICLE_WHEELS)
        ):
            return None
        at, length = where[key]
        if length != len(content):
            return None
        segments.append((msgpack.packb(key) + _bin_header(length), at, length))
    return segments


def _bin_header(length: int) -> bytes:
    if length < 1 << 8:
        return bytes((0xC4, length))
    if length < 1 << 16:
        return b"\xc5" + length.to_bytes(2, "big")
    return b"\xc6" + length.to_bytes(4, "big")


def _check_columns(
    first: Frame, template: Mapping[str, Any], family: Family, world: WorldTablesBuilder
) -> tuple[npt.NDArray[np.intp], list[tuple[int, int, int, int]]]:
    """What must equal the template's, relative to the frame: byte columns (every count
    field, the wheel counts of AnimVehicleWheels records), and as strided regions (first
    record, records, record size, field offset: a view, much cheaper than gathering
    columns) the wheel counts when every vehicle has as many wheels, and while some actor
    has no pose yet the ids of the Position records (news for the world tables)."""
    columns: list[int] = []
    regions: list[tuple[int, int, int, int]] = []
    dtypes = FIXED_DTYPES[family.engine]
    start = first.start
    for pid, offset, size in zip(first.ids, first.offsets, first.sizes, strict=True):
        kind = family.ids[pid]
        shape = SHAPES[kind]
        body = offset + 5 - start
        if shape in (Shape.FIXED, Shape.VAR):
            columns += [body, body + 1]
        wheels = template.get(KIND_KEYS[kind]) if kind is WHEELS else None
        if wheels is not None:  # the template's records fill the body exactly
            found = wheel_records(wheels) or []
            if len({count for _, _, count in found}) == 1:  # one record size: strided
                size = 8 + WHEEL_SIZE * found[0][2]
                regions.append((body + 2, len(found), size, 4))
            else:
                for _vehicle, at, _count in found:
                    columns += range(body + 2 + at - 4, body + 2 + at)
        if kind is Kind.POSITION and world.unposed and size > 2:
            dtype = dtypes[kind]
            records = (size - 2) // dtype.itemsize
            field = dtype.fields["id"][1] if dtype.fields else 0
            regions.append((body + 2, records, dtype.itemsize, field))
    return np.array(columns, np.intp), regions


def _build(
    body: npt.NDArray[np.uint8],
    segments: list[tuple[bytes, int, int]],
    indexes: npt.NDArray[np.int64],
    index_type: str,
    index_class: int,
    order: bytes,
    stamps: npt.NDArray[np.int64],
) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.int64]]:
    """The stored messages of the frames `body` (one per row)."""
    rows = len(body)
    stamp_type = ">u8" if stamps[0] > 0xFFFF_FFFF else ">u4"
    index_size = 1 if index_class == 0 else 1 + np.dtype(index_type).itemsize
    head = _MESSAGE_HEAD + map_header(len(segments) + 2) + msgpack.packb(INDEX_KEY)
    length = (
        len(head)
        + index_size
        + sum(len(prefix) + size for prefix, _, size in segments)
        + len(order)
        + len(_TIMESTAMP_KEY)
        + 1
        + np.dtype(stamp_type).itemsize
    )
    # one row of the constant bytes (zeros where values go), copied to every row piece by
    # piece between the values (a whole-row copy first writes every byte twice: slower even
    # on 700-byte rows), then the values: a few strided copies per run of messages
    template = np.zeros(length, np.uint8)
    columns: list[tuple[int, npt.NDArray[np.uint8]]] = []  # (where, per-row values)
    at = _put(template, 0, head)
    if index_class == 0:
        columns.append((at, indexes.astype(np.uint8)[:, None]))
        at += 1
    else:
        at = _put(template, at, bytes((_UINT_MARKERS[index_class],)))
        width = index_size - 1
        columns.append((at, indexes.astype(index_type).view(np.uint8).reshape(rows, width)))
        at += width
    for prefix, start, size in segments:
        at = _put(template, at, prefix)
        columns.append((at, body[:, start : start + size]))
        at += size
    at = _put(template, at, order + _TIMESTAMP_KEY + (b"\xcf" if stamp_type == ">u8" else b"\xce"))
    columns.append((at, stamps.astype(stamp_type).view(np.uint8).reshape(rows, length - at)))
    out = np.empty((rows, length), np.uint8)
    done = 0
    for where, values in columns:
        out[:, done:where] = template[done:where]
        done = where + values.shape[1]
    for where, values in columns:
        out[:, where : where + values.shape[1]] = values
    return out, stamps


def _put(row: npt.NDArray[np.uint8], at: int, data: bytes) -> int:
    row[at : at + len(data)] = np.frombuffer(data, np.uint8)
    return at + len(data)
