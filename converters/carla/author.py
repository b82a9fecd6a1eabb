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
number depends on the build: give a `uid` column (`nanorec cat any.log --type event_add`
shows them for a recording made on that server). Without it, the number real recordings
of that release have is used; another vehicle gets a car's number (the right factory) and
anything else 0; the report lists these guesses.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from nanorec.errors import UnknownNameError, UsageError

from .author_table import CONTROL_COLUMNS, ActorRows, TrajectoryTable, actors, read
from .geometry import elapsed_times, normalize_rotation, wrap_degrees
from .ids import FAMILIES, ActorType, AttributeType, Family, Kind
from .writer import RecordingWriter

__all__ = [
    "DEFAULT_RELEASE",
    "RELEASES",
    "RELEASE_NUMBERS",
    "AuthorReport",
    "author",
    "release_family",
]

#: CARLA releases by number, and the family each one writes.
RELEASE_NUMBERS: Mapping[str, str] = {
    **{f"0.9.{minor}": "0.9.4-0.9.9" for minor in range(4, 10)},
    **{f"0.9.{minor}": "0.9.10-0.9.13" for minor in range(10, 14)},
    "0.9.14": "0.9.14",
    "0.9.15": "0.9.15",
    "0.9.16": "0.9.16",
    "0.10.0": "ue5-0.10",
}
#: What `release` takes: a release number or a family name (nightlies, ue4-dev 2026...).
RELEASES: Mapping[str, str] = {**RELEASE_NUMBERS, **{name: name for name in FAMILIES}}
#: The latest CARLA release (the UE4 line's 0.9.16, September 2025).
DEFAULT_RELEASE = "0.9.16"
#: More frames than this is a mistake (`fps` far too high for the table's span).
MAX_FRAMES = 10_000_000
_EPS = 1e-6  # seconds: a frame this close to an actor's first or last row is at it

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
            text += "; blueprint UIds not known for this release (give a uid column): " + ", ".join(
                f"{name} written as {uid}" for name, uid in self.guessed_uids.items()
            )
        return text

    def as_dict(self) -> dict[str, Any]:
        return dict(vars(self))


def release_family(release: str) -> Family:
    """The family `release` (a release number such as 0.9.15, or a family name) writes."""
    name = RELEASES.get(release)
    if name is None:
        raise UnknownNameError(f"unknown CARLA release {release!r}; known: {', '.join(RELEASES)}")
    return FAMILIES[name]


def author(
    table: str | os.PathLike[str] | Mapping[str, Any],
    output: str | os.PathLike[str],
    *,
    map_name: str,
    release: str = DEFAULT_RELEASE,
    fps: float | None = None,
    overwrite: bool = False,
    date: int | None = None,
) -> AuthorReport:
    """Write the CARLA recorder file `output` from a trajectory table (a .csv or .parquet
    path, or a mapping of column name to values; see `author_table`).

    `release` a CARLA release number or family name (`RELEASES`), `fps` a fixed frame rate
    (default: one frame per distinct time of the table), `date` the header's Unix seconds
    (default now, as CARLA's `time(0)`). The output appears only when complete; an existing
    file raises OutputExistsError unless `overwrite`. Raises FormatError naming the row and
    column of a bad value, UsageError for a bad argument.
    """
    family = release_family(release)
    if not map_name:
        raise UsageError("the map name is empty: give the map the recording was made on")
    checked = read(table)
    if checked.has("extent_x") and Kind.BOUNDING_BOX not in family.kinds:
        raise UsageError(
            f"extents are written as bounding boxes, additional data that CARLA "
            f"{family.name} does not record: drop the extent columns or pick a later release"
        )
    plan = _Plan(checked, actors(checked), family, fps)
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


# ------------------------------------------------------------------------------ planning


@dataclass
class _Track:
    """One actor's samples at the frames it exists in, in the file's units."""

    actor: ActorRows
    type_byte: int
    uid: int
    frames: npt.NDArray[np.int64]  # frame numbers, consecutive
    location: npt.NDArray[np.float64]  # (n, 3) cm
    rotation: npt.NDArray[np.float64]  # (n, 3) roll, pitch, yaw
    controls: dict[str, npt.NDArray[Any]]


class _Plan:
    """Frame times and every actor's samples, then what each frame writes."""

    def __init__(
        self, table: TrajectoryTable, found: list[ActorRows], family: Family, fps: float | None
    ) -> None:
        self.table, self.family = table, family
        times = table.columns["t"]
        start, end = float(times.min()), float(times.max())
        if fps is None:
            self.times = np.unique(times)
            self.elapsed = self.times - start
        else:
            if not (math.isfinite(fps) and fps > 0):
                raise UsageError(f"--fps must be a positive number of frames per second, not {fps}")
            count = math.floor((end - start) * fps + 1e-9) + 1
            if count > MAX_FRAMES:
                raise UsageError(
                    f"--fps {fps:g} over {end - start:g} s makes {count} frames; "
                    f"at most {MAX_FRAMES} are written"
                )
            self.elapsed = elapsed_times(np.full(count, 1.0 / fps))
            self.times = start + self.elapsed
        self.frames = len(self.times)
        self.guessed: dict[str, int] = {}
        self.skipped: list[int] = []
        self.actors: list[_Track] = []
        for actor in found:
            track = self._track(actor)
            if track is None:
                self.skipped.append(actor.actor_id)
            else:
                self.actors.append(track)
        self._by_frame = _index_by_frame(self.actors, self.frames)
        self._positions_for_other = Kind.VEHICLE_LIGHT in family.kinds  # ~0.9.10 on (§5.6)

    def _track(self, actor: ActorRows) -> _Track | None:
        columns, rows = self.table.columns, actor.rows
        t = columns["t"][rows]
        lo = int(np.searchsorted(self.times, t[0] - _EPS, "left"))
        hi = int(np.searchsorted(self.times, t[-1] + _EPS, "right"))
        if hi <= lo:
            return None
        at = np.clip(self.times[lo:hi], t[0], t[-1])
        j, frac = _segments(t, at)
        # cm; + 0.0 turns a -0.0 into the 0 a server would print
        location = np.stack([_lerp(columns[a][rows], j, frac) for a in "xyz"], axis=-1) * 100.0
        location += 0.0
        angles = [_angles(columns, name, rows, j, frac) for name in ("roll", "pitch", "yaw")]
        rotation = _file_rotation(np.stack(angles, axis=-1))
        step = np.where(frac >= 1.0, j + 1, j)  # the row at or before each frame
        controls: dict[str, npt.NDArray[Any]] = {}
        for name in CONTROL_COLUMNS:
            if name in columns:
                values = columns[name][rows]
                linear = name in ("throttle", "steer", "brake")
                controls[name] = _lerp(values, j, frac) if linear else values[step]
        return _Track(
            actor,
            _type_byte(actor.type_id, self.family),
            self._uid(actor),
            np.arange(lo, hi, dtype=np.int64),
            location,
            rotation,
            controls,
        )

    def _uid(self, actor: ActorRows) -> int:
        """The table's uid, the release's known one, a car's for another vehicle (the
        right factory, which is all 0.9.15+ needs), else 0: CARLA refuses to spawn it
        ("Invalid ActorDescription") rather than spawning a wrong blueprint."""
        if actor.uid is not None:
            return actor.uid
        known = _UIDS.get(self.family.name, {})
        uid = known.get(actor.type_id)
        if uid is not None:
            return uid
        car = known.get("vehicle.tesla.model3", 0)
        uid = car if actor.type_id.startswith("vehicle.") else 0
        self.guessed[actor.type_id] = uid
        return uid

    # -------------------------------------------------------------------- writing

    def write_frame(self, writer: RecordingWriter, frame: int) -> None:
        """Add frame `frame`'s records to the open frame of `writer`."""
        alive, starting, ending = self._by_frame[frame]
        for track in starting:
            self._spawn(writer, track)
        if ending:
            writer.destroy(ending)
        moving = [
            (track, frame - int(track.frames[0]))
            for track in alive
            if self._positions_for_other or track.type_byte != ActorType.OTHER
        ]
        if moving:
            writer.positions(
                [track.actor.actor_id for track, _ in moving],
                [track.location[k] for track, k in moving],
                [track.rotation[k][[1, 2, 0]] for track, k in moving],  # pitch, yaw, roll
            )
        vehicles = [
            (t, frame - int(t.frames[0])) for t in alive if t.type_byte == ActorType.VEHICLE
        ]
        if vehicles:
            _vehicle_controls(writer, vehicles)
        walkers = [(t, frame - int(t.frames[0])) for t in alive if t.type_byte == ActorType.WALKER]
        if walkers:
            writer.walker_speeds(
                [track.actor.actor_id for track, _ in walkers],
                [_walker_speed(track, k, self.times) for track, k in walkers],
            )
        boxed = [track for track in starting if track.actor.extent is not None]
        if boxed:
            writer.bounding_boxes(
                [track.actor.actor_id for track in boxed],
                np.zeros((len(boxed), 3)),
                [np.asarray(track.actor.extent) * 100.0 for track in boxed],
            )

    def _spawn(self, writer: RecordingWriter, track: _Track) -> None:
        role = track.actor.role_name
        writer.spawn(
            track.actor.actor_id,
            track.type_byte,
            track.actor.type_id,
            location=track.location[0],
            rotation=track.rotation[0],
            uid=track.uid,
            attributes=[(int(AttributeType.STRING), "role_name", role)] if role else (),
        )


# ------------------------------------------------------------------------------ helpers


def _index_by_frame(
    tracks: list[_Track], frames: int
) -> list[tuple[list[_Track], list[_Track], list[int]]]:
    """Per frame: the tracks alive, those starting, and the ids ending just before it."""
    alive: list[list[_Track]] = [[] for _ in range(frames)]
    starting: list[list[_Track]] = [[] for _ in range(frames)]
    ending: list[list[int]] = [[] for _ in range(frames)]
    for track in tracks:
        first, last = int(track.frames[0]), int(track.frames[-1])
        starting[first].append(track)
        for frame in range(first, last + 1):
            alive[frame].append(track)
        if last + 1 < frames:
            ending[last + 1].append(track.actor.actor_id)
    return list(zip(alive, starting, ending, strict=True))


def _segments(
    t: npt.NDArray[np.float64], at: npt.NDArray[np.float64]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
    """For each time of `at` (within t[0]..t[-1]): the row j before it and the fraction of
    the way to row j + 1 (a one-row actor: j 0, fraction 0)."""
    if len(t) == 1:
        return np.zeros(len(at), dtype=np.int64), np.zeros(len(at))
    j = np.clip(np.searchsorted(t, at, "right") - 1, 0, len(t) - 2)
    frac = np.clip((at - t[j]) / (t[j + 1] - t[j]), 0.0, 1.0)
    return j.astype(np.int64), frac


def _lerp(
    values: npt.NDArray[Any], j: npt.NDArray[np.int64], frac: npt.NDArray[np.float64]
) -> npt.NDArray[np.float64]:
    """Linear interpolation, exact at the rows themselves (fraction 0 or 1)."""
    a = values[j].astype(np.float64)
    if len(values) == 1:
        return a
    b = values[j + 1].astype(np.float64)
    return np.where(frac <= 0.0, a, np.where(frac >= 1.0, b, a + frac * (b - a)))


def _angles(
    columns: dict[str, Any],
    name: str,
    rows: npt.NDArray[np.int64],
    j: npt.NDArray[np.int64],
    frac: npt.NDArray[np.float64],
) -> npt.NDArray[np.float64]:
    """An angle column interpolated along the shorter arc (0 when the column is absent)."""
    if name not in columns:
        return np.zeros(len(j))
    values: npt.NDArray[np.float64] = columns[name][rows]
    a = values[j]
    if len(values) == 1:
        return a
    turn = wrap_degrees(values[j + 1] - a)
    out: npt.NDArray[np.float64] = np.where(
        frac <= 0.0, a, np.where(frac >= 1.0, a + turn, a + frac * turn)
    )
    return out


def _file_rotation(rotations: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """(roll, pitch, yaw) as CARLA records them: angles wrapped into (-180, 180], and
    through the quaternion (CARLA's Euler ranges) where a pitch is beyond ±90."""
    wrapped = wrap_degrees(rotations)
    beyond = np.abs(wrapped[:, 1]) > 90.0
    if beyond.any():
        wrapped[beyond] = normalize_rotation(wrapped[beyond])
    return wrapped


def _type_byte(type_id: str, family: Family) -> int:
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


def _vehicle_controls(writer: RecordingWriter, vehicles: list[tuple[_Track, int]]) -> None:
    """AnimVehicle for every vehicle, as CARLA writes it each frame (zeros without a
    control column). The file has no reverse flag: a reversing vehicle is in gear -1."""

    def column(name: str, default: float) -> list[float]:
        return [
            float(track.controls[name][k]) if name in track.controls else default
            for track, k in vehicles
        ]

    gears = column("gear", 0)
    reverse = column("reverse", 0)
    writer.vehicle_animations(
        [track.actor.actor_id for track, _ in vehicles],
        steering=column("steer", 0.0),
        throttle=column("throttle", 0.0),
        brake=column("brake", 0.0),
        handbrake=[bool(v) for v in column("hand_brake", 0)],
        gear=[-1 if back else int(gear) for gear, back in zip(gears, reverse, strict=True)],
    )


def _walker_speed(track: _Track, k: int, times: npt.NDArray[np.float64]) -> float:
    """A walker's speed over the ground (cm/s, the engine's unit; spec §1) from its
    positions in this frame and the one before (the one after in its first frame)."""
    if len(track.frames) < 2:
        return 0.0
    a, b = (k - 1, k) if k > 0 else (0, 1)
    fa, fb = int(track.frames[a]), int(track.frames[b])
    step = float(times[fb] - times[fa])
    if step <= 0:
        return 0.0
    return float(np.hypot(*(track.location[b, :2] - track.location[a, :2])) / step)
