"""One CARLA frame <-> one archive message, losslessly.

A frame (FrameStart up to the next FrameStart) becomes the NanoVer-style message
`{"frame": {...}}` whose map holds:

- `frame.index`: the frame's 0-based position in the archive (NanoVer's key);
- `order`: the frame's packet-id sequence as bytes where it first occurs, else its number
  in the archive's table of sequences (`orders` in the CARLA member, in order of first
  occurrence; frames repeat a handful of them), so the table can be rebuilt from the
  messages alone (after a killed writer);
- a short key per known kind that has records (`KIND_KEYS`: `pos` for Position, `tl`
  for traffic-light State...): AnimVehicleWheels records (written every frame) as their
  packed bytes, the other fixed-size records as the
  raw little-endian bytes of their structured dtype (described once, per kind, in the
  archive's self-description), variable-length records as lists of maps;
- `raw`: `[[position, body], ...]` for packets kept verbatim (ids the family does
  not know, bodies that do not fit their layout, a second packet of the same kind).

Packets with no records are not stored: `order` says they were there and the
export writes their count of 0 back. So the message is no larger than the frame and the
native bytes come back exactly.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from nanorec.errors import FormatError
from nanorec.untyped import Payload

from .ids import SHAPES, Engine, Family, Kind, Shape
from .records import (
    CURVE_DTYPE,
    FIXED_DTYPES,
    GEAR_DTYPE,
    PHYSICS_UE4_DTYPE,
    PHYSICS_UE5_DTYPE,
    PHYSICS_WHEEL_DTYPES,
    WHEEL_ANIM_DTYPE,
    ActorAdd,
    Attribute,
    PhysicsControl,
    VarRecord,
    VehicleWheels,
    WalkerBones,
    serialize_var_body,
)

PACKET_HEADER = struct.Struct("<BI")
FRAME_START = struct.Struct("<Qdd")
EMPTY_BODY = b"\x00\x00"  # a u16 count of 0
ORDER_KEY = "order"
RAW_KEY = "raw"
INDEX_KEY = "frame.index"
_WHEELS_HEAD = struct.Struct("<II")  # vehicle id, wheel count


# Short frame-map keys: a CARLA frame can be as small as ~600 bytes and every key is
# repeated in every message, so long names would cost more than the archive budget
# (1.2x the source). The self-description member maps each key to its kind and dtype.
KIND_KEYS: dict[Kind, str] = {
    Kind.FRAME_START: "start",
    Kind.FRAME_END: "end",
    Kind.EVENT_ADD: "add",
    Kind.EVENT_DEL: "del",
    Kind.EVENT_PARENT: "parent",
    Kind.COLLISION: "hit",
    Kind.POSITION: "pos",
    Kind.STATE: "tl",
    Kind.ANIM_VEHICLE: "veh",
    Kind.ANIM_WALKER: "walker",
    Kind.VEHICLE_LIGHT: "vlight",
    Kind.SCENE_LIGHT: "slight",
    Kind.KINEMATICS: "kin",
    Kind.BOUNDING_BOX: "bbox",
    Kind.PLATFORM_TIME: "ptime",
    Kind.PHYSICS_CONTROL: "physics",
    Kind.TRAFFIC_LIGHT_TIME: "tltime",
    Kind.TRIGGER_VOLUME: "trigger",
    Kind.FRAME_COUNTER: "counter",
    Kind.WALKER_BONES: "bones",
    Kind.VISUAL_TIME: "vtime",
    Kind.ANIM_VEHICLE_WHEELS: "wheels",
    Kind.ANIM_BIKER: "biker",
    Kind.VEHICLE_DOOR: "door",
    Kind.WEATHER: "weather",
}
KEY_KINDS: dict[str, Kind] = {key: kind for kind, key in KIND_KEYS.items()}


def kind_key(kind: Kind) -> str:
    """The frame-map key holding `kind`'s records."""
    return KIND_KEYS[kind]


def msgpack_text(value: str) -> str | bytes:
    """A string for msgpack: bytes when it is not valid UTF-8 (kept exact either way)."""
    if value.isascii():  # nearly every name: no encoding to try
        return value
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return value.encode("utf-8", "surrogateescape")
    return value


def from_text(value: str | bytes) -> str:
    return value.decode("utf-8", "surrogateescape") if isinstance(value, bytes) else value


def var_to_maps(kind: Kind, records: Sequence[VarRecord]) -> Payload:
    """Variable-length records as msgpack-ready content (float vectors as raw bytes).

    EventAdd becomes one columnar map for the whole packet (`id`, `type`, `location`,
    `rotation`, `uid` as typed byte arrays; `type_id` and `attributes` as lists): frame 1
    spawns every actor of the world, and per-actor maps would repeat each key hundreds
    of times. The other kinds become one map per record.
    """
    if kind is Kind.EVENT_ADD:
        adds = [record for record in records if isinstance(record, ActorAdd)]
        return {
            "id": np.array([add.id for add in adds], "<u4").tobytes(),
            "type": bytes(add.type for add in adds),
            "location": b"".join(add.location.tobytes() for add in adds),
            "rotation": b"".join(add.rotation.tobytes() for add in adds),
            "uid": np.array([add.uid for add in adds], "<u4").tobytes(),
            "type_id": [msgpack_text(add.blueprint) for add in adds],
            "attributes": [
                [
                    [attr.type, msgpack_text(attr.id), msgpack_text(attr.value)]
                    for attr in add.attributes
                ]
                for add in adds
            ],
        }
    maps: list[dict[str, Any]] = []
    for record in records:
        if isinstance(record, PhysicsControl):
            entry: dict[str, Any] = {"id": record.id, "head": record.head.tobytes()}
            for name, values in record.arrays:
                entry[name] = values.tobytes()
            entry["wheel_size"] = record.wheel_size
            maps.append(entry)
        elif isinstance(record, WalkerBones):
            maps.append(
                {
                    "id": record.id,
                    "names": [msgpack_text(name) for name in record.names],
                    "locations": record.locations.tobytes(),
                    "rotations": record.rotations.tobytes(),
                }
            )
        elif isinstance(record, VehicleWheels):
            maps.append({"id": record.id, "wheels": record.wheels.tobytes()})
    return maps


def _vector_dtype(engine: Engine) -> np.dtype[Any]:
    return np.dtype("<f4" if engine is Engine.UE4 else "<f8")


def maps_to_var(kind: Kind, content: Payload, engine: Engine) -> list[VarRecord]:
    """The inverse of `var_to_maps`; raises FormatError on malformed content."""
    vec = _vector_dtype(engine)
    records: list[VarRecord] = []
    try:
        if kind is Kind.EVENT_ADD:
            ids = np.frombuffer(content["id"], "<u4").tolist()
            count = len(ids)
            locations = np.frombuffer(content["location"], vec).reshape(count, 3)
            rotations = np.frombuffer(content["rotation"], vec).reshape(count, 3)
            uids = np.frombuffer(content["uid"], "<u4").tolist()
            types = bytes(content["type"])
            names, attributes = content["type_id"], content["attributes"]
            if not len(types) == len(uids) == len(names) == len(attributes) == count:
                raise FormatError("EventAdd columns of different lengths")
            return [
                ActorAdd(
                    ids[i],
                    types[i],
                    locations[i],
                    rotations[i],
                    uids[i],
                    from_text(names[i]),
                    tuple(
                        Attribute(int(t), from_text(k), from_text(v)) for t, k, v in attributes[i]
                    ),
                )
                for i in range(count)
            ]
        for item in content:
            if kind is Kind.PHYSICS_CONTROL:
                records.append(_physics_from_map(item, engine))
            elif kind is Kind.WALKER_BONES:
                names = tuple(from_text(name) for name in item["names"])
                records.append(
                    WalkerBones(
                        int(item["id"]),
                        names,
                        np.frombuffer(item["locations"], vec).reshape(len(names), 3),
                        np.frombuffer(item["rotations"], vec).reshape(len(names), 3),
                    )
                )
            elif kind is Kind.ANIM_VEHICLE_WHEELS:
                records.append(
                    VehicleWheels(int(item["id"]), np.frombuffer(item["wheels"], WHEEL_ANIM_DTYPE))
                )
            else:
                raise FormatError(f"{kind.value} has no variable-length records")
    except (KeyError, TypeError, ValueError, IndexError) as error:
        raise FormatError(f"malformed {kind.value} record in archive: {error!r}") from None
    return records


def _physics_from_map(item: Mapping[str, Any], engine: Engine) -> PhysicsControl:
    wheel_size = int(item["wheel_size"])
    if engine is Engine.UE4:
        head = np.frombuffer(item["head"], PHYSICS_UE4_DTYPE)[0]
        layout: list[tuple[str, np.dtype[Any]]] = [
            ("torque_curve", CURVE_DTYPE),
            ("forward_gears", GEAR_DTYPE),
            ("steering_curve", CURVE_DTYPE),
            ("wheels", PHYSICS_WHEEL_DTYPES[wheel_size]),
        ]
    else:
        head = np.frombuffer(item["head"], PHYSICS_UE5_DTYPE)[0]
        layout = [
            ("torque_curve", CURVE_DTYPE),
            ("forward_gear_ratios", np.dtype("<f4")),
            ("reverse_gear_ratios", np.dtype("<f4")),
            ("steering_curve", CURVE_DTYPE),
        ]
    arrays = [(name, np.frombuffer(item[name], dtype)) for name, dtype in layout]
    if engine is Engine.UE5:
        raw = np.frombuffer(item["wheels"], np.uint8)
        arrays.append(("wheels", raw.reshape(-1, wheel_size) if wheel_size else raw[:0]))
    return PhysicsControl(head, tuple(arrays))


def wheel_records(data: bytes | memoryview) -> list[tuple[int, int, int]] | None:
    """Split AnimVehicleWheels records (no count field): `(vehicle id, start, wheels)` each,
    with `start` the offset of its first wheel; None unless they fill `data` exactly."""
    found: list[tuple[int, int, int]] = []
    at = 0
    size = len(data)
    while at < size:
        if size - at < 8:
            return None
        vehicle, wheels = _WHEELS_HEAD.unpack_from(data, at)
        end = at + 8 + WHEEL_ANIM_DTYPE.itemsize * wheels
        if end > size:
            return None
        found.append((vehicle, at + 8, wheels))
        at = end
    return found


DAMAGE = (TypeError, KeyError, ValueError, IndexError, struct.error, OverflowError)


def checked_frame(message: Mapping[str, Any], number: int, engine: Engine) -> dict[str, Any]:
    """The frame map of archive message `number`, its values checked against their kind's
    shape (raw bytes a whole number of records long, a packet order of bytes or a table
    number, raw packets as [position, bytes] pairs), so that damage (or another writer's
    mistake) is a `FormatError` naming the message instead of a wrong value or a crash
    further on. Unknown keys are left alone (a newer nanorec may add some)."""
    frame = message.get("frame")
    if not isinstance(frame, dict):
        raise FormatError(f"archive message {number} holds no CARLA frame")
    for key, value in frame.items():
        kind = KEY_KINDS.get(key)
        if key == ORDER_KEY:
            ok = isinstance(value, bytes) or (type(value) is int and value >= 0)
        elif key == RAW_KEY:
            ok = isinstance(value, list) and all(
                isinstance(item, list | tuple)
                and len(item) == 2
                and type(item[0]) is int
                and isinstance(item[1], bytes)
                for item in value
            )
        elif kind is None:
            continue
        elif SHAPES[kind] in (Shape.SINGLE, Shape.FIXED):
            size = FIXED_DTYPES[engine][kind].itemsize
            ok = isinstance(value, bytes) and len(value) % size == 0 and len(value) < size << 16
            if ok and SHAPES[kind] is Shape.SINGLE:
                ok = len(value) == size
        elif kind is Kind.ANIM_VEHICLE_WHEELS:
            ok = isinstance(value, bytes)
        else:
            ok = isinstance(value, list | dict)  # variable records: maps, or columns
        if not ok:
            raise FormatError(
                f"archive message {number}: damaged {key!r} entry ({type(value).__name__})"
            )
    return frame


def iter_message_packets(
    frame: Mapping[str, Any], family: Family, orders: Sequence[bytes] = ()
) -> Iterator[tuple[int, bytes]]:
    """The `(packet id, body)` pairs of a frame map, in file order (export side).

    `orders` is the archive's table of packet sequences that `order` numbers refer to."""
    engine = family.engine
    order = frame.get(ORDER_KEY)
    if isinstance(order, int) and 0 <= order < len(orders):
        order = orders[order]
    if not isinstance(order, bytes):
        raise FormatError(f"frame message has a bad `order` packet list: {order!r}")
    raw = {int(position): bytes(body) for position, body in frame.get(RAW_KEY, ())}
    seen: set[Kind] = set()
    for position, packet_id in enumerate(order):
        if position in raw:
            yield packet_id, raw[position]
            continue
        kind = family.ids.get(packet_id)
        if kind is None or kind in seen:
            raise FormatError(f"packet {position} (id {packet_id}) of the frame has no content")
        seen.add(kind)
        content = frame.get(kind_key(kind))
        shape = SHAPES[kind]
        if shape is Shape.EMPTY:
            yield packet_id, b""
        elif content is None:
            if shape is Shape.SINGLE:
                raise FormatError(f"frame message lacks its {kind.value} record")
            yield packet_id, EMPTY_BODY
        elif shape is Shape.SINGLE:
            yield packet_id, bytes(content)
        elif shape is Shape.FIXED:
            count = len(content) // FIXED_DTYPES[engine][kind].itemsize
            yield packet_id, struct.pack("<H", count) + bytes(content)
        elif kind is Kind.ANIM_VEHICLE_WHEELS:
            found = wheel_records(content)
            if found is None:
                raise FormatError("malformed anim_vehicle_wheels records in archive")
            yield packet_id, struct.pack("<H", len(found)) + bytes(content)
        else:
            try:
                body = serialize_var_body(maps_to_var(kind, content, engine), engine)
            except DAMAGE as error:
                raise FormatError(f"damaged {kind.value} records ({error})") from None
            yield packet_id, body


def records(frame: Mapping[str, Any], kind: Kind, engine: Engine) -> np.ndarray[Any, Any]:
    """The fixed-size records of `kind` in a frame map (empty array when none)."""
    content = frame.get(kind_key(kind))
    dtype = FIXED_DTYPES[engine][kind]
    if content is None:
        return np.empty(0, dtype)
    return np.frombuffer(content, dtype)
