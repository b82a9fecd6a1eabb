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

from collections.abc import Mapping
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from nanorec.outputs import layers

from .ids import ActorType, Kind, TrafficLightState
from .message import records
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
#: The traffic-light point classes, in `TrafficLightState`'s numbering ("unknown" also for
#: a light with no State record in the frame, or a state byte CARLA does not define).
LIGHT_STATES = tuple(state.name.lower() for state in TrafficLightState)
#: Collisions whose frame lies at most this many seconds before the scene's are marked.
RECENT_S = 2.0
#: The overview's hero path and bounds read at most this many evenly spaced frames.
OVERVIEW_FRAMES = 4000
#: Half-sizes (cm) of an actor of no kind `plot` sizes (a light, a sensor): `footprint`'s.
_OTHER_CM = (50.0, 50.0)
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
        """Where traffic lights and signs were spawned (m, y up): the lights the scene draws,
        which no Position record places."""
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
        alive = {actor.id: actor for actor in actors}
        scene: dict[str, Any] = {
            "layers": [
                actor_boxes(actors),
                self._lights(world, alive),
                self._collisions(world.index),
            ]
        }
        for hero in self.heroes:
            if hero in alive:
                where = alive[hero].location
                scene["follow"] = [where.x / CM_PER_M, -where.y / CM_PER_M]
                break
        return scene

    def _lights(self, world: World, alive: Mapping[int, Actor]) -> dict[str, Any]:
        """Each traffic light of `world.traffic_lights` (a State record or a
        TrafficLightTime) that is a live actor, at its place, classed by the frame's State
        record ("unknown" without one): what `plot_data.traffic_lights` draws, read from the
        frame's records instead of building a `TrafficLight` and a full `Actor` per light."""
        states = records(self.rec.frame_map(world.index), Kind.STATE, self.rec.family.engine)
        codes = dict(zip(states["id"].tolist(), states["state"].tolist(), strict=True))
        unknown = len(LIGHT_STATES) - 1
        xs, ys, classes = [], [], []
        for light_id in world.traffic_lights:
            actor = alive.get(light_id)
            if actor is not None:
                xs.append(actor.location.x / CM_PER_M)
                ys.append(-actor.location.y / CM_PER_M)
                code = codes.get(light_id)
                classes.append(code if code is not None and 0 <= code < unknown else unknown)
        return layers.points("traffic lights", xs, ys, classes, LIGHT_STATES)

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
    rows = []
    for actor in actors:
        kind = kind_of(actor)
        box = actor.bounding_box
        if box is not None and box.extent.x > 0 and box.extent.y > 0:
            half_x, half_y, off_x, off_y = (
                box.extent.x,
                box.extent.y,
                box.location.x,
                box.location.y,
            )
        else:
            (half_x, half_y), off_x, off_y = DEFAULT_EXTENT_CM.get(KINDS[kind], _OTHER_CM), 0, 0
        place, turn = actor.location, actor.rotation.yaw
        rows.append((place.x, place.y, turn, half_x, half_y, off_x, off_y, kind))
    table = np.array(rows, np.float64).reshape(-1, 8)
    x, y, yaw, half_x, half_y, off_x, off_y, kinds = table.T
    cos, sin = np.cos(np.radians(yaw)), np.sin(np.radians(yaw))
    centre_x = x + off_x * cos - off_y * sin
    centre_y = y + off_x * sin + off_y * cos
    return layers.boxes(
        "actors",
        centre_x / CM_PER_M,
        -centre_y / CM_PER_M,
        -yaw,
        2 * half_x / CM_PER_M,
        2 * half_y / CM_PER_M,
        kinds,
        KINDS,
    )


def _flip(xy: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """CARLA x, y (m) as the view's: y up."""
    return np.column_stack((xy[:, 0], -xy[:, 1])) if len(xy) else np.zeros((0, 2))
