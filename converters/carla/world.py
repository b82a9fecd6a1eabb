"""The full CARLA world state at any frame, without replaying from the start.

CARLA's replayer rebuilds the world by applying every EventAdd/EventDel/EventParent
from the beginning of the file (spec §8). Here the converter records those events
once, as small columnar *event tables* (`WorldTables`): each spawn with the frame
interval it is alive, each re-parenting, and every record of the kinds CARLA writes
only when something changes (bounding boxes, trigger volumes, traffic-light times,
physics control, scene lights, doors, weather). The state at frame n is then the
frame's own message (poses, controls, lights, traffic-light states: CARLA writes those
every frame for every actor that has them) plus one `searchsorted` per table: the cost
does not grow with the recording's length.

Values keep the file's units: locations and extents in cm, rotations in degrees,
times in seconds, kinematic linear velocity in m/s.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, NamedTuple, TypeVar

import numpy as np
import numpy.typing as npt

from nanorec.errors import FormatError, NanorecError

from .ids import ActorType, Engine, Kind, TrafficLightState
from .message import kind_key, maps_to_var, records, wheel_records
from .records import (
    FIXED_DTYPES,
    WHEEL_ANIM_DTYPE,
    ActorAdd,
    Cursor,
    PhysicsControl,
    VarRecord,
)

T = TypeVar("T")
NEVER = np.iinfo(np.int64).max  # "end" of an actor that is never destroyed

# Kinds CARLA writes only when something changes: their latest value before a frame
# comes from the event tables, keyed by (actor or light) id.
SPARSE_FIXED_KINDS: tuple[Kind, ...] = (
    Kind.BOUNDING_BOX,
    Kind.TRIGGER_VOLUME,
    Kind.TRAFFIC_LIGHT_TIME,
    Kind.SCENE_LIGHT,
    Kind.VEHICLE_DOOR,
    Kind.WEATHER,
)


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
    weather: Mapping[str, float] | None
    events: FrameEvents
    visual_time: float | None
    platform_time: float | None

    @property
    def timestamp_us(self) -> int:
        return round(self.elapsed * 1e6)


class _Sparse:
    """Rows (frame index, record) of one sparse kind, in frame order."""

    def __init__(self, frames: npt.NDArray[np.int64], rows: npt.NDArray[Any]) -> None:
        self.frames = frames
        self.rows = rows

    def upto(self, index: int) -> npt.NDArray[Any]:
        """Every row recorded at or before frame `index`."""
        return self.rows[: int(np.searchsorted(self.frames, index, side="right"))]

    def latest_rows(self, index: int, key: str) -> npt.NDArray[Any]:
        """The last row at or before `index` for each value of `key`."""
        rows = self.upto(index)
        if not len(rows):
            return rows
        # The last occurrence of each id: unique over the reversed rows.
        _, first_reversed = np.unique(rows[key][::-1], return_index=True)
        return rows[len(rows) - 1 - first_reversed]

    def latest_by(self, index: int, key: str) -> dict[int, Any]:
        """`latest_rows` keyed by `key` (python dict of records)."""
        rows = self.latest_rows(index, key)
        return dict(zip(rows[key].tolist(), rows, strict=True))


class WorldTables:
    """The event tables of a recording; built by `WorldTablesBuilder`, stored in a member."""

    def __init__(self, engine: Engine, data: Mapping[str, Any]) -> None:
        self.engine = engine
        try:
            self.spawn_records: list[bytes] = list(data["spawns"])
            self.spawn_start = np.frombuffer(data["spawn_start"], np.int64)
            self.spawn_end = np.frombuffer(data["spawn_end"], np.int64)
            self.spawn_ids = np.frombuffer(data["spawn_ids"], np.uint32)
            self.spawn_first_pose = np.frombuffer(data["spawn_first_pose"], np.int64)
            parents = np.frombuffer(data["parents"], PARENT_DTYPE)
            self.parents = _Sparse(parents["frame"].astype(np.int64), parents)
            self.sparse: dict[Kind, _Sparse] = {}
            for kind in SPARSE_FIXED_KINDS:
                entry = data["sparse"].get(kind.value)
                dtype = FIXED_DTYPES[engine][kind]
                if entry is None:
                    frames, rows = np.empty(0, np.int64), np.empty(0, dtype)
                else:
                    frames = np.frombuffer(entry[0], np.int64)
                    rows = np.frombuffer(entry[1], dtype)
                self.sparse[kind] = _Sparse(frames, rows)
            self.physics_frames = np.frombuffer(data["physics_frames"], np.int64)
            self.physics_ids = np.frombuffer(data["physics_ids"], np.uint32)
            self.physics_maps: list[dict[str, Any]] = list(data["physics"])
        except (KeyError, TypeError, ValueError, IndexError) as error:
            raise FormatError(f"damaged CARLA world tables: {error!r}") from None
        self._descriptions: dict[int, ActorDescription] = {}

    def description(self, row: int) -> ActorDescription:
        """The ActorDescription of spawn row `row` (decoded once, then cached)."""
        found = self._descriptions.get(row)
        if found is None:
            found = ActorDescription.of(self.spawn(row))
            self._descriptions[row] = found
        return found

    def spawn(self, row: int) -> ActorAdd:
        """The EventAdd record of spawn row `row`."""
        try:
            return ActorAdd.parse(Cursor(self.spawn_records[row]), self.engine)
        except NanorecError as error:
            raise FormatError(f"damaged spawn record {row} in the world tables: {error}") from None

    def alive_rows(self, index: int) -> npt.NDArray[np.intp]:
        """Spawn rows alive after frame `index`'s events, in spawn order."""
        return np.flatnonzero((self.spawn_start <= index) & (self.spawn_end > index))

    def parent_of(self, index: int, spawn_rows: npt.NDArray[np.intp]) -> dict[int, int]:
        """actor id -> parent id after frame `index`, for re-parentings within each lifetime."""
        latest = self.parents.latest_by(index, "child")
        result: dict[int, int] = {}
        starts = dict(
            zip(
                self.spawn_ids[spawn_rows].tolist(),
                self.spawn_start[spawn_rows].tolist(),
                strict=True,
            )
        )
        for child, row in latest.items():
            start = starts.get(child)
            if start is not None and int(row["frame"]) >= start:
                result[child] = int(row["parent"])
        return result

    def physics_at(self, index: int) -> dict[int, PhysicsControl]:
        """The latest PhysicsControl per vehicle at or before frame `index`."""
        stop = int(np.searchsorted(self.physics_frames, index, side="right"))
        latest: dict[int, int] = {}
        for row, actor_id in enumerate(self.physics_ids[:stop].tolist()):
            latest[actor_id] = row
        result: dict[int, PhysicsControl] = {}
        for actor_id, row in latest.items():
            (record,) = maps_to_var(Kind.PHYSICS_CONTROL, [self.physics_maps[row]], self.engine)
            assert isinstance(record, PhysicsControl)
            result[actor_id] = record
        return result


PARENT_DTYPE = np.dtype([("frame", "<i8"), ("child", "<u4"), ("parent", "<u4")])


class WorldTablesBuilder:
    """Collects the event tables while frames are converted, in order."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.spawns: list[bytes] = []  # each spawn's EventAdd record, as in the file
        self.spawn_type_ids: list[str] = []
        self.spawn_ids: list[int] = []
        self.spawn_start: list[int] = []
        self.spawn_end: list[int] = []
        self.spawn_first_pose: list[int] = []  # first frame with a Position record
        self.alive: dict[int, int] = {}  # actor id -> spawn row
        self.unposed: dict[int, int] = {}  # alive actor id -> spawn row, no Position yet
        self._position_dtype = FIXED_DTYPES[engine][Kind.POSITION]
        self._last_position_ids = b""
        self.parents: list[tuple[int, int, int]] = []
        self.parent: dict[int, int] = {}  # alive child id -> current parent id
        self.detached: list[int] = []  # ids re-added in the last frame that lost a parent
        self.sparse: dict[Kind, tuple[list[int], list[bytes]]] = {
            kind: ([], []) for kind in SPARSE_FIXED_KINDS
        }
        self.physics_frames: list[int] = []
        self.physics_ids: list[int] = []
        self.physics: list[dict[str, Any]] = []

    def observe(self, index: int, frame: Mapping[str, Any]) -> tuple[list[int], list[int]]:
        """Record frame `index`'s events; returns (ids spawned, ids destroyed) in it."""
        spawned: list[int] = []
        destroyed: list[int] = []
        self.detached = []
        adds = frame.get(kind_key(Kind.EVENT_ADD))
        if adds:
            for add in maps_to_var(Kind.EVENT_ADD, adds, self.engine):
                assert isinstance(add, ActorAdd)
                actor_id = add.id
                previous = self.alive.get(actor_id)
                if previous is not None:  # re-added while alive: the new one replaces it
                    self.spawn_end[previous] = index
                    if self.parent.pop(actor_id, None) is not None:
                        self.detached.append(actor_id)
                self.alive[actor_id] = self.unposed[actor_id] = len(self.spawns)
                self.spawns.append(add.serialize(self.engine))
                self.spawn_type_ids.append(add.blueprint)
                self.spawn_ids.append(actor_id)
                self.spawn_start.append(index)
                self.spawn_end.append(int(NEVER))
                self.spawn_first_pose.append(int(NEVER))
                spawned.append(actor_id)
        dels = frame.get(kind_key(Kind.EVENT_DEL))
        if dels:
            for actor_id in np.frombuffer(dels, "<u4").tolist():
                row = self.alive.pop(actor_id, None)
                self.unposed.pop(actor_id, None)
                self.parent.pop(actor_id, None)
                if row is not None:
                    self.spawn_end[row] = index
                destroyed.append(actor_id)
        positions = frame.get(kind_key(Kind.POSITION))
        if positions and self.unposed:
            ids = np.frombuffer(positions, self._position_dtype)["id"]
            key = ids.tobytes()
            if key != self._last_position_ids or spawned:  # the usual frame: same actors
                self._last_position_ids = key
                for actor_id in set(ids.tolist()) & self.unposed.keys():
                    self.spawn_first_pose[self.unposed.pop(actor_id)] = index
        parents = frame.get(kind_key(Kind.EVENT_PARENT))
        if parents:
            for child, parent in np.frombuffer(parents, "<u4").reshape(-1, 2).tolist():
                self.parents.append((index, child, parent))
                if child in self.alive:  # as CARLA's replayer: a dead child has no parent
                    self.parent[child] = parent
        for kind, (frames, blobs) in self.sparse.items():
            content = frame.get(kind_key(kind))
            if content:
                count = len(content) // FIXED_DTYPES[self.engine][kind].itemsize
                frames.extend([index] * count)
                blobs.append(bytes(content))
        physics = frame.get(kind_key(Kind.PHYSICS_CONTROL))
        if physics:
            for item in physics:
                self.physics_frames.append(index)
                self.physics_ids.append(int(item["id"]))
                self.physics.append(dict(item))
        return spawned, destroyed

    def to_value(self) -> dict[str, Any]:
        """The tables as one map for msgpack (columns as little-endian bytes): the world
        member (`ArchiveWriter.add_meta`), read back by the constructor."""
        parents = np.array(self.parents, dtype=PARENT_DTYPE) if self.parents else None
        return {
            "spawns": self.spawns,
            "spawn_ids": np.asarray(self.spawn_ids, np.uint32).tobytes(),
            "spawn_start": np.asarray(self.spawn_start, np.int64).tobytes(),
            "spawn_end": np.asarray(self.spawn_end, np.int64).tobytes(),
            "spawn_first_pose": np.asarray(self.spawn_first_pose, np.int64).tobytes(),
            "parents": b"" if parents is None else parents.tobytes(),
            "sparse": {
                kind.value: [np.asarray(frames, np.int64).tobytes(), b"".join(blobs)]
                for kind, (frames, blobs) in self.sparse.items()
                if frames
            },
            "physics_frames": np.asarray(self.physics_frames, np.int64).tobytes(),
            "physics_ids": np.asarray(self.physics_ids, np.uint32).tobytes(),
            "physics": self.physics,
        }


def build_world(
    index: int,
    frame: Mapping[str, Any],
    tables: WorldTables,
    *,
    earlier_frame: Callable[[int], Mapping[str, Any]] | None = None,
    lookback: int = 256,
) -> World:
    """The world after frame `index` from its frame map and the event tables.

    Actors are built when first looked up (`World.actors` is a lazy mapping), so
    seeking stays cheap on crowded worlds. `earlier_frame(i)` returns the frame map of
    an earlier frame; it serves only an actor that has no Position in this frame but had
    one before (CARLA writes one every frame for vehicles and walkers, so this is rare),
    looking back at most `lookback` frames.
    """
    engine = tables.engine
    start = records(frame, Kind.FRAME_START, engine)
    if len(start) != 1:
        raise FormatError(f"frame {index} has no FrameStart record")
    frame_id, duration, elapsed = start[0].tolist()
    rows = tables.alive_rows(index)
    tl_states = _by_id(records(frame, Kind.STATE, engine))
    tl_times = tables.sparse[Kind.TRAFFIC_LIGHT_TIME].latest_by(index, "id")
    # Built on access: a town holds hundreds of lights and most seeks never look at them.
    traffic_lights = _LazyMap(
        {
            light_id: (light_id, tl_states.get(light_id), tl_times.get(light_id))
            for light_id in tl_states.keys() | tl_times.keys()
        },
        _light_from_row,
    )
    scene_lights = _LazyMap(
        _columns(tables.sparse[Kind.SCENE_LIGHT].latest_rows(index, "light_id")), _scene_light
    )
    weather_rows = tables.sparse[Kind.WEATHER].upto(index)
    weather = (
        dict(zip(weather_rows.dtype.names or (), weather_rows[-1].tolist(), strict=True))
        if len(weather_rows)
        else None
    )
    actors = _ActorMap(index, frame, tables, rows, traffic_lights, earlier_frame, lookback)
    return World(
        index=index,
        frame_id=int(frame_id),
        elapsed=float(elapsed),
        duration=float(duration),
        actors=actors,
        traffic_lights=traffic_lights,
        scene_lights=scene_lights,
        weather=weather,
        events=_events(frame, engine),
        visual_time=_single(frame, Kind.VISUAL_TIME, engine),
        platform_time=_single(frame, Kind.PLATFORM_TIME, engine),
    )


def _flat(dtype: np.dtype[Any]) -> np.dtype[Any]:
    """`dtype` with every sub-array field spread into scalar fields at the same offsets."""
    names: list[str] = []
    formats: list[Any] = []
    offsets: list[int] = []
    for name in dtype.names or ():
        field_dtype, offset = dtype.fields[name][:2]  # type: ignore[index]
        if field_dtype.subdtype is None:
            names.append(name)
            formats.append(field_dtype)
            offsets.append(offset)
            continue
        base, shape = field_dtype.subdtype
        for i in range(int(np.prod(shape))):
            names.append(f"{name}{i}")
            formats.append(base)
            offsets.append(offset + i * base.itemsize)
    return np.dtype(
        {"names": names, "formats": formats, "offsets": offsets, "itemsize": dtype.itemsize}
    )


_FLAT: dict[np.dtype[Any], np.dtype[Any]] = {}


def _columns(rows: npt.NDArray[Any]) -> dict[int, tuple[Any, ...]]:
    """Records keyed by their leading id field, as flat tuples of python numbers."""
    if not len(rows):
        return {}
    flat = _FLAT.get(rows.dtype)
    if flat is None:
        flat = _FLAT[rows.dtype] = _flat(rows.dtype)
    return {row[0]: row for row in rows.view(flat).tolist()}


class _ActorMap(Mapping[int, Actor]):
    def __repr__(self) -> str:
        shown = ", ".join(f"{i}: {self[i].type_id!r}" for i in list(self)[:8])
        more = f", ... ({len(self)} actors)" if len(self) > 8 else ""
        return "{" + shown + more + "}"

    """The live actors of a frame, each built on first lookup from prepared columns."""

    def __init__(
        self,
        index: int,
        frame: Mapping[str, Any],
        tables: WorldTables,
        rows: npt.NDArray[np.intp],
        traffic_lights: Mapping[int, TrafficLight],
        earlier_frame: Callable[[int], Mapping[str, Any]] | None,
        lookback: int,
    ) -> None:
        self._index = index
        self._frame = frame
        self._tables = tables
        self._rows = dict(zip(tables.spawn_ids[rows].tolist(), rows.tolist(), strict=True))
        self._traffic_lights = traffic_lights
        self._earlier_frame = earlier_frame
        self._lookback = lookback
        self._built: dict[int, Actor] = {}
        self._columns: dict[str, Any] | None = None

    def __len__(self) -> int:
        return len(self._rows)

    def __iter__(self) -> Iterator[int]:
        return iter(self._rows)

    def __contains__(self, key: object) -> bool:
        return key in self._rows

    def __getitem__(self, actor_id: int) -> Actor:
        actor = self._built.get(actor_id)
        if actor is None:
            row = self._rows[actor_id]  # KeyError for an actor not alive here
            actor = self._built[actor_id] = self._build(actor_id, row)
        return actor

    def _prepare(self) -> dict[str, Any]:
        if self._columns is None:
            frame, engine, tables, index = (
                self._frame,
                self._tables.engine,
                self._tables,
                self._index,
            )
            doors: dict[int, dict[int, bool]] = {}
            for door_row in tables.sparse[Kind.VEHICLE_DOOR].upto(index).tolist():
                doors.setdefault(door_row[0], {})[door_row[1]] = bool(door_row[2])
            wheel_data = frame.get(kind_key(Kind.ANIM_VEHICLE_WHEELS)) or b""
            self._columns = {
                "parent": tables.parent_of(index, np.fromiter(self._rows.values(), np.intp)),
                "pos": _columns(records(frame, Kind.POSITION, engine)),
                "veh": _columns(records(frame, Kind.ANIM_VEHICLE, engine)),
                "walker": _columns(records(frame, Kind.ANIM_WALKER, engine)),
                "vlight": _columns(records(frame, Kind.VEHICLE_LIGHT, engine)),
                "kin": _columns(records(frame, Kind.KINEMATICS, engine)),
                "biker": _columns(records(frame, Kind.ANIM_BIKER, engine)),
                "wheels": {
                    vehicle: np.frombuffer(wheel_data, WHEEL_ANIM_DTYPE, count, start)
                    for vehicle, start, count in wheel_records(wheel_data) or ()
                },
                "bbox": _columns(tables.sparse[Kind.BOUNDING_BOX].latest_rows(index, "id")),
                "trigger": _columns(tables.sparse[Kind.TRIGGER_VOLUME].latest_rows(index, "id")),
                "physics": tables.physics_at(index) if len(tables.physics_frames) else {},
                "doors": doors,
            }
        return self._columns

    def _build(self, actor_id: int, row: int) -> Actor:
        c = self._prepare()
        tables, index = self._tables, self._index
        desc = tables.description(row)
        spawn_index = int(tables.spawn_start[row])
        pose = c["pos"].get(actor_id)
        pose_index = index
        if pose is None and tables.spawn_first_pose[row] < index:
            pose, pose_index = self._earlier_pose(actor_id, spawn_index)
        if pose is None:
            location, rotation, pose_index = desc.location, desc.rotation, spawn_index
        else:
            location, rotation = Vector3D(*pose[1:4]), Rotation(pose[5], pose[6], pose[4])
        control = c["veh"].get(actor_id)
        walker = c["walker"].get(actor_id)
        light = c["vlight"].get(actor_id)
        kin = c["kin"].get(actor_id)
        box = c["bbox"].get(actor_id)
        trigger = c["trigger"].get(actor_id)
        biker = c["biker"].get(actor_id)
        wheel = c["wheels"].get(actor_id)
        return Actor(
            id=actor_id,
            type=desc.type,
            type_id=desc.type_id,
            attributes=desc.attributes,
            parent_id=c["parent"].get(actor_id),
            location=location,
            rotation=rotation,
            pose_index=pose_index,
            spawn_index=spawn_index,
            description=desc,
            control=None
            if control is None
            else VehicleControl(control[2], control[1], control[3], bool(control[4]), control[5]),
            walker_speed=None if walker is None else walker[1],
            light_state=None if light is None else light[1],
            velocity=None if kin is None else Vector3D(*kin[1:4]),
            angular_velocity=None if kin is None else Vector3D(*kin[4:7]),
            bounding_box=None if box is None else _box(box),
            trigger_volume=None if trigger is None else _box(trigger),
            physics_control=c["physics"].get(actor_id),
            traffic_light=self._traffic_lights.get(actor_id),
            wheels=wheel,
            biker=None if biker is None else (biker[1], biker[2]),
            doors=c["doors"].get(actor_id, {}),
        )

    def posed(self) -> list[Actor]:
        """Every live actor, in order, with only what drawing it needs: pose (and where it
        comes from), description, parent and bounding box; the other fields are None.
        A tenth of `_build`'s cost (no controls, wheels, physics...): MCAP export draws
        every actor of every frame. An actor whose pose is in an earlier frame (rare)
        and one already looked up come fully built."""
        tables, index, engine = self._tables, self._index, self._tables.engine
        poses = _columns(records(self._frame, Kind.POSITION, engine))
        rows = np.fromiter(self._rows.values(), np.intp, len(self._rows))
        parents = tables.parent_of(index, rows)
        boxes = _columns(tables.sparse[Kind.BOUNDING_BOX].latest_rows(index, "id"))
        starts = tables.spawn_start[rows].tolist()
        earlier = (tables.spawn_first_pose[rows] < index).tolist()
        actors: list[Actor] = []
        for (actor_id, row), spawn_index, before in zip(
            self._rows.items(), starts, earlier, strict=True
        ):
            pose = poses.get(actor_id)
            built = self._built.get(actor_id)
            if built is not None or (pose is None and before):
                actors.append(built or self[actor_id])
                continue
            desc = tables.description(row)
            if pose is None:
                location, rotation, pose_index = desc.location, desc.rotation, spawn_index
            else:
                location = _new(Vector3D, pose[1:4])
                rotation = _new(Rotation, (pose[5], pose[6], pose[4]))
                pose_index = index
            box = boxes.get(actor_id)
            # Positionally, as `Actor(...)` with those fields and the others left to their
            # defaults: keywords cost more than the rest of the loop.
            actors.append(
                _new(
                    Actor,
                    (
                        actor_id,
                        desc.type,
                        desc.type_id,
                        desc.attributes,
                        parents.get(actor_id),
                        location,
                        rotation,
                        pose_index,
                        spawn_index,
                        desc,
                        *_UNDRAWN[:5],
                        None if box is None else _box(box),
                        *_UNDRAWN[5:],
                    ),
                )
            )
        return actors

    def _earlier_pose(self, actor_id: int, spawn_index: int) -> tuple[Any, int]:
        if self._earlier_frame is None:
            return None, self._index
        engine = self._tables.engine
        stop = max(spawn_index, self._index - self._lookback) - 1
        for earlier in range(self._index - 1, stop, -1):
            found = _columns(records(self._earlier_frame(earlier), Kind.POSITION, engine))
            if actor_id in found:
                return found[actor_id], earlier
        return None, self._index


_new = tuple.__new__
#: Actor's defaults after `description`, but for `bounding_box` (the 6th of them).
_UNDRAWN = tuple(
    Actor._field_defaults[name] for name in Actor._fields[10:] if name != "bounding_box"
)
assert Actor._fields[15] == "bounding_box" and len(_UNDRAWN) == len(Actor._fields) - 11


def posed_actors(world: World) -> list[Actor]:
    """`world`'s live actors in order, built only as far as drawing needs (`_ActorMap.posed`:
    pose, description, parent, bounding box)."""
    actors = world.actors
    if isinstance(actors, _ActorMap):
        return actors.posed()
    return [actors[actor_id] for actor_id in actors]


class _LazyMap(Mapping[int, T]):
    """A read-only mapping whose values are built from raw tuples on first lookup."""

    def __init__(self, raw: dict[int, tuple[Any, ...]], build: Callable[[tuple[Any, ...]], T]):
        self._raw = raw
        self._build = build
        self._built: dict[int, T] = {}

    def __len__(self) -> int:
        return len(self._raw)

    def __iter__(self) -> Iterator[int]:
        return iter(self._raw)

    def __contains__(self, key: object) -> bool:
        return key in self._raw

    def __getitem__(self, key: int) -> T:
        value = self._built.get(key)
        if value is None:
            value = self._built[key] = self._build(self._raw[key])
        return value


def _light_from_row(row: tuple[Any, ...]) -> TrafficLight:
    return _traffic_light(row[0], row[1], row[2])


def _scene_light(row: tuple[Any, ...]) -> SceneLight:
    return SceneLight(row[0], row[1], (row[2], row[3], row[4], row[5]), bool(row[6]), row[7])


def _box(row: tuple[Any, ...]) -> BoundingBox:
    return BoundingBox(Vector3D(*row[1:4]), Vector3D(*row[4:7]))


def _by_id(rows: npt.NDArray[Any]) -> dict[int, np.void]:
    if not len(rows):
        return {}
    return dict(zip(rows["id"].tolist(), rows, strict=True))


def _single(frame: Mapping[str, Any], kind: Kind, engine: Engine) -> float | None:
    rows = records(frame, kind, engine)
    return float(rows[0]["time"]) if len(rows) else None


def _traffic_light(light_id: int, state: np.void | None, times: np.void | None) -> TrafficLight:
    code = None if state is None else int(state["state"])
    try:
        light_state = None if code is None else TrafficLightState(code)
    except ValueError:
        light_state = None
    return TrafficLight(
        id=light_id,
        state=light_state,
        is_frozen=None if state is None else bool(state["is_frozen"]),
        elapsed_time=None if state is None else float(state["elapsed_time"]),
        green_time=None if times is None else float(times["green_time"]),
        yellow_time=None if times is None else float(times["yellow_time"]),
        red_time=None if times is None else float(times["red_time"]),
    )


def _events(frame: Mapping[str, Any], engine: Engine) -> FrameEvents:
    content = frame.get(kind_key(Kind.EVENT_ADD))
    adds: list[VarRecord] = [] if content is None else maps_to_var(Kind.EVENT_ADD, content, engine)
    dels = records(frame, Kind.EVENT_DEL, engine)
    parents = records(frame, Kind.EVENT_PARENT, engine)
    hits = records(frame, Kind.COLLISION, engine)
    return FrameEvents(
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
