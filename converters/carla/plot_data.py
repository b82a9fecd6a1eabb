"""What the CARLA bird's-eye picture draws, computed apart from the drawing: actor kinds,
paths, footprints, traffic lights, collisions, and the view framing the paths.

Everything here is numbers (metres, CARLA's x/y), so the tests check what a picture frames
without reading the image.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from nanorec.errors import EmptySelectionError, UsageError
from nanorec.selection import Selection

from .ids import ActorType, Kind, TrafficLightState
from .message import records
from .world import Actor, TrafficLight

if TYPE_CHECKING:
    from .recording import CarlaRecording

CM_PER_M = 100.0
# Half-sizes (cm) for actors whose bounding box was not recorded (it is only with
# additional_data): a typical car, a motorbike, a pedestrian.
DEFAULT_EXTENT_CM = {"vehicle": (230.0, 100.0), "bike": (110.0, 40.0), "walker": (30.0, 30.0)}
LIGHT_COLOURS = {
    TrafficLightState.RED: "#d62728",
    TrafficLightState.YELLOW: "#ffbf00",
    TrafficLightState.GREEN: "#2ca02c",
}
OFF_COLOUR = "#7f7f7f"
#: What `actor_kinds` calls actors (`--type`); all but "other" are drawn by default.
ACTOR_KINDS = ("vehicle", "bike", "walker", "other")
#: The view's margin around what it frames: this share of the longer side, at least MIN_MARGIN_M.
MARGIN_SHARE = 0.05
MIN_MARGIN_M = 5.0
#: The view is never thinner than 1/MAX_RATIO of its length (a straight road stays visible).
MAX_RATIO = 3.0

#: The actor id CARLA writes for "no actor" (0xFFFFFFFF).
NO_ACTOR = 0xFFFFFFFF

View = tuple[float, float, float, float]  # x_min, x_max, y_min, y_max (m)


@dataclass
class Track:
    actor_id: int
    kind: str  # "vehicle", "bike", "walker" or "other"
    hero: bool
    segments: list[npt.NDArray[np.float64]]  # (n, 2) x, y in m, one per continuous stretch


@dataclass(frozen=True)
class Collision:
    """A contact's first frame (archive frame; the recorder's own frame number, as `cat`
    prints it; seconds from the start), its two actors (NO_ACTOR: none, as CARLA records
    a hit on the map) and where it happened (m: the midpoint of the actors positioned then)."""

    frame: int
    recorder_frame: int
    time: float
    actor1: int
    actor2: int
    x: float
    y: float


def actor_kinds(rec: CarlaRecording) -> dict[int, str]:
    """actor id -> "vehicle", "bike", "walker" or "other" (latest spawn wins)."""
    kinds: dict[int, str] = {}
    tables = rec.tables
    for row, actor_id in enumerate(tables.spawn_ids.tolist()):
        desc = tables.description(row)
        if desc.type == ActorType.VEHICLE:
            two = desc.attributes.get("number_of_wheels") == "2"
            kinds[actor_id] = "bike" if two else "vehicle"
        elif desc.type == ActorType.WALKER:
            kinds[actor_id] = "walker"
        else:
            kinds[actor_id] = "other"
    return kinds


def wanted_actors(
    kinds: Mapping[int, str], actors: Collection[int] | None, types: Collection[str] | None
) -> set[int]:
    unknown = sorted(set(types or ()) - set(ACTOR_KINDS))
    if unknown:
        raise UsageError(f"--type takes {', '.join(ACTOR_KINDS)}; not {unknown[0]!r}")
    if actors is None:
        drawn = set(types or ACTOR_KINDS[:-1])
        return {actor_id for actor_id, kind in kinds.items() if kind in drawn}
    missing = sorted(set(actors) - kinds.keys())
    if missing:
        raise UsageError(f"actor {missing[0]} never appears in the recording")
    return {actor_id for actor_id in actors if types is None or kinds[actor_id] in types}


def nothing_drawn(
    kinds: Mapping[int, str], actors: Collection[int] | None, types: Collection[str] | None
) -> EmptySelectionError:
    """The error of `--type`/`--actor` selecting no actor, saying what the recording has
    (without it the picture would show only traffic lights, as if nothing were wrong)."""
    asked = [f"--type {kind}" for kind in sorted(set(types or ()))]
    asked += [f"--actor {actor}" for actor in sorted(set(actors or ()))]
    counts = Counter(kinds.values())
    there = ", ".join(f"{counts[kind]} {kind}" for kind in ACTOR_KINDS if counts[kind]) or "none"
    return EmptySelectionError(
        f"{' '.join(asked)} selects no actor to draw (the recording's actors by kind: {there})"
    )


def heroes(rec: CarlaRecording) -> set[int]:
    """The actors spawned with role_name "hero"."""
    tables = rec.tables
    return {
        actor_id
        for row, actor_id in enumerate(tables.spawn_ids.tolist())
        if tables.description(row).attributes.get("role_name") == "hero"
    }


def tracks(
    rec: CarlaRecording,
    span: range,
    wanted: set[int],
    kinds: Mapping[int, str],
    max_frames: int,
) -> list[Track]:
    """Each wanted actor's path over `span`, from at most `max_frames` evenly spaced frames.

    A path is cut where the actor is missing from a sampled frame (destroyed and
    re-spawned under the same id, or not positioned), so no line jumps across the map.
    """
    stride = max(1, math.ceil(len(span) / max(1, max_frames)))
    numbers = list(span[::stride])
    if numbers[-1] != span[-1]:
        numbers.append(span[-1])
    engine = rec.family.engine
    wanted_ids = np.fromiter(wanted, np.uint32, len(wanted))
    ids: list[npt.NDArray[Any]] = []
    xy: list[npt.NDArray[Any]] = []
    samples: list[npt.NDArray[np.int64]] = []
    for sample, number in enumerate(numbers):
        frame = rec.reader[number].get("frame")
        if not isinstance(frame, Mapping):
            continue
        poses = records(frame, Kind.POSITION, engine)
        poses = poses[np.isin(poses["id"], wanted_ids)]
        if not len(poses):
            continue
        ids.append(poses["id"].astype(np.int64))
        xy.append(poses["location"][:, :2].astype(np.float64) / CM_PER_M)
        samples.append(np.full(len(poses), sample, np.int64))
    if not ids:
        return []
    all_ids = np.concatenate(ids)
    all_xy = np.concatenate(xy)
    all_samples = np.concatenate(samples)
    order = np.argsort(all_ids, kind="stable")
    all_ids, all_xy, all_samples = all_ids[order], all_xy[order], all_samples[order]
    hero_ids = heroes(rec)
    found: list[Track] = []
    bounds = np.flatnonzero(np.diff(all_ids)) + 1
    for chunk_ids, chunk_xy, chunk_samples in zip(
        np.split(all_ids, bounds),
        np.split(all_xy, bounds),
        np.split(all_samples, bounds),
        strict=True,
    ):
        actor_id = int(chunk_ids[0])
        cuts = np.flatnonzero(np.diff(chunk_samples) != 1) + 1
        segments = [part for part in np.split(chunk_xy, cuts) if len(part)]
        found.append(Track(actor_id, kinds.get(actor_id, "other"), actor_id in hero_ids, segments))
    return found


def collisions(rec: CarlaRecording, span: range, wanted: Collection[int]) -> list[Collision]:
    """The collisions starting inside `span` with at least one wanted actor: a pair in
    contact over consecutive frames counts once, at its first frame (as CARLA's collision
    query prints it)."""
    found: list[Collision] = []
    last: dict[tuple[int, int], int] = {}
    chosen = Selection(first=span.start, stop=span.stop)
    for row in rec.rows(Kind.COLLISION.value, chosen):
        pair = (int(row["actor1_id"]), int(row["actor2_id"]))
        number = int(row["index"])
        previous = last.get(pair)
        last[pair] = number
        if previous is not None and number - previous <= 1:
            continue
        if not set(pair) & set(wanted):
            continue
        actors = rec.frame(number).actors
        places = [actors[a].location for a in pair if a in actors]
        if not places:
            continue
        x = sum(p.x for p in places) / len(places) / CM_PER_M
        y = sum(p.y for p in places) / len(places) / CM_PER_M
        found.append(
            Collision(number, int(row["frame"]), float(row["time"]), pair[0], pair[1], x, y)
        )
    return found


def actor_name(actor_id: int) -> str:
    """An actor id as the picture writes it ("?" for NO_ACTOR)."""
    return "?" if actor_id == NO_ACTOR else str(actor_id)


def footprint(actor: Actor, kind: str) -> npt.NDArray[np.float64]:
    """The actor's box seen from above: 4 corners (m), rear-left first, front edge 1-2."""
    box = actor.bounding_box
    if box is not None and box.extent.x > 0 and box.extent.y > 0:
        half_x, half_y = box.extent.x, box.extent.y
        off_x, off_y = box.location.x, box.location.y
    else:
        half_x, half_y = DEFAULT_EXTENT_CM.get(kind, (50.0, 50.0))
        off_x = off_y = 0.0
    yaw = math.radians(actor.rotation.yaw)
    cos, sin = math.cos(yaw), math.sin(yaw)
    local = np.array(
        [
            [off_x - half_x, off_y - half_y],
            [off_x + half_x, off_y - half_y],
            [off_x + half_x, off_y + half_y],
            [off_x - half_x, off_y + half_y],
        ]
    )
    turn = np.array([[cos, -sin], [sin, cos]])
    corners = local @ turn.T + [actor.location.x, actor.location.y]
    return np.asarray(corners / CM_PER_M, dtype=np.float64)


def traffic_lights(
    lights: Mapping[int, TrafficLight], actors: Mapping[int, Actor], view: View | None
) -> list[tuple[tuple[float, float], str]]:
    """Each positioned traffic light inside `view` (all with None): place (m), colour."""
    found: list[tuple[tuple[float, float], str]] = []
    for light_id, light in lights.items():
        actor = actors.get(light_id)
        if actor is None:
            continue
        x, y = actor.location.x / CM_PER_M, actor.location.y / CM_PER_M
        if view is not None and not (view[0] <= x <= view[1] and view[2] <= y <= view[3]):
            continue
        state = light.state  # None: not recorded yet, drawn as off
        found.append(
            ((x, y), OFF_COLOUR if state is None else LIGHT_COLOURS.get(state, OFF_COLOUR))
        )
    return found


def bounds_of(points: list[npt.NDArray[np.float64]]) -> View | None:
    """The smallest box holding every point (None for no point)."""
    if not points:
        return None
    every = np.concatenate(points)
    low, high = every.min(axis=0), every.max(axis=0)
    return float(low[0]), float(high[0]), float(low[1]), float(high[1])


def margin_of(bounds: View) -> float:
    """The margin the view keeps around `bounds` (m)."""
    return max(MIN_MARGIN_M, MARGIN_SHARE * max(bounds[1] - bounds[0], bounds[3] - bounds[2]))


def frame_view(bounds: View) -> View:
    """The view around `bounds`: a margin (`margin_of`) on every side, the thinner side
    widened (centred) to 1/MAX_RATIO of the longer one when it is thinner than that."""
    margin = margin_of(bounds)
    width = bounds[1] - bounds[0] + 2 * margin
    height = bounds[3] - bounds[2] + 2 * margin
    width, height = max(width, height / MAX_RATIO), max(height, width / MAX_RATIO)
    cx, cy = (bounds[0] + bounds[1]) / 2, (bounds[2] + bounds[3]) / 2
    return cx - width / 2, cx + width / 2, cy - height / 2, cy + height / 2
