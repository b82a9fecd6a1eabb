"""VAR packet bodies parsed without a `Cursor`: the same records as `records.parse_var_body`,
a few times faster, for the per-file work that dominates small recordings (detection's
samples, then the codec's every EventAdd, bones and wheels packet).

Each field is read with a precompiled `struct.Struct` at a running offset, with no length
check of its own: `unpack_from` and `np.frombuffer` refuse to read past the body, and the
string lengths are checked here. Anything the fast path does not accept (a short body, bytes
left over, PhysicsControl's wheel-size guessing) is parsed again by `records.parse_var_body`,
the reference, which raises the error naming the offset, or returns its own records.
"""

from __future__ import annotations

import struct
from typing import Any

import numpy as np

from .ids import Engine, Kind
from .records import (
    WHEEL_ANIM_DTYPE,
    ActorAdd,
    Attribute,
    VarRecord,
    VehicleWheels,
    WalkerBones,
    parse_var_body,
)

_U16 = struct.Struct("<H")
_ID_TYPE = struct.Struct("<IB")
_U32 = struct.Struct("<I")
_TYPE_SIZE = struct.Struct("<BH")
_ID_COUNT_U16 = struct.Struct("<IH")
_ID_COUNT_U32 = struct.Struct("<II")
_VECTOR: dict[Engine, np.dtype[np.floating[Any]]] = {
    Engine.UE4: np.dtype("<f4"),
    Engine.UE5: np.dtype("<f8"),
}


class _Slow(Exception):
    """The fast path gives up: the reference parser decides (and names the error)."""


def parse_var_fast(
    kind: Kind, body: bytes | memoryview, engine: Engine, *, base: int = 0
) -> list[VarRecord]:
    """`records.parse_var_body(kind, body, engine, base=base)`, the same records or error."""
    if isinstance(body, bytes) and kind is not Kind.PHYSICS_CONTROL:
        try:
            if kind is Kind.EVENT_ADD:
                return _adds(body, _VECTOR[engine])
            if kind is Kind.ANIM_VEHICLE_WHEELS:
                return _wheels(body)
            if kind is Kind.WALKER_BONES:
                return _bones(body, _VECTOR[engine])
        except (_Slow, struct.error, ValueError):
            pass
    return parse_var_body(kind, body, engine, base=base)


def parse_var_head(
    kind: Kind, body: bytes | memoryview, engine: Engine, records: int
) -> list[VarRecord] | None:
    """The first `records` records of an EventAdd, bones or wheels body (the rest unread:
    detection's sample of a frame-1 EventAdd of every actor), or None where the fast path
    gives up (the caller's `Cursor` parse then decides, and names the error)."""
    if isinstance(body, bytes):
        try:
            if kind is Kind.EVENT_ADD:
                return _adds(body, _VECTOR[engine], records)
            if kind is Kind.ANIM_VEHICLE_WHEELS:
                return _wheels(body, records)
            if kind is Kind.WALKER_BONES:
                return _bones(body, _VECTOR[engine], records)
        except (_Slow, struct.error, ValueError):
            pass
    return None


def _text(body: bytes, pos: int) -> tuple[str, int]:
    """An FString at `pos` (as `Cursor.string`) and the offset after it."""
    (size,) = _U16.unpack_from(body, pos)
    end = pos + 2 + size
    if end > len(body):
        raise _Slow
    return body[pos + 2 : end].decode("utf-8", "surrogateescape"), end


def _count(body: bytes, limit: int | None) -> int:
    """The records to read: the body's count, or at most `limit` of them."""
    (count,) = _U16.unpack_from(body, 0)
    return int(count) if limit is None else min(int(count), limit)


def _done(body: bytes, pos: int, records: list[VarRecord], limit: int | None) -> list[VarRecord]:
    if limit is None and pos != len(body):  # bytes left over: the reference raises FormatError
        raise _Slow
    return records


def _adds(
    body: bytes, vec: np.dtype[np.floating[Any]], limit: int | None = None
) -> list[VarRecord]:
    width = 3 * vec.itemsize
    length = len(body)
    records: list[VarRecord] = []
    pos = 2
    for _ in range(_count(body, limit)):
        actor_id, actor_type = _ID_TYPE.unpack_from(body, pos)
        location = np.frombuffer(body, vec, 3, pos + 5)
        rotation = np.frombuffer(body, vec, 3, pos + 5 + width)
        (uid,) = _U32.unpack_from(body, pos + 5 + 2 * width)
        blueprint, pos = _text(body, pos + 9 + 2 * width)
        (attribute_count,) = _U16.unpack_from(body, pos)
        pos += 2
        attributes = []
        for _ in range(attribute_count):  # `_text` inlined: most of an EventAdd's strings
            attr_type, size = _TYPE_SIZE.unpack_from(body, pos)
            key = pos + 3
            pos = key + size
            (size,) = _U16.unpack_from(body, pos)  # past the body: struct.error
            value = pos + 2
            pos = value + size
            if pos > length:
                raise _Slow
            attributes.append(
                Attribute(
                    attr_type,
                    body[key : value - 2].decode("utf-8", "surrogateescape"),
                    body[value:pos].decode("utf-8", "surrogateescape"),
                )
            )
        records.append(
            ActorAdd(actor_id, actor_type, location, rotation, uid, blueprint, tuple(attributes))
        )
    return _done(body, pos, records, limit)


def _wheels(body: bytes, limit: int | None = None) -> list[VarRecord]:
    records: list[VarRecord] = []
    pos = 2
    size = WHEEL_ANIM_DTYPE.itemsize
    for _ in range(_count(body, limit)):
        vehicle_id, count = _ID_COUNT_U32.unpack_from(body, pos)
        if pos + 8 + count * size > len(body):
            raise _Slow
        wheels = np.frombuffer(body, WHEEL_ANIM_DTYPE, count, pos + 8)
        records.append(VehicleWheels(vehicle_id, wheels))
        pos += 8 + count * size
    return _done(body, pos, records, limit)


def _bones(
    body: bytes, vec: np.dtype[np.floating[Any]], limit: int | None = None
) -> list[VarRecord]:
    width = 3 * vec.itemsize
    records: list[VarRecord] = []
    pos = 2
    for _ in range(_count(body, limit)):
        walker_id, count = _ID_COUNT_U16.unpack_from(body, pos)
        pos += 6
        names = []
        locations = np.empty((count, 3), dtype=vec)
        rotations = np.empty((count, 3), dtype=vec)
        for i in range(count):
            name, pos = _text(body, pos)
            names.append(name)
            locations[i] = np.frombuffer(body, vec, 3, pos)
            rotations[i] = np.frombuffer(body, vec, 3, pos + width)
            pos += 2 * width
        records.append(WalkerBones(walker_id, tuple(names), locations, rotations))
    return _done(body, pos, records, limit)


def var_fits(
    kind: Kind, body: bytes | memoryview, engine: Engine, limit: int | None = None
) -> bool | None:
    """Whether `parse_var_body` (with `limit`: `parse_var_head`) would parse the body,
    found by stepping over the length fields alone (no record made, nothing decoded:
    detection only counts misfits after its first example); None for a kind or buffer
    this does not know (parse it)."""
    if not isinstance(body, bytes):
        return None
    try:
        if kind is Kind.EVENT_ADD:
            end = _skip_adds(body, 3 * _VECTOR[engine].itemsize, limit)
        elif kind is Kind.ANIM_VEHICLE_WHEELS:
            end = _skip_wheels(body, limit)
        elif kind is Kind.WALKER_BONES:
            end = _skip_bones(body, 3 * _VECTOR[engine].itemsize, limit)
        else:
            return None
    except struct.error:  # a length field past the body
        return False
    return end <= len(body) if limit is not None else end == len(body)


def _skip_adds(body: bytes, width: int, limit: int | None) -> int:
    pos = 2
    for _ in range(_count(body, limit)):
        (size,) = _U16.unpack_from(body, pos + 9 + 2 * width)
        pos += 11 + 2 * width + size
        (attribute_count,) = _U16.unpack_from(body, pos)
        pos += 2
        for _ in range(attribute_count):
            _type, size = _TYPE_SIZE.unpack_from(body, pos)
            pos += 3 + size
            (size,) = _U16.unpack_from(body, pos)
            pos += 2 + size
    return pos


def _skip_wheels(body: bytes, limit: int | None) -> int:
    pos = 2
    for _ in range(_count(body, limit)):
        _id, count = _ID_COUNT_U32.unpack_from(body, pos)
        pos += 8 + count * WHEEL_ANIM_DTYPE.itemsize
    return pos


def _skip_bones(body: bytes, width: int, limit: int | None) -> int:
    pos = 2
    for _ in range(_count(body, limit)):
        _id, count = _ID_COUNT_U16.unpack_from(body, pos)
        pos += 6
        for _ in range(count):
            (size,) = _U16.unpack_from(body, pos)
            pos += 2 + size + 2 * width
    return pos


__all__ = ["parse_var_fast", "parse_var_head", "var_fits"]
