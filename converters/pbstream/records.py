"""Record kinds and what identifies a record: kind, trajectory id, index, time (spec §4-§6).

Only the few varints an index needs are read (`describe`); bulky fields are skipped by
length. A payload that does not have the shape of a known record is kind `unknown` and is
kept whole, like every payload.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from nanorec.errors import FormatError

from .wire import FIXED32, FIXED64, LEN, VARINT, iter_fields, read_varint, signed32, signed64

HEADER: Final = "header"
POSE_GRAPH: Final = "pose_graph"
OPTIONS: Final = "all_trajectory_builder_options"
SUBMAP: Final = "submap"
NODE: Final = "node"
TRAJECTORY_DATA: Final = "trajectory_data"
IMU: Final = "imu_data"
ODOMETRY: Final = "odometry_data"
FIXED_FRAME: Final = "fixed_frame_pose_data"
LANDMARK: Final = "landmark_data"
UNKNOWN: Final = "unknown"
DAMAGED: Final = "damaged"

#: SerializedData field number -> kind (format versions 1 and 2).
V2_KINDS: Final = {
    1: POSE_GRAPH,
    2: OPTIONS,
    3: SUBMAP,
    4: NODE,
    5: TRAJECTORY_DATA,
    6: IMU,
    7: ODOMETRY,
    8: FIXED_FRAME,
    9: LANDMARK,
}
V2_FIELDS: Final = {kind: number for number, kind in V2_KINDS.items()}
#: LegacySerializedData (before format 1.0): the old numbering.
LEGACY_KINDS: Final = {
    1: SUBMAP,
    2: NODE,
    3: IMU,
    4: ODOMETRY,
    5: FIXED_FRAME,
    6: TRAJECTORY_DATA,
    7: LANDMARK,
}
SENSOR_KINDS: Final = (IMU, ODOMETRY, FIXED_FRAME, LANDMARK)
ALL_KINDS: Final = (HEADER, *V2_KINDS.values(), UNKNOWN, DAMAGED)

#: 100-ns ticks from 0001-01-01 to 1970-01-01 (719,162 days).
UNIX_EPOCH_TICKS: Final = 621_355_968_000_000_000


def ticks_to_unix_ns(ticks: int) -> int:
    """Cartographer time (100-ns ticks since 0001-01-01 UTC) as Unix nanoseconds, exactly."""
    return (ticks - UNIX_EPOCH_TICKS) * 100


def ticks_to_us(ticks: int) -> int:
    """Cartographer time as Unix microseconds (floor), for the archive index."""
    return (ticks - UNIX_EPOCH_TICKS) // 10


def ticks_to_seconds(ticks: int) -> float:
    return (ticks - UNIX_EPOCH_TICKS) / 1e7


@dataclass(slots=True)  # not frozen: made once a record, frozen costs ~1 us
class Described:
    """What the index needs of one record. `body` is the inner message's span."""

    kind: str
    trajectory_id: int | None = None
    index: int | None = None
    ticks: int | None = None
    dims: int | None = None  # 2 or 3 for submaps
    version: int | None = None  # for the header
    body: tuple[int, int] = (0, 0)
    problem: str | None = None  # what is wrong with a record kept anyway (a bad time)


def is_header(payload: bytes) -> bool:
    """Record 0 is a SerializationHeader iff it is exactly one varint field number 1."""
    try:
        fields = list(iter_fields(payload))
    except FormatError:
        return False
    return len(fields) == 1 and fields[0][0] == 1 and fields[0][1] == VARINT


def header_version(payload: bytes) -> int:
    value, _ = read_varint(payload, 1, len(payload))
    return value


def looks_like_options(payload: bytes, trajectories: int) -> bool:
    """A bare AllTrajectoryBuilderOptions (legacy record 1): only field-1 entries, one per
    pose-graph trajectory."""
    try:
        fields = list(iter_fields(payload))
    except FormatError:
        return False
    return (
        len(fields) == trajectories
        and trajectories > 0
        and all(f[0] == 1 and f[1] == LEN for f in fields)
    )


def pose_graph_trajectories(payload: bytes, start: int = 0, end: int | None = None) -> int:
    """How many trajectories a PoseGraph lists (field 4)."""
    try:
        return sum(1 for f in iter_fields(payload, start, end) if f[0] == 4)
    except FormatError:
        return 0


def describe(payload: bytes, kinds: dict[int, str]) -> Described:
    """Kind, ids and time of a SerializedData payload (`kinds`: V2_KINDS or LEGACY_KINDS)."""
    try:
        fields = list(iter_fields(payload))
    except FormatError:
        return Described(UNKNOWN)
    if len(fields) != 1 or fields[0][1] != LEN or fields[0][0] not in kinds:
        return Described(UNKNOWN)
    number, _, start, end = fields[0]
    kind = kinds[number]
    try:
        return _inner(kind, payload, start, end)
    except FormatError:
        return Described(UNKNOWN)


def describe_bare(kind: str, payload: bytes) -> Described:
    """A legacy bare record (PoseGraph, AllTrajectoryBuilderOptions): the whole payload."""
    return Described(kind, body=(0, len(payload)))


def id_pair(payload: bytes, start: int, end: int) -> tuple[int, int]:
    """The two varint fields 1 and 2 of a SubmapId/NodeId message: (trajectory, index)."""
    trajectory = index = 0
    for number, wire, value, _ in iter_fields(payload, start, end):
        if wire == VARINT and number == 1:
            trajectory = signed32(value)
        elif wire == VARINT and number == 2:
            index = signed32(value)
    return trajectory, index


def _timestamp(payload: bytes, start: int, end: int) -> tuple[int | None, str | None]:
    """(ticks, None), absent = 0 as proto3 says; (None, why) when field 1 is not a varint."""
    ticks = 0
    for number, wire, value, _ in iter_fields(payload, start, end):
        if number == 1 and wire == VARINT:
            ticks = signed64(value)
        elif number == 1:
            return None, f"its timestamp has wire type {wire}, not a varint: kept untimed"
    return ticks, None


def _inner(kind: str, payload: bytes, start: int, end: int) -> Described:
    body = (start, end)
    if kind in (POSE_GRAPH, OPTIONS):
        return Described(kind, body=body)
    trajectory = 0
    index: int | None = None
    ticks: int | None = None
    dims: int | None = None
    problem: str | None = None
    for number, wire, a, b in iter_fields(payload, start, end):
        if kind in (SUBMAP, NODE):
            if number == 1 and wire == LEN:
                trajectory, index = id_pair(payload, a, b)
            elif kind == SUBMAP and number in (2, 3) and wire == LEN:
                dims = number
            elif kind == NODE and number == 5 and wire == LEN:
                ticks, problem = _timestamp(payload, a, b)
        elif number == 1 and wire == VARINT:
            trajectory = signed32(a)
        elif kind != TRAJECTORY_DATA and number == 2 and wire == LEN:
            ticks, problem = _timestamp(payload, a, b)
    if kind in (SUBMAP, NODE) and index is None:
        index = 0
    return Described(kind, trajectory, index, ticks, dims, body=body, problem=problem)


#: Per kind: the field numbers of its message the index reads (ids, time, 2D/3D), so a
#: prefix scan stops after the last of them (Cartographer writes fields in number order).
_LAST_NEEDED: Final = {
    SUBMAP: 3,
    NODE: 5,
    TRAJECTORY_DATA: 1,
    IMU: 2,
    ODOMETRY: 2,
    FIXED_FRAME: 2,
    LANDMARK: 2,
}


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    """A varint; IndexError past the end of `buf` (the prefix is too short)."""
    byte = buf[pos]
    if byte < 0x80:
        return byte, pos + 1
    end = pos + 10
    result = shift = 0
    while pos < end:
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result & 0xFFFF_FFFF_FFFF_FFFF, pos
        shift += 7
    raise FormatError("a varint is longer than 10 bytes", offset=end - 10)


def describe_prefix(prefix: bytes, size: int, kinds: dict[int, str]) -> Described | None:
    """`describe` from the first bytes of a `size`-byte payload (None when they do not reach
    what the index needs: ask again with more). The record must be one SerializedData field
    spanning `size` bytes (its gzip ISIZE, checked by the CRC when the record is read); inside
    it the scan stops after the fields the index needs (Cartographer writes each once, in
    number order), so a later duplicate is not seen and later damage shows on read."""
    try:
        key = prefix[0]
        key, pos = (key, 1) if key < 0x80 else _varint(prefix, 0)
        length = prefix[pos]
        length, start = (length, pos + 1) if length < 0x80 else _varint(prefix, pos)
        kind = kinds.get(key >> 3)
        end = start + length
        if key & 7 != LEN or kind is None or end != size:
            return Described(UNKNOWN)
        last = _LAST_NEEDED.get(kind)
        if last is None:  # pose graph, options: the kind is all
            return Described(kind, body=(start, end))
        return _inner_prefix(kind, prefix, start, end, last)
    except IndexError:  # past the prefix: more is needed, unless it is the whole payload
        return None if len(prefix) < size else Described(UNKNOWN)
    except FormatError:
        return Described(UNKNOWN)


def _inner_prefix(kind: str, prefix: bytes, start: int, end: int, last: int) -> Described:
    """`_inner` over a prefix (IndexError: it is too short; FormatError: not a record)."""
    trajectory = 0
    index: int | None = None
    ticks: int | None = None
    dims: int | None = None
    problem: str | None = None
    timed = 5 if kind == NODE else 2
    pos = start
    while pos < end:
        key = prefix[pos]  # one-byte keys and values are the common case: no call
        key, pos = (key, pos + 1) if key < 0x80 else _varint(prefix, pos)
        number, wire = key >> 3, key & 7
        if number == 0 or number > last:
            break
        if wire == VARINT:
            value = prefix[pos]
            value, pos = (value, pos + 1) if value < 0x80 else _varint(prefix, pos)
            if number == 1 and kind not in (SUBMAP, NODE):
                trajectory = signed32(value)
            continue
        if wire == LEN:
            length = prefix[pos]
            length, pos = (length, pos + 1) if length < 0x80 else _varint(prefix, pos)
            after = pos + length
        elif wire in (FIXED64, FIXED32):
            after = pos + (8 if wire == FIXED64 else 4)
        else:
            raise FormatError(f"wire type {wire}")
        if after > end:
            raise FormatError("a field runs past its record")
        if wire == LEN and kind in (SUBMAP, NODE) and number == 1:
            if after > len(prefix):
                raise IndexError
            trajectory, index = _id_pair_fast(prefix, pos, after)
        elif wire == LEN and kind == SUBMAP and number in (2, 3):
            dims = number
            break
        elif wire == LEN and number == timed and kind != TRAJECTORY_DATA:
            ticks, problem = _first_timestamp(prefix, pos, after)
            break
        pos = after
    if kind in (SUBMAP, NODE) and index is None:
        index = 0
    return Described(kind, trajectory, index, ticks, dims, body=(start, end), problem=problem)


def _id_pair_fast(buf: bytes, start: int, end: int) -> tuple[int, int]:
    """`id_pair` without a generator when the message holds only fields 1 and 2 as varints
    (what Cartographer writes: a node or submap id costs a call, not a generator); anything
    else is handed to `id_pair`."""
    trajectory = index = 0
    pos = start
    while pos < end:
        key = buf[pos]
        if key != 0x08 and key != 0x10:
            return id_pair(buf, start, end)
        value = shift = 0
        last = min(pos + 11, end)
        pos += 1
        while True:
            if pos >= last:
                return id_pair(buf, start, end)  # past the message, or too long: it says
            byte = buf[pos]
            pos += 1
            value |= (byte & 0x7F) << shift
            if byte < 0x80:
                break
            shift += 7
        if key == 0x08:
            trajectory = signed32(value)
        else:
            index = signed32(value)
    return trajectory, index


def _first_timestamp(prefix: bytes, pos: int, end: int) -> tuple[int | None, str | None]:
    """`_timestamp` from the first field of a message (fields in number order: a first field
    numbered above 1 means no timestamp, 0)."""
    if pos >= end:
        return 0, None
    key = prefix[pos]
    if key >> 3 != 1:  # a one-byte key of a field above 1, or a longer key (field >= 16)
        return 0, None
    pos += 1
    if key & 7 != VARINT:
        return None, f"its timestamp has wire type {key & 7}, not a varint: kept untimed"
    value, _ = _varint(prefix, pos)
    return signed64(value), None


def peek_ticks(prefix: bytes, kinds: dict[int, str]) -> int | None:
    """The time of a record from the first bytes of its payload (None if it has none or
    they do not reach it): finds the first timestamp without inflating a whole record."""
    try:
        key, pos = read_varint(prefix, 0, len(prefix))
        if key & 7 != LEN or kinds.get(key >> 3) not in (NODE, *SENSOR_KINDS):
            return None
        kind = kinds[key >> 3]
        _, pos = read_varint(prefix, pos, len(prefix))
        wanted = 5 if kind == NODE else 2
        while True:  # inside the record's message: skip to field `wanted`
            key, pos = read_varint(prefix, pos, len(prefix))
            if key == wanted << 3 | LEN:
                _, pos = read_varint(prefix, pos, len(prefix))
                break
            if key & 7 == VARINT:
                _, pos = read_varint(prefix, pos, len(prefix))
            elif key & 7 == LEN:
                size, pos = read_varint(prefix, pos, len(prefix))
                pos += size
            else:
                return None
        key, pos = read_varint(prefix, pos, len(prefix))
        if key != 1 << 3 | VARINT:
            return 0 if key >> 3 > 1 else None
        value, _ = read_varint(prefix, pos, len(prefix))
        return signed64(value)
    except FormatError:
        return None


__all__ = [
    "ALL_KINDS",
    "HEADER",
    "LEGACY_KINDS",
    "SENSOR_KINDS",
    "UNIX_EPOCH_TICKS",
    "V2_KINDS",
    "Described",
    "describe",
    "describe_prefix",
    "id_pair",
    "is_header",
    "peek_ticks",
    "ticks_to_seconds",
    "ticks_to_unix_ns",
    "ticks_to_us",
]
