"""The full CARLA world state at any frame, without replaying from the start.

The state at frame n is the frame's own message (poses, controls, lights, traffic-light
states: CARLA writes those every frame for every actor that has them) plus one
`searchsorted` per event table (`world_tables.py`): the cost does not grow with the
recording's length. Actors are built when first looked up, from the frame's records
turned into flat tuples once per frame; `posed_actors` builds only what drawing needs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeAlias, TypeVar

import numpy as np
import numpy.typing as npt

from nanorec.errors import FormatError
from nanorec.untyped import Payload

from .ids import Engine, Kind
from .message import kind_key, records, wheel_records
from .records import WHEEL_ANIM_DTYPE
from .weather import Weather
from .world import (
    Actor,
    BoundingBox,
    FrameEvents,
    Rotation,
    SceneLight,
    TrafficLight,
    Vector3D,
    VehicleControl,
    World,
)
from .world_tables import WorldTables

__all__ = ["build_world", "posed_actors"]

T = TypeVar("T")
#: A record's fields as numpy's `tolist()` gives them (decoded values).
RawRow: TypeAlias = tuple[Payload, ...]


def build_world(
    index: int,
    frame: Mapping[str, Any],
    tables: WorldTables,
    *,
    earlier_frame: Callable[[int], Mapping[str, Payload]] | None = None,
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
    weather = Weather.from_record(weather_rows[-1]) if len(weather_rows) else None
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
        events=FrameEvents.of(frame, engine),
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
        earlier_frame: Callable[[int], Mapping[str, Payload]] | None,
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

    def __init__(self, raw: dict[int, RawRow], build: Callable[[RawRow], T]):
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


def _light_from_row(row: RawRow) -> TrafficLight:
    return TrafficLight.of(row[0], row[1], row[2])


def _scene_light(row: RawRow) -> SceneLight:
    return SceneLight(row[0], row[1], (row[2], row[3], row[4], row[5]), bool(row[6]), row[7])


def _box(row: RawRow) -> BoundingBox:
    return BoundingBox(Vector3D(*row[1:4]), Vector3D(*row[4:7]))


def _by_id(rows: npt.NDArray[Any]) -> dict[int, np.void]:
    if not len(rows):
        return {}
    return dict(zip(rows["id"].tolist(), rows, strict=True))


def _single(frame: Mapping[str, Any], kind: Kind, engine: Engine) -> float | None:
    rows = records(frame, kind, engine)
    return float(rows[0]["time"]) if len(rows) else None
