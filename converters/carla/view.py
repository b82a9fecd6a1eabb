"""CARLA's top-down world for `nanorec view` (`nanorec.contract.Viewable`): actors as boxes
turned by their yaw, traffic lights by state, the hero followed, recent collisions marked.

CARLA's axes are left-handed (x forward, y to the right, seen from above), so y and yaw are
negated here: the page draws with y up and the picture is not mirrored (`plot` instead
turns its y axis down). Positions are metres (the file's cm / 100).

Rule of the boxes: one box per actor of `World.actors` (every actor alive after the
frame's events: vehicles, walkers, traffic lights, signs, sensors, the spectator), so the
box count equals `len(world.actors)`; each is classed by kind (`KINDS`). Traffic lights are
boxes of their kind *and* points of the `traffic lights` layer, classed by state. A scene
costs one frame's world state (`CarlaRecording.frame`: one message and the event tables,
no replay) plus the collision records of the last `RECENT_S` seconds.
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from nanorec.outputs import layers

from .ids import ActorType, TrafficLightState
from .plot_data import (
    CM_PER_M,
    DEFAULT_EXTENT_CM,
    actor_kinds,
    actor_name,
    collisions,
    heroes,
    tracks,
)
from .world import Actor, World
from .world_build import posed_actors

if TYPE_CHECKING:
    from .recording import CarlaRecording

__all__ = ["KINDS", "LIGHT_STATES", "RECENT_S", "CarlaView"]

#: The box classes: `plot`'s actor kinds, with traffic lights apart from "other".
KINDS = ("vehicle", "bike", "walker", "traffic_light", "other")
#: The traffic-light point classes ("unknown" also for a light with no State record).
LIGHT_STATES = ("red", "yellow", "green", "off", "unknown")
#: Collisions whose frame lies at most this many seconds before the scene's are marked.
RECENT_S = 2.0
#: The overview's hero path and bounds read at most this many evenly spaced frames.
OVERVIEW_FRAMES = 4000
#: role_name values that make an actor the one the view follows ("hero" first, as `plot`).
HERO_ROLES = ("hero", "ego")


class CarlaView:
    """What a `CarlaRecording` shows; built once per recording (the overview is cached)."""

    def __init__(self, rec: CarlaRecording) -> None:
        self.rec = rec

    @cached_property
    def heroes(self) -> list[int]:
        """The followed actors: `plot`'s heroes (role_name "hero"), else role_name "ego"."""
        found = heroes(self.rec)
        if not found:
            tables = self.rec.tables
            found = {
                actor_id
                for row, actor_id in enumerate(tables.spawn_ids.tolist())
                if tables.description(row).attributes.get("role_name") in HERO_ROLES
            }
        return sorted(found)

    @cached_property
    def overview(self) -> dict[str, Any]:
        """Bounds of every actor's positions (paths of sampled frames, and the spawn places
        of actors never positioned, such as traffic lights) and the hero's path as lines."""
        rec, kinds = self.rec, self.kinds
        paths = tracks(rec, range(len(rec)), set(kinds), kinds, OVERVIEW_FRAMES) if len(rec) else []
        hero_ids = set(self.heroes)
        hero_lines = [
            _flip(part) for track in paths if track.actor_id in hero_ids for part in track.segments
        ]
        hero_classes = [
            self.heroes.index(track.actor_id)
            for track in paths
            if track.actor_id in hero_ids
            for _ in track.segments
        ]
        path_layer = layers.lines(
            "hero path", hero_lines, hero_classes, [f"hero {h}" for h in self.heroes]
        )
        placed = [_flip(part) for track in paths for part in track.segments]
        placed.append(self._spawn_places())
        every = np.concatenate(placed) if placed else np.zeros((0, 2))
        bounds = layers.bounds_of([{"x": every[:, 0], "y": every[:, 1]}])
        return {"bounds": bounds, "layers": [path_layer]}

    def _spawn_places(self) -> npt.NDArray[np.float64]:
        """Where unparented traffic lights and signs were spawned (m, y up): the lights the
        scene draws, which no Position record places."""
        tables = self.rec.tables
        found = []
        for row in range(len(tables.spawn_ids)):
            desc = tables.description(row)
            if desc.type in (ActorType.TRAFFIC_LIGHT, ActorType.TRAFFIC_SIGN):
                found.append((desc.location.x / CM_PER_M, -desc.location.y / CM_PER_M))
        return np.array(found, np.float64).reshape(-1, 2)

    def scene(self, number: int) -> dict[str, Any]:
        """The world after frame `number`: boxes, traffic lights, recent collisions, and the
        hero to follow. Raises `OutOfRangeError` outside the recording."""
        world = self.rec.frame(number)
        actors = posed_actors(world)
        scene: dict[str, Any] = {
            "layers": [
                actor_boxes(actors),
                self._lights(world),
                self._collisions(world.index),
            ]
        }
        alive = {actor.id: actor for actor in actors}
        for hero in self.heroes:
            if hero in alive:
                where = alive[hero].location
                scene["follow"] = [where.x / CM_PER_M, -where.y / CM_PER_M]
                break
        return scene

    def _lights(self, world: World) -> dict[str, Any]:
        """Each traffic light with a State record or a TrafficLightTime, at its actor's
        place, classed by its state (`plot_data.traffic_lights` draws the same ones)."""
        xs, ys, states = [], [], []
        for light_id, light in world.traffic_lights.items():
            actor = world.actors.get(light_id)
            if actor is None:
                continue
            xs.append(actor.location.x / CM_PER_M)
            ys.append(-actor.location.y / CM_PER_M)
            states.append(_STATE_CLASS.get(light.state, len(LIGHT_STATES) - 1))
        return layers.points("traffic lights", xs, ys, states, LIGHT_STATES)

    def _collisions(self, number: int) -> dict[str, Any]:
        """The collisions first in contact within `RECENT_S` s before frame `number` (and
        at it), where `plot` marks them, labelled with the actors and the time."""
        times = self.rec.reader.index.timestamp_us
        first = int(np.searchsorted(times, times[number] - round(RECENT_S * 1e6), side="left"))
        hits = collisions(self.rec, range(first, number + 1), set(self.kinds))
        return layers.markers(
            "collisions",
            [hit.x for hit in hits],
            [-hit.y for hit in hits],
            [
                f"collision {actor_name(hit.actor1)}-{actor_name(hit.actor2)} at {hit.time:.2f} s"
                for hit in hits
            ],
        )

    @cached_property
    def kinds(self) -> dict[int, str]:
        """Every actor id the recording spawns, by kind (`plot_data.actor_kinds`, once)."""
        return actor_kinds(self.rec)


_STATE_CLASS: dict[TrafficLightState | None, int] = {
    TrafficLightState.RED: 0,
    TrafficLightState.YELLOW: 1,
    TrafficLightState.GREEN: 2,
    TrafficLightState.OFF: 3,
    TrafficLightState.UNKNOWN: 4,
}


def kind_of(actor: Actor) -> int:
    """The actor's index in `KINDS`, by `plot_data.actor_kinds`'s rule (a vehicle with two
    wheels is a bike) from the description of the spawn alive at the frame."""
    if actor.type == ActorType.VEHICLE:
        return 1 if actor.attributes.get("number_of_wheels") == "2" else 0
    if actor.type == ActorType.WALKER:
        return 2
    if actor.type == ActorType.TRAFFIC_LIGHT:
        return 3
    return 4


def actor_boxes(actors: list[Actor]) -> dict[str, Any]:
    """One box per actor: `plot_data.footprint`'s rectangle (the recorded bounding box,
    offset from the actor's origin and turned by its yaw, else `DEFAULT_EXTENT_CM` of its
    kind, else 1 m square) as centre, yaw, length and width, y flipped."""
    count = len(actors)
    location = np.empty((count, 2))
    yaw = np.empty(count)
    half = np.empty((count, 2))
    offset = np.zeros((count, 2))
    classes = np.empty(count, np.int32)
    for row, actor in enumerate(actors):
        kind = kind_of(actor)
        classes[row] = kind
        location[row] = actor.location.x, actor.location.y
        yaw[row] = actor.rotation.yaw
        box = actor.bounding_box
        if box is not None and box.extent.x > 0 and box.extent.y > 0:
            half[row] = box.extent.x, box.extent.y
            offset[row] = box.location.x, box.location.y
        else:
            half[row] = DEFAULT_EXTENT_CM.get(KINDS[kind], (50.0, 50.0))
    turn = np.radians(yaw)
    cos, sin = np.cos(turn), np.sin(turn)
    centre_x = location[:, 0] + offset[:, 0] * cos - offset[:, 1] * sin
    centre_y = location[:, 1] + offset[:, 0] * sin + offset[:, 1] * cos
    return layers.boxes(
        "actors",
        centre_x / CM_PER_M,
        -centre_y / CM_PER_M,
        -yaw,
        2 * half[:, 0] / CM_PER_M,
        2 * half[:, 1] / CM_PER_M,
        classes,
        KINDS,
    )


def _flip(xy: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """CARLA x, y (m) as the view's: y up."""
    return np.column_stack((xy[:, 0], -xy[:, 1])) if len(xy) else np.zeros((0, 2))
