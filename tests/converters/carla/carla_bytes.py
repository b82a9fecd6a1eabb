"""Hand-built CARLA recorder bytes for the codec tests.

Every layout is written here with `struct`, straight from the spec's tables (§2, §3, §5),
independently of `nanorec.converters.carla.records`, so that the codec is checked against the
spec and not against itself. `rich_frame` builds one frame of a family, in its write
order, with records in every packet kind the family has.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass

from nanorec.converters.carla.ids import ADDITIONAL_DATA, Engine, Family, Kind

Vec = tuple[float, float, float]


def header(map_name: str = "Town01", date: int = 1_700_000_000, version: int = 1) -> bytes:
    name = map_name.encode()
    return struct.pack("<HH14sqH", version, 14, b"CARLA_RECORDER", date, len(name)) + name


def packet(pid: int, body: bytes) -> bytes:
    return struct.pack("<BI", pid, len(body)) + body


def counted(records: Sequence[bytes]) -> bytes:
    return struct.pack("<H", len(records)) + b"".join(records)


def string(text: str | bytes) -> bytes:
    raw = text.encode() if isinstance(text, str) else text
    return struct.pack("<H", len(raw)) + raw


def vec(engine: Engine, value: Vec) -> bytes:
    return struct.pack("<3f" if engine is Engine.UE4 else "<3d", *value)


def frame_start(frame_id: int, duration: float, elapsed: float) -> bytes:
    return struct.pack("<Qdd", frame_id, duration, elapsed)


def actor_add(
    engine: Engine,
    actor_id: int,
    actor_type: int,
    location: Vec,
    rotation: Vec,
    uid: int,
    blueprint: str | bytes,
    attributes: Sequence[tuple[int, str | bytes, str | bytes]] = (),
) -> bytes:
    parts = [
        struct.pack("<IB", actor_id, actor_type),
        vec(engine, location),
        vec(engine, rotation),
        struct.pack("<I", uid),
        string(blueprint),
        struct.pack("<H", len(attributes)),
    ]
    for attr_type, attr_id, value in attributes:
        parts += [struct.pack("<B", attr_type), string(attr_id), string(value)]
    return b"".join(parts)


def event_del(actor_id: int) -> bytes:
    return struct.pack("<I", actor_id)


def event_parent(child: int, parent: int) -> bytes:
    return struct.pack("<II", child, parent)


def collision(cid: int, actor1: int, actor2: int, hero1: int = 0, hero2: int = 0) -> bytes:
    return struct.pack("<IIIBB", cid, actor1, actor2, hero1, hero2)


def position(engine: Engine, actor_id: int, location: Vec, rotation: Vec) -> bytes:
    return struct.pack("<I", actor_id) + vec(engine, location) + vec(engine, rotation)


def state(actor_id: int, frozen: int, elapsed: float, light: int) -> bytes:
    return struct.pack("<IBfB", actor_id, frozen, elapsed, light)


def anim_vehicle(
    actor_id: int, steer: float, throttle: float, brake: float, handbrake: int, gear: int
) -> bytes:
    return struct.pack("<IfffBi", actor_id, steer, throttle, brake, handbrake, gear)


def anim_walker(actor_id: int, speed: float) -> bytes:
    return struct.pack("<If", actor_id, speed)


def vehicle_light(actor_id: int, flags: int) -> bytes:
    return struct.pack("<II", actor_id, flags)


def scene_light(
    light_id: int, intensity: float, rgba: tuple[float, float, float, float], on: int, kind: int
) -> bytes:
    return struct.pack("<if4fBB", light_id, intensity, *rgba, on, kind)


def kinematics(engine: Engine, actor_id: int, linear: Vec, angular: Vec) -> bytes:
    return struct.pack("<I", actor_id) + vec(engine, linear) + vec(engine, angular)


def bounding_box(engine: Engine, actor_id: int, origin: Vec, extent: Vec) -> bytes:
    return struct.pack("<I", actor_id) + vec(engine, origin) + vec(engine, extent)


def physics_ue4(actor_id: int, wheel_size: int, wheels: int = 4, base: float = 1.0) -> bytes:
    """A UE4 PhysicsControl record (53-byte head, four u32-counted arrays)."""
    head = struct.pack(
        "<I5fB4f3f", actor_id, 5000.0, 1.0, 0.15, 2.0, 0.35, 1, 10.0, 4.0, 1500.0, 0.3, 0, 0, 0
    )
    torque = struct.pack("<I", 2) + struct.pack("<4f", 0.0, 400.0, 5000.0, 500.0)
    gears = struct.pack("<I", 1) + struct.pack("<3f", 3.5, 0.5, 0.65)
    steering = struct.pack("<I", 1) + struct.pack("<2f", 0.0, 1.0)
    floats = wheel_size // 4
    wheel = b"".join(struct.pack(f"<{floats}f", *[base + i] * floats) for i in range(wheels))
    return head + torque + gears + steering + struct.pack("<I", wheels) + wheel


def physics_ue5(actor_id: int, wheels: int = 4, wheel_bytes: int = 208) -> bytes:
    """A UE5 PhysicsControl record (111-byte head, five arrays, opaque wheel dumps)."""
    head = struct.pack(
        "<I6fBfB7f3f4f3f2fB",
        actor_id,
        *[1.5] * 6,
        2,
        0.5,
        1,
        *[0.25] * 7,
        *[0.0] * 3,
        *[2.0] * 4,
        *[1.0] * 3,
        0.1,
        0.2,
        1,
    )
    assert len(head) == 111
    torque = struct.pack("<I2f", 1, 0.0, 300.0)
    forward = struct.pack("<I3f", 3, 4.0, 2.0, 1.0)
    reverse = struct.pack("<If", 1, -4.0)
    steering = struct.pack("<I2f", 1, 0.0, 1.0)
    # Raw memory with pointers in it: any bytes.
    wheel = bytes(range(256))[:wheel_bytes]
    return head + torque + forward + reverse + steering + struct.pack("<I", wheels) + wheel * wheels


def traffic_light_time(actor_id: int, green: float, yellow: float, red: float) -> bytes:
    return struct.pack("<Ifff", actor_id, green, yellow, red)


def walker_bones(engine: Engine, walker_id: int, bones: Sequence[tuple[str, Vec, Vec]]) -> bytes:
    parts = [struct.pack("<IH", walker_id, len(bones))]
    for name, location, rotation in bones:
        parts += [string(name), vec(engine, location), vec(engine, rotation)]
    return b"".join(parts)


def vehicle_wheels(vehicle_id: int, wheels: Sequence[tuple[int, float, float]]) -> bytes:
    parts = [struct.pack("<II", vehicle_id, len(wheels))]
    parts += [
        struct.pack("<Bff", location, steer, rotation) for location, steer, rotation in wheels
    ]
    return b"".join(parts)


def anim_biker(actor_id: int, forward_speed: float, engine_rotation: float) -> bytes:
    return struct.pack("<Iff", actor_id, forward_speed, engine_rotation)


def vehicle_door(actor_id: int, door: int, is_open: int) -> bytes:
    return struct.pack("<IBB", actor_id, door, is_open)


def weather(*values: float) -> bytes:
    return struct.pack("<14f", *(values or [float(i) for i in range(14)]))


def single(fmt: str, value: float | int) -> bytes:
    return struct.pack(fmt, value)


@dataclass
class Frame:
    """One frame's packets: (packet id, body) in file order."""

    packets: list[tuple[int, bytes]]

    def bytes(self) -> bytes:
        return b"".join(packet(pid, body) for pid, body in self.packets)


def rich_body(kind: Kind, family: Family, seed: int = 0) -> bytes:
    """A body with records for `kind`, as `family` writes it."""
    e = family.engine
    s = float(seed)
    if kind is Kind.FRAME_START:
        return frame_start(seed + 1, 0.05, 0.05 * seed)
    if kind is Kind.FRAME_END:
        return b""
    if kind is Kind.EVENT_ADD:
        return counted(
            [
                actor_add(e, 1, 0, (0, 0, 0), (0, 0, 0), 0, "spectator"),
                actor_add(
                    e,
                    24 + seed,
                    1,
                    (100.5 + s, -20.25, 0.5),
                    (0.0, 0.0, 90.0),
                    17,
                    "vehicle.tesla.model3",
                    [(3, "role_name", "hero"), (4, "color", "255,0,0"), (0, "sticky", "true")],
                ),
            ]
        )
    if kind is Kind.EVENT_DEL:
        return counted([event_del(30), event_del(31)])
    if kind is Kind.EVENT_PARENT:
        return counted([event_parent(40, 24)])
    if kind is Kind.COLLISION:
        return counted([collision(7, 24, 0xFFFFFFFF, 1, 0), collision(9, 24, 25)])
    if kind is Kind.POSITION:
        return counted(
            [
                position(e, 24, (1.0 + s, 2.0, 3.0), (0.0, -1.5, 179.0)),
                position(e, 25, (4, 5, 6), (0, 0, 0)),
            ]
        )
    if kind is Kind.STATE:
        return counted([state(50, 0, 1.25, 2), state(51, 1, 0.0, 0)])
    if kind is Kind.ANIM_VEHICLE:
        return counted([anim_vehicle(24, 0.1, 0.5, 0.0, 0, 3)])
    if kind is Kind.ANIM_WALKER:
        return counted([anim_walker(60, 1.4)])
    if kind is Kind.VEHICLE_LIGHT:
        return counted([vehicle_light(24, 0x1 | 0x8), vehicle_light(25, 0)])
    if kind is Kind.SCENE_LIGHT:
        return counted([scene_light(3, 100.0, (1.0, 0.5, 0.25, 1.0), 1, 2)])
    if kind is Kind.KINEMATICS:
        return counted([kinematics(e, 24, (1.5, 0, 0), (0, 0, 0.25))])
    if kind is Kind.BOUNDING_BOX:
        return counted([bounding_box(e, 24, (0, 0, 70), (230, 100, 75))])
    if kind is Kind.TRIGGER_VOLUME:
        return counted([bounding_box(e, 50, (10, 20, 0), (300, 300, 200))])
    if kind is Kind.PLATFORM_TIME:
        return single("<d", 0.123456)
    if kind is Kind.PHYSICS_CONTROL:
        if e is Engine.UE5:
            return counted([physics_ue5(24)])
        return counted([physics_ue4(24, family.physics_wheel_size or 48)])
    if kind is Kind.TRAFFIC_LIGHT_TIME:
        return counted([traffic_light_time(50, 10.0, 3.0, 2.0)])
    if kind is Kind.FRAME_COUNTER:
        return single("<Q", 1234)
    if kind is Kind.WALKER_BONES:
        return counted(
            [
                walker_bones(
                    e,
                    60,
                    [("crl_root", (0, 0, 1), (0, 0, 0)), ("crl_hips__C", (1, 2, 3), (4, 5, 6))],
                )
            ]
        )
    if kind is Kind.VISUAL_TIME:
        return single("<d", 102.5 + s)
    if kind is Kind.ANIM_VEHICLE_WHEELS:
        if e is Engine.UE5:
            return counted([])  # UE5 never fills it (spec §5.21)
        return counted(
            [
                vehicle_wheels(24, [(0, 10.0, 1.0), (1, 10.0, 1.0), (2, 0.0, 1.0), (3, 0.0, 1.0)]),
                vehicle_wheels(26, [(0, 5.0, 2.0), (1, 0.0, 2.0)]),
            ]
        )
    if kind is Kind.ANIM_BIKER:
        return counted([anim_biker(26, 3.5, 0.25)])
    if kind is Kind.VEHICLE_DOOR:
        return counted([vehicle_door(24, 0, 1), vehicle_door(24, 6, 0)])
    if kind is Kind.WEATHER:
        return counted([weather()])
    raise AssertionError(kind)


def rich_frame(family: Family, seed: int = 0, *, additional: bool = True) -> Frame:
    """A frame in `family`'s write order with records in every packet kind it writes."""
    packets = []
    for item in family.order:
        if item.kind in ADDITIONAL_DATA and not additional:
            continue
        packets.append((family.id_of(item.kind), rich_body(item.kind, family, seed)))
    return Frame(packets)


def recording(family: Family, frames: int = 2, *, additional: bool = True) -> bytes:
    """A header and `frames` rich frames of `family`."""
    return header() + b"".join(
        rich_frame(family, seed, additional=additional).bytes() for seed in range(frames)
    )
