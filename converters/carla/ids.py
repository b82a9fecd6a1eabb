"""The wire vocabulary of CARLA recorder files: packet kinds, id tables, release families.

CARLA never changed the header version (always 1), yet packet ids 21-24 mean different
things in different releases and UE5 builds widened every `FVector` to float64
(spec §1, §4). So the id table is a *value* — a `Family` — that a reader chooses
(detected from the data or forced by the caller), never a global assumption.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from nanorec.errors import UnknownNameError

MAGIC = b"CARLA_RECORDER"
HEADER_VERSION = 1
# The 2026 line writes `RECORDER_VERSION` 2 (`#define RECORDER_VERSION (2)` beside the weather
# code in both 2026 derivatives we could read, xiao-ma-gua/hutb @66fdd8c, a DReyeVR fork
# that merged it over its own `Info.Version = 1` of @cfceb47, and louiszengCN/CarlaAir
# @440c2e0, a UE5 port). 0.9.10-0.9.15 (`Info.Version = 1` @0055672, spec §2), UE5 0.10.0
# (@0c0c985) and hutb's door-era code before the merge write the literal 1. The official
# 2026 `CarlaRecorder.cpp` itself was not readable: UNCERTAIN, but the only evidence there is.
HEADER_VERSION_2026 = 2
PACKET_HEADER_SIZE = 5  # u8 id + u32 size
FIRST_USER_ID = 100  # ids >= 100 are reserved for user packets (spec §3.1)


class Kind(str, enum.Enum):
    """A packet kind, named after CARLA's recorder class, in snake case."""

    FRAME_START = "frame_start"
    FRAME_END = "frame_end"
    EVENT_ADD = "event_add"
    EVENT_DEL = "event_del"
    EVENT_PARENT = "event_parent"
    COLLISION = "collision"
    POSITION = "position"
    STATE = "state"
    ANIM_VEHICLE = "anim_vehicle"
    ANIM_WALKER = "anim_walker"
    VEHICLE_LIGHT = "vehicle_light"
    SCENE_LIGHT = "scene_light"
    KINEMATICS = "kinematics"
    BOUNDING_BOX = "bounding_box"
    PLATFORM_TIME = "platform_time"
    PHYSICS_CONTROL = "physics_control"
    TRAFFIC_LIGHT_TIME = "traffic_light_time"
    TRIGGER_VOLUME = "trigger_volume"
    FRAME_COUNTER = "frame_counter"
    WALKER_BONES = "walker_bones"
    VISUAL_TIME = "visual_time"
    ANIM_VEHICLE_WHEELS = "anim_vehicle_wheels"
    ANIM_BIKER = "anim_biker"
    VEHICLE_DOOR = "vehicle_door"
    WEATHER = "weather"

    @property
    def bit(self) -> int:
        """A stable bit for this kind in per-frame bit sets (index flags)."""
        return 1 << _KIND_ORDER.index(self)


_KIND_ORDER: tuple[Kind, ...] = tuple(Kind)


class Shape(enum.Enum):
    """How a packet body is laid out (spec §5)."""

    EMPTY = "empty"  # no body (FrameEnd)
    SINGLE = "single"  # one fixed-size record, no count
    FIXED = "fixed"  # u16 count, then count fixed-size records
    VAR = "var"  # u16 count, then count variable-length records


SHAPES: Mapping[Kind, Shape] = MappingProxyType(
    {
        Kind.FRAME_START: Shape.SINGLE,
        Kind.FRAME_END: Shape.EMPTY,
        Kind.EVENT_ADD: Shape.VAR,
        Kind.EVENT_DEL: Shape.FIXED,
        Kind.EVENT_PARENT: Shape.FIXED,
        Kind.COLLISION: Shape.FIXED,
        Kind.POSITION: Shape.FIXED,
        Kind.STATE: Shape.FIXED,
        Kind.ANIM_VEHICLE: Shape.FIXED,
        Kind.ANIM_WALKER: Shape.FIXED,
        Kind.VEHICLE_LIGHT: Shape.FIXED,
        Kind.SCENE_LIGHT: Shape.FIXED,
        Kind.KINEMATICS: Shape.FIXED,
        Kind.BOUNDING_BOX: Shape.FIXED,
        Kind.PLATFORM_TIME: Shape.SINGLE,
        Kind.PHYSICS_CONTROL: Shape.VAR,
        Kind.TRAFFIC_LIGHT_TIME: Shape.FIXED,
        Kind.TRIGGER_VOLUME: Shape.FIXED,
        Kind.FRAME_COUNTER: Shape.SINGLE,
        Kind.WALKER_BONES: Shape.VAR,
        Kind.VISUAL_TIME: Shape.SINGLE,
        Kind.ANIM_VEHICLE_WHEELS: Shape.VAR,
        Kind.ANIM_BIKER: Shape.FIXED,
        Kind.VEHICLE_DOOR: Shape.FIXED,
        Kind.WEATHER: Shape.FIXED,
    }
)

# Packets written only with `start_recorder(name, additional_data=True)`.
ADDITIONAL_DATA: frozenset[Kind] = frozenset(
    {
        Kind.KINEMATICS,
        Kind.BOUNDING_BOX,
        Kind.TRIGGER_VOLUME,
        Kind.PLATFORM_TIME,
        Kind.PHYSICS_CONTROL,
        Kind.TRAFFIC_LIGHT_TIME,
        Kind.WALKER_BONES,
    }
)


class Engine(str, enum.Enum):
    """Unreal Engine line; decides the width of every `FVector` (spec §1)."""

    UE4 = "ue4"  # 3 x float32
    UE5 = "ue5"  # 3 x float64


@dataclass(frozen=True)
class OrderItem:
    """One slot of a family's per-frame write order (spec §3.2)."""

    kind: Kind
    always: bool  # written every frame even when empty; else only when it has records


@dataclass(frozen=True, repr=False)
class Family:
    """A release family: its id table, vector width and per-frame packet order."""

    def __repr__(self) -> str:
        return f"<Family {self.name}: {self.description}>"

    name: str
    description: str
    engine: Engine
    ids: Mapping[int, Kind]
    order: tuple[OrderItem, ...]
    physics_wheel_size: int | None  # UE4 wheel record bytes (36 or 48); None = UE5 opaque
    header_version: int = HEADER_VERSION  # the u16 its recorder writes at offset 0
    kinds: Mapping[Kind, int] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "ids", MappingProxyType(dict(self.ids)))
        object.__setattr__(
            self, "kinds", MappingProxyType({kind: pid for pid, kind in self.ids.items()})
        )

    @property
    def vector_size(self) -> int:
        """Bytes of one `FVector` in this family's files."""
        return 12 if self.engine is Engine.UE4 else 24

    def kind_of(self, packet_id: int) -> Kind | None:
        """The kind of `packet_id` in this family, or None when it does not know the id."""
        return self.ids.get(packet_id)

    def id_of(self, kind: Kind) -> int:
        """The packet id this family writes for `kind`; raises KeyError if it has none."""
        return self.kinds[kind]


def _ids(**extra: int) -> dict[int, Kind]:
    base = {
        0: Kind.FRAME_START,
        1: Kind.FRAME_END,
        2: Kind.EVENT_ADD,
        3: Kind.EVENT_DEL,
        4: Kind.EVENT_PARENT,
        5: Kind.COLLISION,
        6: Kind.POSITION,
        7: Kind.STATE,
        8: Kind.ANIM_VEHICLE,
        9: Kind.ANIM_WALKER,
    }
    base.update({pid: Kind(name) for name, pid in extra.items()})
    return base


_IDS_0910 = _ids(
    vehicle_light=10,
    scene_light=11,
    kinematics=12,
    bounding_box=13,
    platform_time=14,
    physics_control=15,
    traffic_light_time=16,
    trigger_volume=17,
)
_IDS_0914 = {**_IDS_0910, **_ids(frame_counter=18, walker_bones=19, visual_time=20)}
_IDS_0915 = {**_IDS_0914, 21: Kind.ANIM_VEHICLE_WHEELS, 22: Kind.ANIM_BIKER}
_IDS_NIGHTLY = {
    **_IDS_0914,
    21: Kind.VEHICLE_DOOR,
    22: Kind.ANIM_VEHICLE_WHEELS,
    23: Kind.ANIM_BIKER,
}
_IDS_0916 = {**_IDS_0915, 23: Kind.VEHICLE_DOOR}
_IDS_2026 = {**_IDS_0916, 24: Kind.WEATHER}


def _order(*items: str) -> tuple[OrderItem, ...]:
    """Order items from names; a trailing '?' marks 'only when it has records'."""
    return tuple(OrderItem(Kind(item.rstrip("?")), not item.endswith("?")) for item in items)


_HEAD = ("frame_start",)
_EVENTS = ("event_add", "event_del", "event_parent", "collision")
_SNAPSHOT_096 = ("position", "state", "anim_vehicle", "anim_walker")
_SNAPSHOT_0910 = (*_SNAPSHOT_096, "vehicle_light", "scene_light?")
_ADDITIONAL = (
    "kinematics?",
    "bounding_box",
    "trigger_volume?",
    "platform_time",
    "physics_control?",
    "traffic_light_time?",
)
_TAIL = ("frame_end",)
# Releases with VehicleDoor write it after Collision (spec §3.2); 2026 builds add Weather.
_DOOR_ERA = (*_HEAD, "visual_time", *_EVENTS, "vehicle_door", *_SNAPSHOT_0910)
_DOOR_ERA_TAIL = (*_ADDITIONAL, "walker_bones", *_TAIL)
_ORDER_DOOR = _order(*_DOOR_ERA, "anim_vehicle_wheels", "anim_biker", *_DOOR_ERA_TAIL)
_ORDER_2026 = _order(*_DOOR_ERA, "anim_vehicle_wheels", "anim_biker", "weather?", *_DOOR_ERA_TAIL)

FAMILIES: Mapping[str, Family] = MappingProxyType(
    {
        family.name: family
        for family in (
            Family(
                "0.9.4-0.9.9",
                "CARLA 0.9.4 to 0.9.9 (ids 0-9; animations from 0.9.6)",
                Engine.UE4,
                _ids(),
                _order(*_HEAD, *_EVENTS, *_SNAPSHOT_096, *_TAIL),
                None,
            ),
            Family(
                "0.9.10-0.9.13",
                "CARLA 0.9.10 to 0.9.13 (lights; additional data 12-17)",
                Engine.UE4,
                _IDS_0910,
                _order(*_HEAD, *_EVENTS, *_SNAPSHOT_0910, *_ADDITIONAL, *_TAIL),
                48,
            ),
            Family(
                "0.9.14",
                "CARLA 0.9.14 (VisualTime 20, WalkerBones 19)",
                Engine.UE4,
                _IDS_0914,
                _order(
                    *_HEAD,
                    "visual_time",
                    *_EVENTS,
                    *_SNAPSHOT_0910,
                    *_ADDITIONAL,
                    "walker_bones",
                    *_TAIL,
                ),
                48,
            ),
            Family(
                "0.9.15",
                "CARLA 0.9.15 (21 AnimVehicleWheels, 22 AnimBiker)",
                Engine.UE4,
                _IDS_0915,
                _order(
                    *_HEAD,
                    "visual_time",
                    *_EVENTS,
                    *_SNAPSHOT_0910,
                    "anim_vehicle_wheels",
                    "anim_biker",
                    *_ADDITIONAL,
                    "walker_bones",
                    *_TAIL,
                ),
                48,
            ),
            Family(
                "nightly-2023",
                "ue4-dev nightlies Nov 2023 - Mar 2025 (21 VehicleDoor, 22 wheels, 23 biker)",
                Engine.UE4,
                _IDS_NIGHTLY,
                _ORDER_DOOR,
                48,
            ),
            Family(
                "0.9.16",
                "CARLA 0.9.16 (21 wheels, 22 biker, 23 VehicleDoor)",
                Engine.UE4,
                _IDS_0916,
                _ORDER_DOOR,
                48,
            ),
            Family(
                "ue4-dev-2026",
                "ue4-dev after Feb 2026 (0.9.16 ids plus 24 Weather)",
                Engine.UE4,
                _IDS_2026,
                _ORDER_2026,
                48,
                HEADER_VERSION_2026,
            ),
            Family(
                "ue5-0.10",
                "UE5 CARLA 0.10.x (float64 vectors; 21 door, 22 wheels, 23 biker)",
                Engine.UE5,
                _IDS_NIGHTLY,
                _ORDER_DOOR,
                None,
            ),
            Family(
                "ue5-dev-2026",
                "ue5-dev after May 2026 (float64 vectors; ue4-dev 2026 ids) - UNCERTAIN",
                Engine.UE5,
                _IDS_2026,
                _ORDER_2026,
                None,
                HEADER_VERSION_2026,
            ),
        )
    }
)


def family(name: str) -> Family:
    """The family called `name` (see `FAMILIES`); raises KeyError listing the known names."""
    try:
        return FAMILIES[name]
    except KeyError:
        known = ", ".join(FAMILIES)
        raise UnknownNameError(f"unknown CARLA release family {name!r}; known: {known}") from None


class ActorType(enum.IntEnum):
    """The actor type byte of EventAdd (spec §5.2, 0.9.12+ numbering)."""

    OTHER = 0
    VEHICLE = 1
    WALKER = 2
    TRAFFIC_LIGHT = 3
    TRAFFIC_SIGN = 4
    SENSOR = 5
    INVALID = 6


class AttributeType(enum.IntEnum):
    """The attribute type byte of EventAdd attributes (spec §5.2)."""

    BOOL = 0
    INT = 1
    FLOAT = 2
    STRING = 3
    RGB_COLOR = 4
    VECTOR = 5  # UE5 only, UNCERTAIN


class TrafficLightState(enum.IntEnum):
    """The state byte of the traffic-light State packet (spec §5.7)."""

    RED = 0
    YELLOW = 1
    GREEN = 2
    OFF = 3
    UNKNOWN = 4

    def __str__(self) -> str:
        # Python >= 3.11 prints an IntEnum as its number; `print(light.state)` should say
        # which state (format(), JSON and int() still give the number).
        return f"{type(self).__name__}.{self.name}"


VEHICLE_LIGHT_BITS: Mapping[str, int] = MappingProxyType(
    {
        "Position": 0x1,
        "LowBeam": 0x2,
        "HighBeam": 0x4,
        "Brake": 0x8,
        "RightBlinker": 0x10,
        "LeftBlinker": 0x20,
        "Reverse": 0x40,
        "Fog": 0x80,
        "Interior": 0x100,
        "Special1": 0x200,
        "Special2": 0x400,
    }
)
