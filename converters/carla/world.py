"""The CARLA world state at a frame, as values: actors, lights, events, the world itself.

What `CarlaRecording.frame(n)` returns (built by `world_build.py` from the frame's message
and the event tables of `world_tables.py`). Names follow CARLA's Python API where it has
one (`type_id`, `parent_id`, `carla.Rotation`'s pitch, yaw, roll order); every value is
immutable, so a `World` may be kept and shared.

Values keep the file's units: locations and extents in cm, rotations in degrees,
times in seconds, kinematic linear velocity in m/s.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from .ids import ActorType, Engine, Kind, TrafficLightState
from .message import kind_key, maps_to_var, records
from .records import ActorAdd, PhysicsControl, VarRecord
from .weather import Weather
from .world_json import world_dict

__all__ = [
    "Actor",
    "ActorDescription",
    "BoundingBox",
    "Collision",
    "FrameEvents",
    "Location",
    "Rotation",
    "SceneLight",
    "TrafficLight",
    "Vector3D",
    "VehicleControl",
    "Weather",
    "World",
]


class Vector3D(NamedTuple):
    """A 3D vector: a location or extent in cm, or a velocity (m/s or deg/s)."""

    x: float
    y: float
    z: float

    @classmethod
    def of(cls, values: npt.ArrayLike) -> Vector3D:
        x, y, z = (float(v) for v in np.asarray(values).reshape(3))
        return cls(x, y, z)


Location = Vector3D


class Rotation(NamedTuple):
    """Pitch, yaw and roll in degrees (CARLA's `carla.Rotation` order of arguments)."""

    pitch: float
    yaw: float
    roll: float

    @classmethod
    def of(cls, values: npt.ArrayLike) -> Rotation:
        """From a recorded (roll, pitch, yaw) vector (spec §1)."""
        roll, pitch, yaw = (float(v) for v in np.asarray(values).reshape(3))
        return cls(pitch, yaw, roll)


class BoundingBox(NamedTuple):
    """A box as recorded: `location` is the origin (cm), `extent` the half-size (cm)."""

    location: Vector3D
    extent: Vector3D


class VehicleControl(NamedTuple):
    """The vehicle animation of a frame, with CARLA's `carla.VehicleControl` names."""

    throttle: float
    steer: float
    brake: float
    hand_brake: bool
    gear: int


@dataclass(frozen=True)
class TrafficLight:
    """A traffic light's recorded state; times in seconds (None when not recorded)."""

    id: int
    state: TrafficLightState | None
    is_frozen: bool | None
    elapsed_time: float | None
    green_time: float | None = None
    yellow_time: float | None = None
    red_time: float | None = None

    @classmethod
    def of(cls, light_id: int, state: np.void | None, times: np.void | None) -> TrafficLight:
        """From the light's State record of the frame and its latest TrafficLightTime."""
        code = None if state is None else int(state["state"])
        try:
            light_state = None if code is None else TrafficLightState(code)
        except ValueError:
            light_state = None
        return cls(
            id=light_id,
            state=light_state,
            is_frozen=None if state is None else bool(state["is_frozen"]),
            elapsed_time=None if state is None else float(state["elapsed_time"]),
            green_time=None if times is None else float(times["green_time"]),
            yellow_time=None if times is None else float(times["yellow_time"]),
            red_time=None if times is None else float(times["red_time"]),
        )


@dataclass(frozen=True)
class SceneLight:
    """A scene (street, building...) light: intensity, RGBA colour, on/off, group."""

    id: int
    intensity: float
    color: tuple[float, float, float, float]
    is_on: bool
    type: int


@dataclass(frozen=True)
class Collision:
    """A collision record: `actor2_id` is 0xFFFFFFFF (0 before 0.9.13) for the scenery."""

    id: int
    actor1_id: int
    actor2_id: int
    is_actor1_hero: bool
    is_actor2_hero: bool


@dataclass(frozen=True)
class ActorDescription:
    """What EventAdd says of an actor: blueprint, attributes and spawn transform."""

    id: int
    type: ActorType | int
    type_id: str
    uid: int
    attributes: Mapping[str, str]
    location: Vector3D
    rotation: Rotation

    @classmethod
    def of(cls, add: ActorAdd) -> ActorDescription:
        try:
            actor_type: ActorType | int = ActorType(add.type)
        except ValueError:
            actor_type = add.type
        return cls(
            add.id,
            actor_type,
            add.blueprint,
            add.uid,
            {attr.id: attr.value for attr in add.attributes},
            Vector3D.of(add.location),
            Rotation.of(add.rotation),
        )


class Actor(NamedTuple):
    """One live actor at a frame, with CARLA Python API names where they exist.

    Immutable (a named tuple, which keeps building hundreds of them per frame cheap).

    `location`/`rotation` are the latest recorded pose (cm, degrees): the frame's
    Position record, else the latest earlier one, else the spawn transform (actors CARLA
    never positions: traffic lights, signs, sensors). `pose_index` says which frame
    the pose comes from. The other fields are the latest recorded values, None when the
    recording has none (most need `additional_data=True` at record time).
    """

    id: int
    type: ActorType | int
    type_id: str
    attributes: Mapping[str, str]
    parent_id: int | None
    location: Vector3D
    rotation: Rotation
    pose_index: int
    spawn_index: int
    description: ActorDescription
    control: VehicleControl | None = None
    walker_speed: float | None = None
    light_state: int | None = None
    velocity: Vector3D | None = None
    angular_velocity: Vector3D | None = None
    bounding_box: BoundingBox | None = None
    trigger_volume: BoundingBox | None = None
    physics_control: PhysicsControl | None = None
    traffic_light: TrafficLight | None = None
    wheels: npt.NDArray[np.void] | None = None
    biker: tuple[float, float] | None = None  # forward speed, engine rotation ratio
    doors: Mapping[int, bool] = MappingProxyType({})


@dataclass(frozen=True)
class FrameEvents:
    """What happened during the frame itself."""

    spawned: tuple[ActorDescription, ...]
    destroyed: tuple[int, ...]
    parented: tuple[tuple[int, int], ...]  # (child id, parent id)
    collisions: tuple[Collision, ...]

    @classmethod
    def of(cls, frame: Mapping[str, Any], engine: Engine) -> FrameEvents:
        """From a frame map (`message.py`): its EventAdd, EventDel, EventParent, Collision."""
        content = frame.get(kind_key(Kind.EVENT_ADD))
        adds: list[VarRecord] = (
            [] if content is None else maps_to_var(Kind.EVENT_ADD, content, engine)
        )
        dels = records(frame, Kind.EVENT_DEL, engine)
        parents = records(frame, Kind.EVENT_PARENT, engine)
        hits = records(frame, Kind.COLLISION, engine)
        return cls(
            spawned=tuple(ActorDescription.of(add) for add in adds if isinstance(add, ActorAdd)),
            destroyed=tuple(dels["id"].tolist()),
            parented=tuple(zip(parents["id"].tolist(), parents["parent_id"].tolist(), strict=True)),
            collisions=tuple(
                Collision(
                    int(h["id"]),
                    int(h["actor1_id"]),
                    int(h["actor2_id"]),
                    bool(h["is_actor1_hero"]),
                    bool(h["is_actor2_hero"]),
                )
                for h in hits
            ),
        )


@dataclass(frozen=True, repr=False)
class World:
    """The full world state after frame `index` (0-based archive position).

    `frame_id` is CARLA's own 1-based frame number; `elapsed` and `duration` are the
    FrameStart values in seconds (the last frame's duration is -1, as CARLA writes it).
    """

    def __repr__(self) -> str:
        return (
            f"<World frame {self.frame_id} (index {self.index}) at {self.elapsed:.3f} s: "
            f"{len(self.actors)} actors, {len(self.traffic_lights)} traffic lights>"
        )

    index: int
    frame_id: int
    elapsed: float
    duration: float
    actors: Mapping[int, Actor]
    traffic_lights: Mapping[int, TrafficLight]
    scene_lights: Mapping[int, SceneLight]
    weather: Weather | None  # the last Weather record at or before this frame (2026 files)
    events: FrameEvents
    visual_time: float | None
    platform_time: float | None

    @property
    def timestamp_us(self) -> int:
        return round(self.elapsed * 1e6)

    def to_json(self) -> dict[str, Any]:
        """The frame as `nanorec play` streams it (`world_json.world_dict`): what JSON
        writers and the view's inspector show instead of this object's repr."""
        return world_dict(self)
