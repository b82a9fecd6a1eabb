"""scenario_runner's `MetricsLog` over an archive: metrics without a CARLA server.

scenario_runner (`srunner/metrics/tools/metrics_log.py`) asks a live server for the text
of `show_recorder_file_info(log, True)` and parses all of it before the first query.
This `MetricsLog` has the same public methods and frame numbering (1-based: frame `f` is
the f-th frame of the recording) but reads the archive: the actor table comes from the
spawn events, and a per-frame query reads that one frame, so the cost of a query does
not grow with the recording. Values are those the file holds (float32), not their
6-digit text; locations are metres as theirs, velocities as recorded.

Where theirs is wrong, this one is right, and differs:

- `get_actor_collisions(id)` lists every collision the actor took part in, as actor 1
  or actor 2, keyed by 1-based frame. Theirs keys by 0-based list position, records
  only collisions where the actor is actor 1, and its parser stops with a ValueError on
  any collision whose actor 2 is the hero (the line ends in `(hero) `).
- Accelerations are finite differences of the recorded velocities between consecutive
  frames. Theirs subtracts the velocity from itself, so every acceleration is zero.
- `get_elapsed_time`, `get_delta_time` and `get_platform_time` take 1-based frames as
  every other method. Theirs index the frame list from 0: frame `f` gives frame f+1's
  values, and the last frame raises IndexError.
- `get_actor_transforms_at_frame` (and the velocities/accelerations forms) name the
  actors of frame `f`. Theirs takes the actor ids of frame f+1 and the values of `f`.
- `get_walker_speed` is a float (theirs the text, a str); a scene light's `active` is its
  recorded on/off (theirs `bool("False")`, always True). An actor with both a Position
  and a traffic-light State in a frame keeps its transform (theirs replaces its states by
  the light's; no recording we have positions its traffic lights, so this stays rare).
- A crashed recording's incomplete last frame is not a frame here (the archive keeps it
  as its tail, for export): CARLA's text prints it, so theirs counts one frame more.
- A frame outside 1..N raises `OutOfRangeError` (an IndexError); theirs reads frame 0
  as the last frame.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Callable, Iterable, Iterator
from types import ModuleType
from typing import Any

import numpy as np
import numpy.typing as npt

from nanorec.errors import OutOfRangeError

from .ids import Kind
from .message import records
from .metrics_physics import physics_control
from .metrics_types import CarlaObject, box, carla_api, location, transform, vector
from .query.base import LIGHT_NAMES
from .recording import CarlaRecording
from .world import ActorDescription

_NEVER = np.iinfo(np.int64).max
_STATE_KINDS = (Kind.POSITION, Kind.STATE)  # what makes an actor part of a frame's states
#: A per-frame getter: (actor id, frame) -> a carla value, or None.
_Getter = Callable[[int, int], CarlaObject]


class MetricsLog:  # pylint: disable=too-many-public-methods
    """A CARLA recording queried as scenario_runner's `MetricsLog`; a context manager.

    `source` is a native recorder file (converted to a temporary archive), an archive,
    or an open `CarlaRecording` (left open on `close()`). `api` is the module whose
    classes the answers are built from: the real `carla` when it imports, else
    `metrics_types` (pass one to choose).
    """

    def __init__(
        self,
        source: str | os.PathLike[str] | CarlaRecording,
        *,
        api: ModuleType | None = None,
    ) -> None:
        if isinstance(source, CarlaRecording):
            self.recording, self._owned = source, False
        else:
            self.recording, self._owned = CarlaRecording.open(source), True
        self.carla = api if api is not None else carla_api()
        self._engine = self.recording.family.engine
        self._times = self.recording.times
        self._count = len(self.recording)
        tables = self.recording.tables
        last_row: dict[int, int] = {}  # actor id -> its last spawn row, in first-spawn order
        for row, actor_id in enumerate(tables.spawn_ids.tolist()):
            last_row[actor_id] = row
        self._last_row = last_row
        self._actors: dict[int, dict[str, Any]] = {}
        self._collisions: dict[int, dict[int, list[int]]] | None = None

    def close(self) -> None:
        if self._owned:
            self.recording.close()

    def __enter__(self) -> MetricsLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # General information

    def get_total_frame_count(self) -> int:
        """The number of frames."""
        return self._count

    def get_elapsed_time(self, frame: int) -> float:
        """Seconds from the start to `frame` (theirs: to frame + 1)."""
        return float(self._times[self._index(frame)])

    def get_delta_time(self, frame: int) -> float:
        """Seconds since the previous frame, rounded to the microsecond (0 for frame 1)."""
        index = self._index(frame)
        if index == 0:
            return 0
        return round(float(self._times[index] - self._times[index - 1]), 6)

    def get_platform_time(self, frame: int) -> float | None:
        """The recorded platform (wall clock) time of `frame`, None when not recorded."""
        rows = self._records(frame, Kind.PLATFORM_TIME)
        return float(rows["time"][-1]) if len(rows) else None

    def get_actor_collisions(self, actor_id: int) -> dict[int, list[int]]:
        """{1-based frame: [ids of the actors `actor_id` collided with in it]}, both roles."""
        if self._collisions is None:
            found: dict[int, dict[int, list[int]]] = {}
            for row in self.recording.rows(Kind.COLLISION.value):
                first, second = int(row["actor1_id"]), int(row["actor2_id"])
                frame = int(row["index"]) + 1
                found.setdefault(first, {}).setdefault(frame, []).append(second)
                if second != first:
                    found.setdefault(second, {}).setdefault(frame, []).append(first)
            self._collisions = found
        return {frame: list(ids) for frame, ids in self._collisions.get(actor_id, {}).items()}

    # Actors

    def get_ego_vehicle_id(self) -> int:
        """The id of the first actor whose role_name is `hero` (IndexError when none)."""
        return self.get_actor_ids_with_role_name("hero")[0]

    def get_actor_ids_with_role_name(self, role_name: str) -> list[int]:
        """The ids whose (last) spawn has this `role_name`, in order of first spawn."""
        return [
            actor_id
            for actor_id in self._last_row
            if self._description(actor_id).attributes.get("role_name") == role_name
        ]

    def get_actor_ids_with_type_id(self, type_id: str) -> list[int]:
        """The ids whose blueprint matches `type_id` (an fnmatch pattern: `vehicle.*`)."""
        return [
            actor_id
            for actor_id in self._last_row
            if fnmatch.fnmatch(self._description(actor_id).type_id, type_id)
        ]

    def get_actor_attributes(self, actor_id: int) -> dict[str, Any] | None:
        """Theirs' actor dict: type_id, location (spawn, m), created (and destroyed) frame,
        the blueprint attributes as text, parent, bounding_box, trigger_volume."""
        if actor_id not in self._last_row:
            return None
        found = self._actors.get(actor_id)
        if found is None:
            found = self._actor_dict(actor_id)
            self._actors[actor_id] = found
        return found

    def get_actor_bounding_box(self, actor_id: int) -> CarlaObject:
        """The actor's last recorded bounding box (metres), None when never recorded."""
        return (self.get_actor_attributes(actor_id) or {}).get("bounding_box")

    def get_traffic_light_trigger_volume(self, traffic_light_id: int) -> CarlaObject:
        """The traffic light's last recorded trigger volume (metres), or None."""
        return (self.get_actor_attributes(traffic_light_id) or {}).get("trigger_volume")

    def get_actor_alive_frames(self, actor_id: int) -> tuple[int | None, int | None]:
        """(first, last) 1-based frame of the actor's last lifetime; (None, None) if unknown."""
        row = self._last_row.get(actor_id)
        if row is None:
            return None, None
        tables = self.recording.tables
        end = int(tables.spawn_end[row])
        return int(tables.spawn_start[row]) + 1, (end if end != _NEVER else self._count)

    # Actor states at a frame

    def get_actor_transform(self, actor_id: int, frame: int) -> CarlaObject:
        """The actor's recorded transform (metres, degrees) in `frame`, None when none."""
        row = self._row(frame, Kind.POSITION, actor_id)
        return None if row is None else transform(self.carla, row)

    def get_all_actor_transforms(
        self, actor_id: int, first_frame: int | None = None, last_frame: int | None = None
    ) -> list[CarlaObject]:
        return self._all(self.get_actor_transform, actor_id, first_frame, last_frame)

    def get_actor_transforms_at_frame(
        self, frame: int, actor_list: Iterable[int] | None = None
    ) -> dict[int, CarlaObject]:
        return self._at_frame(self.get_actor_transform, frame, actor_list)

    def get_actor_velocity(self, actor_id: int, frame: int) -> CarlaObject:
        """The recorded linear velocity (a Vector3D, as recorded), None when none."""
        row = self._row(frame, Kind.KINEMATICS, actor_id)
        return None if row is None else vector(self.carla, row["linear_velocity"])

    def get_all_actor_velocities(
        self, actor_id: int, first_frame: int | None = None, last_frame: int | None = None
    ) -> list[CarlaObject]:
        return self._all(self.get_actor_velocity, actor_id, first_frame, last_frame)

    def get_actor_velocities_at_frame(
        self, frame: int, actor_list: Iterable[int] | None = None
    ) -> dict[int, CarlaObject]:
        return self._at_frame(self.get_actor_velocity, frame, actor_list)

    def get_actor_angular_velocity(self, actor_id: int, frame: int) -> CarlaObject:
        """The recorded angular velocity (a Vector3D, deg/s), None when none."""
        row = self._row(frame, Kind.KINEMATICS, actor_id)
        return None if row is None else vector(self.carla, row["angular_velocity"])

    def get_all_actor_angular_velocities(
        self, actor_id: int, first_frame: int | None = None, last_frame: int | None = None
    ) -> list[CarlaObject]:
        return self._all(self.get_actor_angular_velocity, actor_id, first_frame, last_frame)

    def get_actor_angular_velocities_at_frame(
        self, frame: int, actor_list: Iterable[int] | None = None
    ) -> dict[int, CarlaObject]:
        return self._at_frame(self.get_actor_angular_velocity, frame, actor_list)

    def get_actor_acceleration(self, actor_id: int, frame: int) -> CarlaObject:
        """(v(frame) - v(frame - 1)) / dt from the recorded velocities; zero in frame 1, when
        dt is 0 or the actor had no velocity the frame before; None without a velocity."""
        row = self._row(frame, Kind.KINEMATICS, actor_id)
        if row is None:
            return None
        index = self._index(frame)
        before = self._row(frame - 1, Kind.KINEMATICS, actor_id) if index else None
        delta = float(self._times[index] - self._times[index - 1]) if index else 0.0
        if before is None or delta == 0:
            return self.carla.Vector3D(0.0, 0.0, 0.0)
        change = row["linear_velocity"].astype(np.float64) - before["linear_velocity"]
        return vector(self.carla, change / delta)

    def get_all_actor_accelerations(
        self, actor_id: int, first_frame: int | None = None, last_frame: int | None = None
    ) -> list[CarlaObject]:
        return self._all(self.get_actor_acceleration, actor_id, first_frame, last_frame)

    def get_actor_accelerations_at_frame(
        self, frame: int, actor_list: Iterable[int] | None = None
    ) -> dict[int, CarlaObject]:
        return self._at_frame(self.get_actor_acceleration, frame, actor_list)

    def get_vehicle_control(self, vehicle_id: int, frame: int) -> CarlaObject:
        """The recorded vehicle animation as a VehicleControl, None when none."""
        row = self._row(frame, Kind.ANIM_VEHICLE, vehicle_id)
        if row is None:
            return None
        gear = int(row["gear"])
        return self.carla.VehicleControl(
            throttle=float(row["throttle"]),
            steer=float(row["steering"]),
            brake=float(row["brake"]),
            hand_brake=bool(row["handbrake"]),
            reverse=gear < 0,
            manual_gear_shift=False,
            gear=gear,
        )

    def get_vehicle_physics_control(self, vehicle_id: int, frame: int) -> CarlaObject:
        """The vehicle's latest VehiclePhysicsControl at or before `frame`, or None."""
        index = self._index(frame)
        tables = self.recording.tables
        stop = int(np.searchsorted(tables.physics_frames, index, side="right"))
        rows = np.flatnonzero(tables.physics_ids[:stop] == vehicle_id)
        if not len(rows):
            return None
        return physics_control(self.carla, tables.physics_maps[int(rows[-1])], self._engine)

    def get_walker_speed(self, walker_id: int, frame: int) -> float | None:
        """The recorded walker animation speed (a float; theirs the text), None when none."""
        row = self._row(frame, Kind.ANIM_WALKER, walker_id)
        return None if row is None else float(row["speed"])

    def get_traffic_light_state(self, traffic_light_id: int, frame: int) -> CarlaObject:
        """The light's TrafficLightState in `frame`, None when not recorded."""
        row = self._row(frame, Kind.STATE, traffic_light_id)
        return None if row is None else self.carla.TrafficLightState(int(row["state"]))

    def is_traffic_light_frozen(self, traffic_light_id: int, frame: int) -> bool | None:
        row = self._row(frame, Kind.STATE, traffic_light_id)
        return None if row is None else bool(row["is_frozen"])

    def get_traffic_light_elapsed_time(self, traffic_light_id: int, frame: int) -> float | None:
        row = self._row(frame, Kind.STATE, traffic_light_id)
        return None if row is None else float(row["elapsed_time"])

    def get_traffic_light_state_time(
        self, traffic_light_id: int, state: CarlaObject, frame: int
    ) -> float | None:
        """The light's latest recorded time (s) for `state` (Green, Yellow or Red) at or
        before `frame`, None when none."""
        row = self._latest(Kind.TRAFFIC_LIGHT_TIME, "id", traffic_light_id, frame)
        if row is None:
            return None
        states = self.carla.TrafficLightState
        times = {
            states.Green: float(row["green_time"]),
            states.Yellow: float(row["yellow_time"]),
            states.Red: float(row["red_time"]),
        }
        return times.get(state)

    def get_vehicle_lights(self, vehicle_id: int, frame: int) -> list[CarlaObject] | None:
        """The lights on as VehicleLightState values, in CARLA's printed order ([NONE] when
        all are off), None when not recorded."""
        row = self._row(frame, Kind.VEHICLE_LIGHT, vehicle_id)
        if row is None:
            return None
        bits = int(row["state"])
        lights = self.carla.VehicleLightState
        on = [getattr(lights, name) for name, bit in LIGHT_NAMES if bits & bit]
        return on or [lights.NONE]

    def is_vehicle_light_active(self, light: CarlaObject, vehicle_id: int, frame: int) -> bool:
        """Whether `light` is on (False when the frame has no light record: theirs raises)."""
        return light in (self.get_vehicle_lights(vehicle_id, frame) or [])

    def get_scene_light_state(self, light_id: int, frame: int) -> CarlaObject:
        """The scene light's latest recorded LightState at or before `frame`, or None."""
        row = self._latest(Kind.SCENE_LIGHT, "light_id", light_id, frame)
        if row is None:
            return None
        red, green, blue = (int(float(c) * 255) for c in row["color"][:3])
        return self.carla.LightState(
            intensity=int(row["intensity"]),
            color=self.carla.Color(red, green, blue),
            group=self.carla.LightGroup.NONE,
            active=bool(row["is_on"]),
        )

    # Helpers

    def _index(self, frame: int) -> int:
        if not 1 <= frame <= self._count:
            raise OutOfRangeError(f"frame {frame} out of range: frames are 1 to {self._count}")
        return frame - 1

    def _records(self, frame: int, kind: Kind) -> npt.NDArray[Any]:
        return records(self.recording.frame_map(self._index(frame)), kind, self._engine)

    def _row(self, frame: int, kind: Kind, actor_id: int) -> np.void | None:
        """The actor's last `kind` record in `frame` (a numpy record), None when none."""
        rows = self._records(frame, kind)
        hits = np.flatnonzero(rows["id"] == actor_id)
        return rows[int(hits[-1])] if len(hits) else None

    def _latest(self, kind: Kind, key: str, value: int, frame: int) -> np.void | None:
        """The last sparse `kind` record with `key == value` at or before `frame`."""
        sparse = self.recording.tables.sparse[kind]
        rows = sparse.upto(self._index(frame))
        hits = np.flatnonzero(rows[key] == value)
        return rows[int(hits[-1])] if len(hits) else None

    def _all(
        self, get: _Getter, actor_id: int, first_frame: int | None, last_frame: int | None
    ) -> list[CarlaObject]:
        first = 1 if first_frame is None else first_frame
        last = self._count if last_frame is None else last_frame
        return [get(actor_id, frame) for frame in range(first, last + 1)]

    def _frame_ids(self, frame: int) -> Iterator[int]:
        """Ids with a Position or traffic-light State in `frame`, once each, in file order."""
        seen: dict[int, None] = {}
        for kind in _STATE_KINDS:
            seen.update(dict.fromkeys(self._records(frame, kind)["id"].tolist()))
        return iter(seen)

    def _at_frame(
        self, get: _Getter, frame: int, actor_list: Iterable[int] | None
    ) -> dict[int, CarlaObject]:
        wanted = set(actor_list) if actor_list else None
        states: dict[int, CarlaObject] = {}
        for actor_id in self._frame_ids(frame):
            if wanted is None:
                state = get(actor_id, frame)
                if state is not None:
                    states[actor_id] = state
            elif actor_id in wanted:
                states[actor_id] = get(actor_id, frame)
        return states

    def _description(self, actor_id: int) -> ActorDescription:
        return self.recording.tables.description(self._last_row[actor_id])

    def _actor_dict(self, actor_id: int) -> dict[str, Any]:
        tables = self.recording.tables
        row = self._last_row[actor_id]
        start, end = int(tables.spawn_start[row]), int(tables.spawn_end[row])
        description = tables.description(row)
        actor: dict[str, Any] = {
            "type_id": description.type_id,
            "location": location(self.carla, description.location),
            "created": start + 1,
        }
        actor.update(description.attributes)
        if end != _NEVER:
            actor["destroyed"] = end + 1
        parents = tables.parents.rows
        mine = parents[(parents["child"] == actor_id) & (parents["frame"] >= start)]
        if len(mine):
            actor["parent"] = int(mine["parent"][-1])
        for kind, name in (
            (Kind.BOUNDING_BOX, "bounding_box"),
            (Kind.TRIGGER_VOLUME, "trigger_volume"),
        ):
            sparse = tables.sparse[kind]
            hits = np.flatnonzero((sparse.rows["id"] == actor_id) & (sparse.frames >= start))
            if len(hits):
                actor[name] = box(self.carla, sparse.rows[int(hits[-1])])
        return actor
