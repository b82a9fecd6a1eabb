"""Record layouts of every CARLA packet kind, parse and serialize side by side.

Fixed-size records are numpy structured dtypes (1-byte packed, little-endian, field
names as in CARLA's recorder structs in snake case), so a whole packet — or a whole
file's worth of packets — decodes as one array over the buffer. Variable-length records
(EventAdd, PhysicsControl, WalkerBones, AnimVehicleWheels) are small frozen dataclasses;
their float fields stay numpy float arrays so that every bit, NaN payloads included,
survives a round trip.

Units are the file's: cm for locations and extents, degrees for rotations given as
(roll, pitch, yaw), seconds for times, m/s for kinematic linear velocity (spec §1).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from nanorec.errors import FormatError, TruncatedError, UnknownNameError

from .ids import Engine, Kind

U8 = struct.Struct("<B")
U16 = struct.Struct("<H")
U32 = struct.Struct("<I")
I64 = struct.Struct("<q")
PACKET_HEADER = struct.Struct("<BI")

FloatArray = npt.NDArray[np.floating[Any]]


def _vec(engine: Engine) -> tuple[str, tuple[int]]:
    return ("<f4" if engine is Engine.UE4 else "<f8", (3,))


def _fixed_dtypes(engine: Engine) -> dict[Kind, np.dtype[np.void]]:
    vec = _vec(engine)
    f4 = "<f4"
    table: dict[Kind, list[tuple[str, npt.DTypeLike]]] = {
        Kind.FRAME_START: [("id", "<u8"), ("duration", "<f8"), ("elapsed", "<f8")],
        Kind.EVENT_DEL: [("id", "<u4")],
        Kind.EVENT_PARENT: [("id", "<u4"), ("parent_id", "<u4")],
        Kind.COLLISION: [
            ("id", "<u4"),
            ("actor1_id", "<u4"),
            ("actor2_id", "<u4"),
            ("is_actor1_hero", "u1"),
            ("is_actor2_hero", "u1"),
        ],
        Kind.POSITION: [("id", "<u4"), ("location", vec), ("rotation", vec)],
        Kind.STATE: [("id", "<u4"), ("is_frozen", "u1"), ("elapsed_time", f4), ("state", "u1")],
        Kind.ANIM_VEHICLE: [
            ("id", "<u4"),
            ("steering", f4),
            ("throttle", f4),
            ("brake", f4),
            ("handbrake", "u1"),
            ("gear", "<i4"),
        ],
        Kind.ANIM_WALKER: [("id", "<u4"), ("speed", f4)],
        Kind.VEHICLE_LIGHT: [("id", "<u4"), ("state", "<u4")],
        Kind.SCENE_LIGHT: [
            ("light_id", "<i4"),
            ("intensity", f4),
            ("color", (f4, (4,))),
            ("is_on", "u1"),
            ("type", "u1"),
        ],
        Kind.KINEMATICS: [("id", "<u4"), ("linear_velocity", vec), ("angular_velocity", vec)],
        Kind.BOUNDING_BOX: [("id", "<u4"), ("origin", vec), ("extent", vec)],
        Kind.PLATFORM_TIME: [("time", "<f8")],
        Kind.TRAFFIC_LIGHT_TIME: [
            ("id", "<u4"),
            ("green_time", f4),
            ("yellow_time", f4),
            ("red_time", f4),
        ],
        Kind.TRIGGER_VOLUME: [("id", "<u4"), ("origin", vec), ("extent", vec)],
        Kind.FRAME_COUNTER: [("frame", "<u8")],
        Kind.VISUAL_TIME: [("time", "<f8")],
        Kind.ANIM_BIKER: [("id", "<u4"), ("forward_speed", f4), ("engine_rotation", f4)],
        Kind.VEHICLE_DOOR: [("id", "<u4"), ("door", "u1"), ("is_open", "u1")],
        Kind.WEATHER: [
            (name, f4)
            for name in (
                "cloudiness",
                "precipitation",
                "precipitation_deposits",
                "wind_intensity",
                "sun_azimuth_angle",
                "sun_altitude_angle",
                "fog_density",
                "fog_distance",
                "fog_falloff",
                "wetness",
                "scattering_intensity",
                "mie_scattering_scale",
                "rayleigh_scattering_scale",
                "dust_storm",
            )
        ],
    }
    return {kind: np.dtype(fields) for kind, fields in table.items()}


FIXED_DTYPES: dict[Engine, dict[Kind, np.dtype[np.void]]] = {
    engine: _fixed_dtypes(engine) for engine in Engine
}


def fixed_dtype(kind: Kind, engine: Engine) -> np.dtype[np.void]:
    """The record dtype of a SINGLE or FIXED kind; raises KeyError for other kinds."""
    return FIXED_DTYPES[engine][kind]


# Element dtypes of the variable-length records.
WHEEL_ANIM_DTYPE = np.dtype(
    [("location", "u1"), ("steering_angle", "<f4"), ("tire_rotation", "<f4")]
)
CURVE_DTYPE = np.dtype([("x", "<f4"), ("y", "<f4")])
GEAR_DTYPE = np.dtype([("ratio", "<f4"), ("down_ratio", "<f4"), ("up_ratio", "<f4")])
_WHEEL_COMMON = [
    ("tire_friction", "<f4"),
    ("damping_rate", "<f4"),
    ("max_steer_angle", "<f4"),
    ("radius", "<f4"),
    ("max_brake_torque", "<f4"),
    ("max_handbrake_torque", "<f4"),
]
PHYSICS_WHEEL_DTYPES: dict[int, np.dtype[np.void]] = {
    36: np.dtype([*_WHEEL_COMMON, ("position", "<f4", (3,))]),
    48: np.dtype(
        [
            *_WHEEL_COMMON,
            ("lat_stiff_max_load", "<f4"),
            ("lat_stiff_value", "<f4"),
            ("long_stiff_value", "<f4"),
            ("position", "<f4", (3,)),
        ]
    ),
}
PHYSICS_UE4_DTYPE = np.dtype(
    [
        ("id", "<u4"),
        ("max_rpm", "<f4"),
        ("moi", "<f4"),
        ("damping_rate_full_throttle", "<f4"),
        ("damping_rate_zero_throttle_clutch_engaged", "<f4"),
        ("damping_rate_zero_throttle_clutch_disengaged", "<f4"),
        ("use_gear_autobox", "u1"),
        ("clutch_strength", "<f4"),
        ("final_ratio", "<f4"),
        ("mass", "<f4"),
        ("drag_coefficient", "<f4"),
        ("center_of_mass", "<f4", (3,)),
    ]
)
PHYSICS_UE5_DTYPE = np.dtype(
    [
        ("id", "<u4"),
        ("max_torque", "<f4"),
        ("max_rpm", "<f4"),
        ("idle_rpm", "<f4"),
        ("brake_effect", "<f4"),
        ("rev_up_moi", "<f4"),
        ("rev_down_rate", "<f4"),
        ("differential_type", "u1"),
        ("front_rear_split", "<f4"),
        ("use_automatic_gears", "u1"),
        ("gear_change_time", "<f4"),
        ("final_ratio", "<f4"),
        ("change_up_rpm", "<f4"),
        ("change_down_rpm", "<f4"),
        ("transmission_efficiency", "<f4"),
        ("mass", "<f4"),
        ("drag_coefficient", "<f4"),
        ("center_of_mass", "<f4", (3,)),
        ("chassis_width", "<f4"),
        ("chassis_height", "<f4"),
        ("downforce_coefficient", "<f4"),
        ("drag_area", "<f4"),
        ("inertia_tensor_scale", "<f4", (3,)),
        ("sleep_threshold", "<f4"),
        ("sleep_slope_limit", "<f4"),
        ("use_sweep_wheel_collision", "u1"),
    ]
)
assert PHYSICS_UE4_DTYPE.itemsize == 53 and PHYSICS_UE5_DTYPE.itemsize == 111
UE5_WHEEL_SIZE_GUESS = 208  # spec §5.15: computed, UNCERTAIN; real size derived from the data


class Cursor:
    """The one thing that counts bytes: reads little-endian values from a buffer.

    `base` is the absolute file offset of `data[0]`, so errors name file offsets.
    """

    __slots__ = ("base", "data", "pos")

    def __init__(self, data: bytes | memoryview, base: int = 0, pos: int = 0) -> None:
        self.data = memoryview(data).cast("B") if not isinstance(data, bytes) else data
        self.base = base
        self.pos = pos

    @property
    def remaining(self) -> int:
        return len(self.data) - self.pos

    def need(self, size: int, what: str) -> None:
        """Raise TruncatedError unless `size` more bytes are available."""
        if size > len(self.data) - self.pos:
            raise TruncatedError(
                f"{what} needs {size} bytes, {len(self.data) - self.pos} left",
                offset=self.base + self.pos,
                expected=size,
                actual=len(self.data) - self.pos,
            )

    def take(self, size: int, what: str) -> memoryview:
        self.need(size, what)
        start = self.pos
        self.pos += size
        return memoryview(self.data)[start : self.pos]

    def unpack(self, fmt: struct.Struct, what: str) -> tuple[Any, ...]:
        self.need(fmt.size, what)
        values = fmt.unpack_from(self.data, self.pos)
        self.pos += fmt.size
        return values

    def u8(self, what: str) -> int:
        return int(self.unpack(U8, what)[0])

    def u16(self, what: str) -> int:
        return int(self.unpack(U16, what)[0])

    def u32(self, what: str) -> int:
        return int(self.unpack(U32, what)[0])

    def string(self, what: str) -> str:
        """An FString: u16 byte count then UTF-8 (kept exact with surrogateescape)."""
        size = self.u16(what)
        return bytes(self.take(size, what)).decode("utf-8", "surrogateescape")

    def array(self, dtype: np.dtype[Any], count: int, what: str) -> npt.NDArray[Any]:
        raw = self.take(dtype.itemsize * count, what)
        return np.frombuffer(raw, dtype=dtype, count=count)


def pack_string(text: str) -> bytes:
    """Serialize an FString (u16 UTF-8 byte count + bytes)."""
    raw = text.encode("utf-8", "surrogateescape")
    if len(raw) > 0xFFFF:
        raise FormatError(f"string of {len(raw)} bytes does not fit a u16 length")
    return U16.pack(len(raw)) + raw


def _floats(values: npt.ArrayLike, dtype: str, shape: tuple[int, ...]) -> FloatArray:
    array = np.asarray(values, dtype=dtype)
    if array.shape != shape:
        array = array.reshape(shape)
    return array


@dataclass(frozen=True, eq=False)
class Attribute:
    """One blueprint attribute of a spawned actor: type byte, id and value as text."""

    type: int
    id: str
    value: str


@dataclass(frozen=True, eq=False)
class ActorAdd:
    """An EventAdd record: an actor appearing, with its blueprint and attributes.

    `location` (cm) and `rotation` (roll, pitch, yaw in degrees) are float arrays of the
    file's vector width.
    """

    id: int
    type: int
    location: FloatArray
    rotation: FloatArray
    uid: int
    blueprint: str
    attributes: tuple[Attribute, ...]

    @classmethod
    def parse(cls, cur: Cursor, engine: Engine) -> ActorAdd:
        vec = np.dtype(_vec(engine)[0])
        actor_id = cur.u32("EventAdd actor id")
        actor_type = cur.u8("EventAdd actor type")
        location = cur.array(vec, 3, "EventAdd location")
        rotation = cur.array(vec, 3, "EventAdd rotation")
        uid = cur.u32("EventAdd blueprint uid")
        blueprint = cur.string("EventAdd blueprint id")
        count = cur.u16("EventAdd attribute count")
        attributes = []
        for _ in range(count):
            attr_type = cur.u8("attribute type")
            attr_id = cur.string("attribute id")
            attr_value = cur.string("attribute value")
            attributes.append(Attribute(attr_type, attr_id, attr_value))
        return cls(actor_id, actor_type, location, rotation, uid, blueprint, tuple(attributes))

    def serialize(self, engine: Engine) -> bytes:
        vec = _vec(engine)[0]
        parts = [
            struct.pack("<IB", self.id, self.type),
            _floats(self.location, vec, (3,)).tobytes(),
            _floats(self.rotation, vec, (3,)).tobytes(),
            U32.pack(self.uid),
            pack_string(self.blueprint),
            U16.pack(len(self.attributes)),
        ]
        for attr in self.attributes:
            parts += [U8.pack(attr.type), pack_string(attr.id), pack_string(attr.value)]
        return b"".join(parts)


@dataclass(frozen=True, eq=False)
class PhysicsControl:
    """A PhysicsControl record (UE4 or UE5 layout, spec §5.15).

    `head` is the fixed part as a structured record (`PHYSICS_UE4_DTYPE` or
    `PHYSICS_UE5_DTYPE`); `arrays` maps each trailing array's name to its elements, in
    file order. UE5 wheels are opaque raw bytes, one row per wheel.
    """

    head: np.void
    arrays: tuple[tuple[str, npt.NDArray[Any]], ...]

    @property
    def id(self) -> int:
        return int(self.head["id"])

    def array(self, name: str) -> npt.NDArray[Any]:
        for key, values in self.arrays:
            if key == name:
                return values
        names = ", ".join(key for key, _ in self.arrays)
        raise UnknownNameError(f"PhysicsControl has no array {name!r} (it has: {names})")

    @classmethod
    def parse(
        cls, cur: Cursor, engine: Engine, wheel_size: int | None, last: bool
    ) -> PhysicsControl:
        """Parse one record; `wheel_size` is the UE4 wheel bytes (36/48) or UE5 element size.

        With `last` and a UE5 file, the wheel element size may be derived from what remains.
        """
        if engine is Engine.UE4:
            head = cur.array(PHYSICS_UE4_DTYPE, 1, "PhysicsControl")[0]
            layout: list[tuple[str, np.dtype[Any] | None]] = [
                ("torque_curve", CURVE_DTYPE),
                ("forward_gears", GEAR_DTYPE),
                ("steering_curve", CURVE_DTYPE),
                ("wheels", PHYSICS_WHEEL_DTYPES[wheel_size or 48]),
            ]
        else:
            head = cur.array(PHYSICS_UE5_DTYPE, 1, "PhysicsControl")[0]
            layout = [
                ("torque_curve", CURVE_DTYPE),
                ("forward_gear_ratios", np.dtype("<f4")),
                ("reverse_gear_ratios", np.dtype("<f4")),
                ("steering_curve", CURVE_DTYPE),
                ("wheels", None),
            ]
        arrays: list[tuple[str, npt.NDArray[Any]]] = []
        for name, dtype in layout:
            count = cur.u32(f"PhysicsControl {name} count")
            if dtype is None:  # UE5 opaque wheels
                size = wheel_size
                if size is None:
                    if count == 0:
                        size = UE5_WHEEL_SIZE_GUESS
                    elif last and cur.remaining % count == 0:
                        size = cur.remaining // count
                    else:
                        size = UE5_WHEEL_SIZE_GUESS
                raw = cur.array(np.dtype("u1"), count * size, "PhysicsControl wheels")
                arrays.append((name, raw.reshape(count, size)))
            else:
                arrays.append((name, cur.array(dtype, count, f"PhysicsControl {name}")))
        return cls(head, tuple(arrays))

    def serialize(self, engine: Engine) -> bytes:
        parts = [self.head.tobytes()]
        for _name, values in self.arrays:
            rows = values.shape[0] if values.ndim else 0
            parts += [U32.pack(rows), values.tobytes()]
        return b"".join(parts)

    @property
    def wheel_size(self) -> int:
        wheels = self.array("wheels")
        return int(wheels.dtype.itemsize if wheels.ndim == 1 else wheels.shape[1])


@dataclass(frozen=True, eq=False)
class WalkerBones:
    """A WalkerBones record: one walker's bone names with relative locations and rotations."""

    id: int
    names: tuple[str, ...]
    locations: FloatArray  # (n, 3), cm, relative
    rotations: FloatArray  # (n, 3), degrees (roll, pitch, yaw), relative

    @classmethod
    def parse(cls, cur: Cursor, engine: Engine) -> WalkerBones:
        vec = np.dtype(_vec(engine)[0])
        walker_id = cur.u32("WalkerBones walker id")
        count = cur.u16("WalkerBones bone count")
        names = []
        locations = np.empty((count, 3), dtype=vec)
        rotations = np.empty((count, 3), dtype=vec)
        for i in range(count):
            names.append(cur.string("bone name"))
            locations[i] = cur.array(vec, 3, "bone location")
            rotations[i] = cur.array(vec, 3, "bone rotation")
        return cls(walker_id, tuple(names), locations, rotations)

    def serialize(self, engine: Engine) -> bytes:
        vec = _vec(engine)[0]
        count = len(self.names)
        locations = _floats(self.locations, vec, (count, 3))
        rotations = _floats(self.rotations, vec, (count, 3))
        parts = [struct.pack("<IH", self.id, count)]
        for i, name in enumerate(self.names):
            parts += [pack_string(name), locations[i].tobytes(), rotations[i].tobytes()]
        return b"".join(parts)


@dataclass(frozen=True, eq=False)
class VehicleWheels:
    """An AnimVehicleWheels record: per-wheel location code, steering and tire rotation."""

    id: int
    wheels: npt.NDArray[np.void]  # WHEEL_ANIM_DTYPE

    @classmethod
    def parse(cls, cur: Cursor, engine: Engine) -> VehicleWheels:
        vehicle_id = cur.u32("AnimVehicleWheels vehicle id")
        count = cur.u32("AnimVehicleWheels wheel count")
        return cls(vehicle_id, cur.array(WHEEL_ANIM_DTYPE, count, "AnimVehicleWheels wheels"))

    def serialize(self, engine: Engine) -> bytes:
        return struct.pack("<II", self.id, len(self.wheels)) + self.wheels.tobytes()


VarRecord = ActorAdd | PhysicsControl | WalkerBones | VehicleWheels

_SIMPLE_VAR_PARSERS: dict[Kind, Callable[[Cursor, Engine], VarRecord]] = {
    Kind.EVENT_ADD: ActorAdd.parse,
    Kind.WALKER_BONES: WalkerBones.parse,
    Kind.ANIM_VEHICLE_WHEELS: VehicleWheels.parse,
}


def parse_var_body(
    kind: Kind, body: bytes | memoryview, engine: Engine, *, base: int = 0
) -> list[VarRecord]:
    """Parse a VAR packet body (u16 count + records) that must end exactly at its size.

    `base` is the body's absolute file offset, used in error messages. Raises
    `TruncatedError` when a record runs past the body and `FormatError` when bytes are
    left over. PhysicsControl wheel records are sized by trying 48 then 36 bytes (UE4,
    spec §10.5) and by the bytes that remain (UE5).
    """
    if kind is Kind.PHYSICS_CONTROL:
        if engine is Engine.UE4:
            candidates: Sequence[int | None] = (48, 36)
        else:
            candidates = (UE5_WHEEL_SIZE_GUESS, None)
        error: Exception | None = None
        for wheel_size in candidates:
            try:
                return _parse_records(body, base, _physics_parser(engine, wheel_size))
            except (TruncatedError, FormatError) as exc:
                error = exc
        assert error is not None
        raise error
    simple = _SIMPLE_VAR_PARSERS[kind]
    return _parse_records(body, base, lambda cur, last: simple(cur, engine))


def _physics_parser(engine: Engine, wheel_size: int | None) -> Callable[[Cursor, bool], VarRecord]:
    def parse_one(cur: Cursor, last: bool) -> VarRecord:
        return PhysicsControl.parse(cur, engine, wheel_size, last)

    return parse_one


def _parse_records(
    body: bytes | memoryview, base: int, parse_one: Callable[[Cursor, bool], VarRecord]
) -> list[VarRecord]:
    cur = Cursor(body, base)
    count = cur.u16("record count")
    records = [parse_one(cur, i == count - 1) for i in range(count)]
    if cur.remaining:
        raise FormatError(
            f"{cur.remaining} bytes left over after {count} records",
            offset=base + cur.pos,
            expected=cur.pos,
            actual=len(cur.data),
        )
    return records


def serialize_var_body(records: Sequence[VarRecord], engine: Engine) -> bytes:
    """Serialize a VAR packet body: u16 count then each record."""
    return U16.pack(len(records)) + b"".join(record.serialize(engine) for record in records)
