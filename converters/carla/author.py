"""CARLA recorder files authored from trajectory tables (carla-simulator/carla#5248).

A table of actor poses over time (`author_table.py` documents its columns, in the units
of CARLA's Python API) becomes a recorder file that a CARLA server of the chosen release
replays: each actor is added (EventAdd) in the first frame it appears in, with its
blueprint id and role name, moved every frame it exists (Position; vehicles also get
their controls, AnimVehicle, and walkers their speed, AnimWalker), and removed
(EventDel) in the frame after its last row. Bounding boxes (additional data) are written
when the table has extents.

Frames: one per distinct time of the table, or with `fps` a fixed step from the first
time to the last (elapsed times summed from float32 steps, as a server at that fixed
delta writes them). An actor exists from its first row to its last: in a frame between
two of its rows its pose is interpolated, linearly for locations and along the shorter
arc for angles; it is never extrapolated. Units are converted to the file's: metres to
centimetres (the Python API's axes are the file's), rotations to (roll, pitch, yaw) in
CARLA's ranges (`geometry.normalize_rotation`).

The blueprint UId: CARLA's replayer spawns an actor through the factory of the
blueprint numbered `uid` in the server's library (0.9.15+ then finds the class by the
blueprint id; older servers take the class by the number too), and refuses uid 0. The
number depends on the build: give a `uid` column, or `uids` taken from any recording made
on that server (`recorded_uids`; `nanorec cat any.log --type event_add` shows them).
Without them, the number real recordings of that release have is used; another vehicle
gets a car's number (the right factory) and anything else 0; the report lists guesses.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from nanorec.errors import UsageError

from .author_frames import Stream, Track, frame_times, stream, track
from .author_table import MAX_TEXT, ActorRows, TrajectoryTable, actors, read
from .ids import ActorType, AttributeType, Family, Kind
from .releases import DEFAULT_RELEASE, RELEASE_NUMBERS, RELEASES, release_family
from .writer import RecordingWriter

__all__ = [
    "DEFAULT_RELEASE",
    "RELEASES",
    "RELEASE_NUMBERS",
    "AuthorReport",
    "author",
    "recorded_uids",
    "release_family",
]


# Blueprint UIds as real recordings have them (../shared/realdata/carla: 0.9.6, 0.9.10 and
# 0.9.13 files and a 0.9.14/0.9.15 one); they differ between releases (the Tesla is 16 in
# 0.9.6, 24 later). Later UE4 families take 0.9.15's; UE5's are unknown.
_UIDS_096: Mapping[str, int] = {
    "vehicle.audi.tt": 2,
    "vehicle.lincoln.mkz2017": 19,
    "vehicle.mini.cooperst": 11,
    "vehicle.nissan.patrol": 14,
    "vehicle.tesla.model3": 16,
    "vehicle.toyota.prius": 17,
}
_UIDS_0913: Mapping[str, int] = {
    "vehicle.lincoln.mkz2017": 26,
    "vehicle.lincoln.mkz_2017": 26,
    "vehicle.tesla.model3": 24,
    "vehicle.toyota.prius": 15,
}
_UIDS_0915: Mapping[str, int] = {
    "vehicle.audi.etron": 22,
    "vehicle.audi.tt": 2,
    "vehicle.diamondback.century": 21,
    "vehicle.dodge.charger_2020": 30,
    "vehicle.dodge.charger_police_2020": 31,
    "vehicle.lincoln.mkz_2020": 28,
    "vehicle.micro.microlino": 4,
    "vehicle.nissan.patrol": 13,
    "vehicle.tesla.model3": 24,
    "vehicle.toyota.prius": 15,
    "vehicle.volkswagen.t2_2021": 39,
}
_UIDS: Mapping[str, Mapping[str, int]] = {
    "0.9.4-0.9.9": _UIDS_096,
    "0.9.10-0.9.13": _UIDS_0913,
    **{name: _UIDS_0915 for name in ("0.9.14", "0.9.15", "nightly-2023", "0.9.16")},
    "ue4-dev-2026": _UIDS_0915,
}


@dataclass
class AuthorReport:
    """What `author` wrote."""

    output: str
    release: str  # the family name
    map_name: str
    frames: int
    actors: int
    size: int  # bytes
    duration: float  # elapsed seconds of the last frame
    rows: int  # table rows read
    ignored_columns: tuple[str, ...] = ()
    guessed_uids: dict[str, int] = field(default_factory=dict)  # blueprint -> uid used
    skipped_actors: tuple[int, ...] = ()  # actors alive between two frames only

    def line(self) -> str:
        """One line saying what was written."""
        text = (
            f"{self.output}: {self.frames} frames, {self.actors} actors, "
            f"{self.duration:g} s, map {self.map_name}, CARLA {self.release} ({self.size} bytes)"
        )
        if self.skipped_actors:
            text += f"; {len(self.skipped_actors)} actors between frames left out"
        if self.guessed_uids:
            text += (
                "; blueprint UIds not known for this release (give a uid column or --uids-from): "
                + ", ".join(f"{name} written as {uid}" for name, uid in self.guessed_uids.items())
            )
        return text

    def as_dict(self) -> dict[str, Any]:
        return dict(vars(self))


def recorded_uids(recording: str | os.PathLike[str]) -> dict[str, int]:
    """Blueprint id -> UId as a CARLA recording (native file or archive) has them: the
    numbers of the server that made it, for `author(..., uids=...)`."""
    from .recording import CarlaRecording

    with CarlaRecording.open(recording) as rec:
        return {str(row["type_id"]): int(row["uid"]) for row in rec.rows("event_add")}


def author(
    table: str | os.PathLike[str] | Mapping[str, Any],
    output: str | os.PathLike[str],
    *,
    map_name: str,
    release: str = DEFAULT_RELEASE,
    fps: float | None = None,
    overwrite: bool = False,
    date: int | None = None,
    uids: Mapping[str, int] | None = None,
) -> AuthorReport:
    """Write the CARLA recorder file `output` from a trajectory table (a .csv or .parquet
    path, or a mapping of column name to values; see `author_table`).

    `release` a CARLA release number or family name (`RELEASES`), `fps` a fixed frame rate
    (default: one frame per distinct time of the table), `date` the header's Unix seconds
    (default now, as CARLA's `time(0)`), `uids` blueprint UIds by blueprint id (see the
    module docstring; a `uid` column wins). The output appears only when complete; an existing
    file raises OutputExistsError unless `overwrite`. Raises FormatError naming the row and
    column of a bad value, UsageError for a bad argument.
    """
    family = release_family(release)
    if not map_name:
        raise UsageError("the map name is empty: give the map the recording was made on")
    if len(map_name.encode("utf-8", "surrogateescape")) > MAX_TEXT:
        raise UsageError(f"the map name is longer than CARLA's {MAX_TEXT} bytes")
    checked = read(table)
    if checked.has("extent_x") and Kind.BOUNDING_BOX not in family.kinds:
        raise UsageError(
            f"extents are written as bounding boxes, additional data that CARLA "
            f"{family.name} does not record: drop the extent columns or pick a later release"
        )
    plan = _Plan(checked, actors(checked), family, fps, uids or {})
    writer = RecordingWriter(
        output,
        family,
        map_name=map_name,
        date=int(time.time()) if date is None else int(date),
        additional_data=checked.has("extent_x"),
        overwrite=overwrite,
    )
    with writer:
        for frame in range(plan.frames):
            with writer.frame(elapsed=float(plan.elapsed[frame])):
                plan.write_frame(writer, frame)
    return AuthorReport(
        str(Path(output)),
        family.name,
        map_name,
        plan.frames,
        len(plan.actors),
        writer.stats.size,
        float(plan.elapsed[-1]),
        checked.rows,
        checked.ignored,
        plan.guessed,
        tuple(plan.skipped),
    )


# ------------------------------------------------------------------------------ writing


class _Plan:
    """Frame times, every actor's track, and the streams each frame's packets slice."""

    def __init__(
        self,
        table: TrajectoryTable,
        found: list[ActorRows],
        family: Family,
        fps: float | None,
        given: Mapping[str, int],
    ) -> None:
        self.family, self.given = family, given
        self.times, self.elapsed = frame_times(table.columns["t"], fps)
        self.frames = len(self.times)
        self.guessed: dict[str, int] = {}
        self.skipped: list[int] = []
        self.actors: list[Track] = []
        self.uids: dict[int, int] = {}
        self.types: dict[int, int] = {}
        for actor in found:
            self.types[actor.actor_id] = _type_byte(actor.type_id)
            sampled = track(table, actor, self.times)
            if sampled is None:
                self.skipped.append(actor.actor_id)
                continue
            self.actors.append(sampled)
            self.uids[actor.actor_id] = self._uid(actor)
        self.starting: dict[int, list[Track]] = {}
        self.ending: dict[int, list[int]] = {}
        for sampled in self.actors:
            self.starting.setdefault(sampled.first, []).append(sampled)
            if sampled.last + 1 < self.frames:
                self.ending.setdefault(sampled.last + 1, []).append(sampled.actor.actor_id)
        others = Kind.VEHICLE_LIGHT in family.kinds  # Position for "Other" since ~0.9.10 (§5.6)
        self.positions = self._stream(
            lambda kind: others or kind != ActorType.OTHER,
            lambda t: {"location": t.location, "rotation": t.rotation[:, [1, 2, 0]]},
        )
        self.vehicles = self._stream(lambda kind: kind == ActorType.VEHICLE, lambda t: t.controls)
        self.walkers = self._stream(
            lambda kind: kind == ActorType.WALKER, lambda t: {"speed": t.speed}
        )

    def _stream(
        self,
        keep: Callable[[int], bool],
        columns: Callable[[Track], Mapping[str, npt.NDArray[np.generic]]],
    ) -> Stream:
        chosen = [t for t in self.actors if keep(self.types[t.actor.actor_id])]
        return stream(chosen, self.frames, columns)

    def _uid(self, actor: ActorRows) -> int:
        """The table's uid, the given one, the release's known one, a car's for another
        vehicle (the right factory, which is all 0.9.15+ needs), else 0: CARLA refuses to
        spawn it ("Invalid ActorDescription") rather than spawning a wrong blueprint."""
        if actor.uid is not None:
            return actor.uid
        if actor.type_id in self.given:
            return int(self.given[actor.type_id])
        known = _UIDS.get(self.family.name, {})
        uid = known.get(actor.type_id)
        if uid is not None:
            return uid
        car = known.get("vehicle.tesla.model3", 0)
        uid = car if actor.type_id.startswith("vehicle.") else 0
        self.guessed[actor.type_id] = uid
        return uid

    def write_frame(self, writer: RecordingWriter, frame: int) -> None:
        """Add frame `frame`'s records to the open frame of `writer`."""
        starting = self.starting.get(frame, [])
        for sampled in starting:
            self._spawn(writer, sampled)
        if frame in self.ending:
            writer.destroy(self.ending[frame])
        at = self.positions.at(frame)
        if at.stop > at.start:
            columns = self.positions.columns
            writer.positions(
                self.positions.ids[at], columns["location"][at], columns["rotation"][at]
            )
        at = self.vehicles.at(frame)
        if at.stop > at.start:
            columns = self.vehicles.columns
            writer.vehicle_animations(
                self.vehicles.ids[at],
                steering=columns["steer"][at],
                throttle=columns["throttle"][at],
                brake=columns["brake"][at],
                handbrake=columns["hand_brake"][at],
                gear=columns["gear"][at],
            )
        at = self.walkers.at(frame)
        if at.stop > at.start:
            writer.walker_speeds(self.walkers.ids[at], self.walkers.columns["speed"][at])
        boxed = [t.actor for t in starting if t.actor.extent is not None]
        if boxed:
            writer.bounding_boxes(
                [actor.actor_id for actor in boxed],
                np.zeros((len(boxed), 3)),
                np.asarray([actor.extent for actor in boxed]) * 100.0,
            )

    def _spawn(self, writer: RecordingWriter, sampled: Track) -> None:
        actor = sampled.actor
        writer.spawn(
            actor.actor_id,
            self.types[actor.actor_id],
            actor.type_id,
            location=sampled.location[0],
            rotation=sampled.rotation[0],
            uid=self.uids[actor.actor_id],
            attributes=[(int(AttributeType.STRING), "role_name", actor.role_name)]
            if actor.role_name
            else (),
        )


def _type_byte(type_id: str) -> int:
    """EventAdd's actor type for a blueprint id (spec §5.2)."""
    if type_id.startswith("vehicle."):
        return int(ActorType.VEHICLE)
    if type_id.startswith("walker.") and not type_id.startswith("walker.controller"):
        return int(ActorType.WALKER)
    if type_id.startswith(("traffic.", "sensor.", "controller.", "walker.controller")):
        raise UsageError(
            f"blueprint {type_id!r}: CARLA's replayer does not move traffic lights, signs, "
            "sensors or controllers from a recording; author vehicles, walkers and props"
        )
    return int(ActorType.OTHER)
