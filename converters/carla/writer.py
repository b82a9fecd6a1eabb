"""Write CARLA recorder files byte for byte the way a CARLA server of a given release does.

`RecordingWriter` is the typed face of `FrameWriter` (`frame_writer.py`: header, packet
order, back-patched durations, atomic output): one method per packet kind, taking arrays
in the file's units, so that recordings built from other trajectory data (or by our
synthetic generator) replay in CARLA and exercise every reader path of nanorec exactly
like real files. The values a server computes (float32 time steps, rotations as it
records them) are in `geometry.py`; row layouts and a default PhysicsControl in `rows.py`.

Units are the file's: cm for locations and extents, degrees for rotations given as
(roll, pitch, yaw), seconds for times, m/s for kinematic linear velocity.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import numpy.typing as npt

from nanorec.errors import FormatError, UsageError

from .frame_writer import FrameWriter
from .geometry import file_rotations
from .ids import SHAPES, Engine, Kind, Shape
from .records import (
    PHYSICS_UE4_DTYPE,
    PHYSICS_UE5_DTYPE,
    ActorAdd,
    Attribute,
    PhysicsControl,
    VarRecord,
    fixed_dtype,
)
from .rows import bones_dtype, wheels_dtype

__all__ = ["ENVIRONMENT_ID", "RecordingWriter"]

# Collision partner id of a hit against something that is not an actor, since ~0.9.13
# (older builds wrote 0; spec §5.5).
ENVIRONMENT_ID = 0xFFFFFFFF

_WEATHER_FIELDS: tuple[str, ...] = fixed_dtype(Kind.WEATHER, Engine.UE4).names or ()


class RecordingWriter(FrameWriter):
    """Writes one CARLA recorder file for a release `Family`, frame by frame.

    ```
    with RecordingWriter("out.log", "0.9.16", map_name="Town03") as rec:
        with rec.frame(elapsed=0.0):
            rec.spawn(1, ActorType.OTHER, "spectator")
            rec.positions([1], [(0, 0, 500)], [(0, 90, 0)])  # pitch, yaw, roll
    ```

    `target` is a path (written to `.<name>.partial` in the same directory and renamed on
    `close`, as `nanorec.archive.atomic` writes; an existing file raises `OutputExistsError` unless
    `overwrite=True`) or a binary stream (seekable or not; never closed by the writer).
    `date` is Unix seconds. `physics_wheel_size` overrides the family's UE4 PhysicsControl
    wheel record size (36 for 0.9.10/0.9.11 files in the "0.9.10-0.9.13" family).

    Records added between `begin_frame` and `end_frame` are written in the family's
    per-frame order, whatever order they were added in; within a packet they keep the
    order they were added in. Adding a kind the family does not write raises
    `UnsupportedError`; so does an additional-data kind without `additional_data=True`.
    """

    # --------------------------------------------------------------- event records

    def spawn(
        self,
        actor_id: int,
        actor_type: int,
        blueprint: str,
        *,
        location: npt.ArrayLike = (0.0, 0.0, 0.0),
        rotation: npt.ArrayLike = (0.0, 0.0, 0.0),
        uid: int = 0,
        attributes: Iterable[Attribute | tuple[int, str, str]] = (),
    ) -> None:
        """EventAdd: actor `actor_id` of type byte `actor_type` appears.

        `location` in cm, `rotation` (roll, pitch, yaw) in degrees, `uid` the blueprint's
        number, `attributes` as (type byte, id, value text). Attributes with an empty id
        are dropped, as CARLA does.
        """
        attrs = tuple(
            a if isinstance(a, Attribute) else Attribute(int(a[0]), str(a[1]), str(a[2]))
            for a in attributes
        )
        record = ActorAdd(
            int(actor_id),
            int(actor_type),
            np.asarray(location, dtype=np.float64),
            np.asarray(rotation, dtype=np.float64),
            int(uid),
            blueprint,
            tuple(a for a in attrs if a.id),
        )
        self.add_var(Kind.EVENT_ADD, record)

    def destroy(self, actor_ids: int | npt.ArrayLike) -> None:
        """EventDel: the actors `actor_ids` disappear."""
        ids = self._ids(actor_ids)
        self._fixed(Kind.EVENT_DEL, len(ids), id=ids)
        self._pending_deletes.extend(int(i) for i in ids)

    def parent(self, child_ids: int | npt.ArrayLike, parent_ids: int | npt.ArrayLike) -> None:
        """EventParent: attach `child_ids` to `parent_ids` (one parent per child)."""
        children = self._ids(child_ids)
        self._fixed(Kind.EVENT_PARENT, len(children), id=children, parent_id=parent_ids)

    def collision(
        self,
        collision_id: int,
        actor1_id: int,
        actor2_id: int,
        *,
        actor1_hero: bool = False,
        actor2_hero: bool = False,
    ) -> None:
        """Collision: `actor1_id` (owner of the collision sensor) hit `actor2_id`.

        Use `ENVIRONMENT_ID` (0.9.13+) or 0 (older) for a hit against a non-actor.
        """
        self._fixed(
            Kind.COLLISION,
            1,
            id=collision_id,
            actor1_id=actor1_id,
            actor2_id=actor2_id,
            is_actor1_hero=bool(actor1_hero),
            is_actor2_hero=bool(actor2_hero),
        )

    # ------------------------------------------------------------ snapshot records

    def positions(
        self, actor_ids: npt.ArrayLike, locations: npt.ArrayLike, rotations: npt.ArrayLike
    ) -> None:
        """Position: global `locations` (n, 3) x, y, z in cm and `rotations` in degrees as
        pitch, yaw, roll: an (n, 3) array in that order (`carla.Rotation`'s), or a
        structured array with fields `pitch`, `yaw`, `roll` (as `Trajectory.rotation`).
        The file stores (roll, pitch, yaw); the reordering happens here."""
        ids = self._ids(actor_ids)
        stored = file_rotations(rotations, len(ids))
        self._fixed(Kind.POSITION, len(ids), id=ids, location=locations, rotation=stored)

    def traffic_light_states(
        self,
        actor_ids: npt.ArrayLike,
        states: npt.ArrayLike,
        elapsed_times: npt.ArrayLike,
        *,
        frozen: npt.ArrayLike = False,
    ) -> None:
        """State: traffic-light `states` (TrafficLightState) and seconds spent in them."""
        ids = self._ids(actor_ids)
        self._fixed(
            Kind.STATE, len(ids), id=ids, is_frozen=frozen, elapsed_time=elapsed_times, state=states
        )

    def vehicle_animations(
        self,
        actor_ids: npt.ArrayLike,
        *,
        steering: npt.ArrayLike = 0.0,
        throttle: npt.ArrayLike = 0.0,
        brake: npt.ArrayLike = 0.0,
        handbrake: npt.ArrayLike = False,
        gear: npt.ArrayLike = 0,
    ) -> None:
        """AnimVehicle: control inputs (steering [-1, 1], throttle and brake [0, 1], gear)."""
        ids = self._ids(actor_ids)
        self._fixed(
            Kind.ANIM_VEHICLE,
            len(ids),
            id=ids,
            steering=steering,
            throttle=throttle,
            brake=brake,
            handbrake=handbrake,
            gear=gear,
        )

    def walker_speeds(self, actor_ids: npt.ArrayLike, speeds: npt.ArrayLike) -> None:
        """AnimWalker: walker controller speeds (the engine's unit, cm/s; spec §1)."""
        ids = self._ids(actor_ids)
        self._fixed(Kind.ANIM_WALKER, len(ids), id=ids, speed=speeds)

    def vehicle_lights(self, actor_ids: npt.ArrayLike, states: npt.ArrayLike) -> None:
        """VehicleLight: light flag words (see `ids.VEHICLE_LIGHT_BITS`)."""
        ids = self._ids(actor_ids)
        self._fixed(Kind.VEHICLE_LIGHT, len(ids), id=ids, state=states)

    def scene_lights(
        self,
        light_ids: npt.ArrayLike,
        *,
        intensities: npt.ArrayLike,
        colors: npt.ArrayLike,
        on: npt.ArrayLike,
        types: npt.ArrayLike = 2,
    ) -> None:
        """SceneLight: changed scene lights (`colors` (n, 4) RGBA floats; type 2 = street)."""
        ids = np.atleast_1d(np.asarray(light_ids, dtype=np.int64))
        self._fixed(
            Kind.SCENE_LIGHT,
            len(ids),
            light_id=ids,
            intensity=intensities,
            color=colors,
            is_on=on,
            type=types,
        )

    def vehicle_doors(
        self, actor_ids: npt.ArrayLike, doors: npt.ArrayLike, is_open: npt.ArrayLike
    ) -> None:
        """VehicleDoor: door open/close calls (door FL 0, FR 1, RL 2, RR 3, Hood 4, Trunk 5,
        All 6)."""
        ids = self._ids(actor_ids)
        self._fixed(Kind.VEHICLE_DOOR, len(ids), id=ids, door=doors, is_open=is_open)

    def bikers(
        self,
        actor_ids: npt.ArrayLike,
        forward_speeds: npt.ArrayLike,
        engine_rotations: npt.ArrayLike,
    ) -> None:
        """AnimBiker: two-wheelers' forward speed (cm/s) and engine rpm ÷ max rpm."""
        ids = self._ids(actor_ids)
        self._fixed(
            Kind.ANIM_BIKER,
            len(ids),
            id=ids,
            forward_speed=forward_speeds,
            engine_rotation=engine_rotations,
        )

    def vehicle_wheels(
        self,
        actor_ids: npt.ArrayLike,
        locations: npt.ArrayLike,
        steering_angles: npt.ArrayLike,
        tire_rotations: npt.ArrayLike,
    ) -> None:
        """AnimVehicleWheels for vehicles with the same wheel count, all arrays (n, wheels).

        `locations` are wheel codes (FL 0, FR 1, BL 2, BR 3; bikes Front 0, Back 1),
        `steering_angles` and `tire_rotations` in degrees.
        """
        ids = self._ids(actor_ids)
        codes = np.asarray(locations, dtype=np.uint8)
        wheels = codes.shape[-1] if codes.ndim else 0
        rows = np.zeros(len(ids), dtype=wheels_dtype(wheels))
        rows["id"] = ids
        rows["count"] = wheels
        rows["wheels"]["location"] = np.broadcast_to(codes, (len(ids), wheels))
        rows["wheels"]["steering_angle"] = steering_angles
        rows["wheels"]["tire_rotation"] = tire_rotations
        self.add_raw(Kind.ANIM_VEHICLE_WHEELS, rows.tobytes(), len(ids))

    def weather(self, values: Mapping[str, float]) -> None:
        """Weather (2026 line): one record, from a `Weather` or its fields (missing ones 0)."""
        unknown = set(values) - set(_WEATHER_FIELDS)
        if unknown:
            raise UsageError(f"unknown weather parameters {sorted(unknown)}")
        self._fixed(Kind.WEATHER, 1, **dict(values))

    def visual_time(self, seconds: float) -> None:
        """VisualTime of this frame (seconds of episode game time; default: elapsed)."""
        self._single(Kind.VISUAL_TIME, seconds)

    # ------------------------------------------------------------ additional data

    def kinematics(
        self,
        actor_ids: npt.ArrayLike,
        linear_velocities: npt.ArrayLike,
        angular_velocities: npt.ArrayLike,
    ) -> None:
        """Kinematics: linear velocity (n, 3) in m/s, angular velocity (n, 3) in deg/s."""
        ids = self._ids(actor_ids)
        self._fixed(
            Kind.KINEMATICS,
            len(ids),
            id=ids,
            linear_velocity=linear_velocities,
            angular_velocity=angular_velocities,
        )

    def bounding_boxes(
        self, actor_ids: npt.ArrayLike, origins: npt.ArrayLike, extents: npt.ArrayLike
    ) -> None:
        """BoundingBox: local `origins` and half-size `extents` (n, 3) in cm."""
        ids = self._ids(actor_ids)
        self._fixed(Kind.BOUNDING_BOX, len(ids), id=ids, origin=origins, extent=extents)

    def trigger_volumes(
        self, actor_ids: npt.ArrayLike, origins: npt.ArrayLike, extents: npt.ArrayLike
    ) -> None:
        """TriggerVolume: global `origins` and half-size `extents` (n, 3) in cm."""
        ids = self._ids(actor_ids)
        self._fixed(Kind.TRIGGER_VOLUME, len(ids), id=ids, origin=origins, extent=extents)

    def platform_time(self, seconds: float) -> None:
        """PlatformTime: wall-clock seconds since the recording started (default: elapsed)."""
        self._single(Kind.PLATFORM_TIME, seconds)

    def traffic_light_times(
        self,
        actor_ids: npt.ArrayLike,
        green: npt.ArrayLike,
        yellow: npt.ArrayLike,
        red: npt.ArrayLike,
    ) -> None:
        """TrafficLightTime: the green, yellow and red durations (seconds) of lights."""
        ids = self._ids(actor_ids)
        self._fixed(
            Kind.TRAFFIC_LIGHT_TIME,
            len(ids),
            id=ids,
            green_time=green,
            yellow_time=yellow,
            red_time=red,
        )

    def physics_control(self, record: PhysicsControl) -> None:
        """PhysicsControl: one vehicle's physics (see `default_physics_control`).

        Raises FormatError when the record's layout does not match the family (UE4 head
        and wheel size, or UE5 head).
        """
        if self.engine is Engine.UE4:
            wheels = record.array("wheels")
            if record.head.dtype != PHYSICS_UE4_DTYPE or wheels.dtype.itemsize != (
                self.physics_wheel_size
            ):
                raise FormatError(
                    f"physics control layout does not match {self.family.name!r} "
                    f"(wheel records of {self.physics_wheel_size} bytes)",
                    expected=self.physics_wheel_size,
                    actual=wheels.dtype.itemsize,
                )
        elif record.head.dtype != PHYSICS_UE5_DTYPE:
            raise FormatError(f"physics control is not in the UE5 layout of {self.family.name!r}")
        self.add_var(Kind.PHYSICS_CONTROL, record)

    def walker_bones(
        self,
        actor_ids: npt.ArrayLike,
        names: Sequence[str],
        locations: npt.ArrayLike,
        rotations: npt.ArrayLike,
    ) -> None:
        """WalkerBones for walkers sharing one skeleton: bone `names`, relative `locations`
        (walkers, bones, 3) in cm and `rotations` (walkers, bones, 3) in degrees."""
        ids = self._ids(actor_ids)
        dtype = bones_dtype(names, self.engine)
        rows = np.zeros(len(ids), dtype=dtype)
        rows["id"] = ids
        rows["count"] = len(names)
        locs = np.broadcast_to(np.asarray(locations), (len(ids), len(names), 3))
        rots = np.broadcast_to(np.asarray(rotations), (len(ids), len(names), 3))
        for i, name in enumerate(names):
            rows[f"n{i}"] = len(name.encode("utf-8", "surrogateescape"))
            if name:
                rows[f"s{i}"] = name.encode("utf-8", "surrogateescape")
            rows[f"l{i}"] = locs[:, i]
            rows[f"r{i}"] = rots[:, i]
        self.add_raw(Kind.WALKER_BONES, rows.tobytes(), len(ids))

    # ------------------------------------------------------------------ low level

    def add_records(self, kind: Kind, records: npt.NDArray[np.void]) -> None:
        """Add fixed-size records given as a structured array of `fixed_dtype(kind, engine)`.

        The fast path for bulk writers. Raises UnsupportedError for a kind the family does
        not write and ValueError for a wrong dtype.
        """
        self._check_kind(kind)
        dtype = self._dtypes.get(kind)
        if dtype is None or SHAPES[kind] is not Shape.FIXED:
            raise UsageError(f"{kind.value} is not a fixed-size record packet")
        if records.dtype != dtype:
            raise UsageError(f"{kind.value} records need dtype {dtype}, got {records.dtype}")
        self._add(kind, records.tobytes(), len(records))

    def add_var(self, kind: Kind, record: VarRecord) -> None:
        """Add one variable-length record (ActorAdd, PhysicsControl, WalkerBones, wheels)."""
        self._check_kind(kind)
        if SHAPES[kind] is not Shape.VAR:
            raise UsageError(f"{kind.value} is not a variable-length record packet")
        self._add(kind, record.serialize(self.engine), 1)
        if isinstance(record, ActorAdd):
            self._pending_types[record.id] = record.type

    def add_raw(self, kind: Kind, data: bytes, count: int) -> None:
        """Add `count` records already serialized to `data` (the caller owns the layout).

        The fastest path, for bulk writers that build rows with `wheels_dtype`,
        `bones_dtype` or `fixed_dtype`. Raises UnsupportedError for a kind the family does
        not write and ValueError for a single-value kind.
        """
        self._check_kind(kind)
        if SHAPES[kind] not in (Shape.FIXED, Shape.VAR):
            raise UsageError(f"{kind.value} holds one value, not records")
        self._add(kind, data, count)

    # --------------------------------------------------------------- internals

    def _ids(self, actor_ids: int | npt.ArrayLike) -> npt.NDArray[np.int64]:
        ids = np.atleast_1d(np.asarray(actor_ids, dtype=np.int64))
        if ids.ndim != 1:
            raise UsageError(f"actor ids must be one-dimensional, got shape {ids.shape}")
        if ids.size and (int(ids.min()) < 0 or int(ids.max()) > 0xFFFFFFFF):
            raise UsageError("actor ids must fit a u32 (0 .. 4294967295)")
        return ids

    def _fixed(self, kind: Kind, count: int, **fields: npt.ArrayLike) -> None:
        self._check_kind(kind)
        rows = np.zeros(count, dtype=self._dtypes[kind])
        for name, value in fields.items():
            rows[name] = value
        self._add(kind, rows.tobytes(), count)

    def _single(self, kind: Kind, seconds: float) -> None:
        self._check_kind(kind)
        if not self._open:
            raise RuntimeError("records can only be added inside a frame (begin_frame)")
        self._singles[kind] = float(seconds)
