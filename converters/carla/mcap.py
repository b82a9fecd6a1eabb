"""A CARLA recording as Foxglove messages for MCAP export (`nanorec.outputs.mcap`).

One frame gives, all at the frame's time (the archive index's microseconds, i.e. CARLA's
elapsed seconds; MCAP's sequence number is the archive frame number):

- `/tf` (`foxglove.FrameTransforms`): `world` -> `actor/<id>` for every live actor (an
  attached actor never positioned, a sensor, hangs from its parent: `reference_frame`);
- `/carla/scene` (`foxglove.SceneUpdate`): one cube per live actor (not the spectator),
  from its recorded bounding box, else (none, or CARLA's empty NaN/-inf box) a per-type
  default size; coloured by type (traffic lights by their state); id, blueprint, type,
  role name and parent as metadata; actors destroyed in the frame are deleted;
- `/carla/traffic_lights` (`carla.TrafficLights`, our own JSON Schema): each light's state;
- `/carla/collisions` and `/carla/events` (`foxglove.Log`): collisions (warnings), spawns
  and destructions (info).

Every frame repeats every live actor, so a viewer that seeks shows the full scene at once.
An actor whose pose is not finite is left out of that frame. `/tf` and `/carla/scene` are
Foxglove's protobuf (`mcap_proto`: every double of every actor of every frame, written by
numpy), the others JSON. Frames are drawn in runs from the archive's arrays
(`mcap_frames`); `frame_records` is the reference path, one `World` at a time (the tests
compare it with Foxglove's JSON built as dicts: tests/converters/carla/reference/). What
every path shares (topics, colours and default boxes, the axes below) is `mcap_scene`.

Axes. CARLA (Unreal) is left-handed: x forward, y right, z up, centimetres, rotations in
degrees (roll about x, pitch about y with nose up positive, yaw about z turning x toward
+y). Foxglove (ROS REP 103) is right-handed: x forward, y left, z up, metres, radians.
Mirroring y (S = diag(1, -1, 1)) maps a point p to S p and a rotation R to S R S; writing
Unreal's rotation matrix out shows S R(roll, pitch, yaw) S = R_zyx(yaw=-yaw, pitch=-pitch,
roll=roll): roll is kept, pitch and yaw change sign (`mcap_scene.to_foxglove`; tested against
Unreal's own matrix formula in `tests/mcap/test_carla_axes.py`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from nanorec.errors import UsageError
from nanorec.outputs import mcap_foxglove as fox
from nanorec.outputs.mcap import McapRecord, Progress, Reporter, json_bytes
from nanorec.selection import Selection

from . import mcap_proto
from .mcap_frames import RUN_FRAMES, FrameDrawer
from .mcap_scene import TOPICS, TRAFFIC_LIGHTS_SCHEMA, to_foxglove, vectors
from .message import DAMAGE
from .world import Actor, World
from .world_build import posed_actors

if TYPE_CHECKING:
    from .recording import CarlaRecording

SCENERY_IDS = (0, 0xFFFFFFFF)  # actor2 of a collision with the world (before/after 0.9.13)


def parse_topics(kinds: frozenset[str] | None) -> set[str]:
    """The MCAP topics a selection's kinds name (`scene` or `/carla/scene`; `frame`, the
    archive's message kind, means all). Raises `UsageError` for anything else."""
    if kinds is None or "frame" in kinds:
        return set(TOPICS.values())
    topics: set[str] = set()
    for kind in kinds:
        topic = TOPICS.get(kind, kind)
        if topic not in TOPICS.values():
            names = ", ".join(sorted(TOPICS)) + ", " + ", ".join(sorted(TOPICS.values()))
            raise UsageError(f"no MCAP topic {kind!r} in a CARLA export (topics: {names})")
        topics.add(topic)
    return topics


def mcap_messages(
    recording: CarlaRecording, selection: Selection | None, progress: Progress | None = None
) -> Iterator[McapRecord]:
    """The selected frames as Foxglove messages, frame by frame in time order
    (`progress(done, total)` in frames). Frames are drawn in runs from the archive's arrays
    (`mcap_frames`); a frame that path leaves out goes through `frame_records`."""
    selection = selection or Selection()
    topics = parse_topics(selection.kinds)
    numbers = dataclasses.replace(selection, kinds=None).numbers(recording.reader.index)
    stamps = recording.reader.index.timestamp_us
    reporter = Reporter(progress, len(numbers), every=RUN_FRAMES)
    drawer = FrameDrawer(recording, topics)
    for lo in range(0, len(numbers), RUN_FRAMES):
        run = numbers[lo : lo + RUN_FRAMES].tolist()
        times = [int(stamps[number]) * 1000 for number in run]
        try:
            drawn = drawer.draw(run, times)
        except DAMAGE:  # the reference path says what is wrong
            drawn = [None] * len(run)
        for number, time_ns, records in zip(run, times, drawn, strict=True):
            if records is None:
                yield from frame_records(recording.frame(number), time_ns, topics)
            else:
                yield from records
            reporter.step()
    reporter.done()


def frame_records(
    world: World, time_ns: int, topics: set[str], actors: list[Actor] | None = None
) -> Iterator[McapRecord]:
    """One frame's messages on `topics`, all logged at `time_ns`. `actors`: the world's
    actors in order (by default built only as far as drawing needs, `posed_actors`).
    `/tf` and `/carla/scene` are protobuf (`mcap_proto`), the others JSON (`json_records`)."""
    drawn, position, quaternion = drawable_poses(world, actors)
    yield from mcap_proto.frame_records(world, drawn, position, quaternion, time_ns, topics)
    yield from json_records(world, time_ns, topics)


def drawable_poses(
    world: World, actors: list[Actor] | None = None
) -> tuple[list[Actor], npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """The actors of a frame that can be drawn (`actors`, by default `posed_actors`), with
    their positions (metres) and quaternions in Foxglove's axes: an actor whose pose is not
    finite is left out of the frame."""
    actors = posed_actors(world) if actors is None else actors
    location = vectors([a.location for a in actors])
    rotation = vectors([a.rotation for a in actors])
    finite = np.isfinite(location).all(axis=1) & np.isfinite(rotation).all(axis=1)
    if not finite.all():  # a pose nobody can draw: leave the actor out of this frame
        actors = [actors[row] for row in np.flatnonzero(finite).tolist()]
        location, rotation = location[finite], rotation[finite]
    position, quaternion = to_foxglove(location, rotation)
    return actors, position, quaternion


def json_records(world: World, time_ns: int, topics: set[str]) -> Iterator[McapRecord]:
    """One frame's JSON messages on `topics`: traffic lights, events and collisions."""
    sequence = world.index
    if TOPICS["traffic_lights"] in topics and world.traffic_lights:
        yield McapRecord(
            TOPICS["traffic_lights"],
            "carla.TrafficLights",
            "jsonschema",
            TRAFFIC_LIGHTS_SCHEMA,
            "json",
            time_ns,
            time_ns,
            json_bytes(_lights(world, time_ns)),
            sequence=sequence,
        )
    if TOPICS["events"] in topics:
        yield from _events(world, time_ns)
    if TOPICS["collisions"] in topics:
        for hit in world.events.collisions:
            text = f"collision: {_who(world, hit.actor1_id, hit.is_actor1_hero)} hit "
            text += (
                "the scenery"
                if hit.actor2_id in SCENERY_IDS
                else _who(world, hit.actor2_id, hit.is_actor2_hero)
            )
            message = fox.log(time_ns, fox.LOG_WARNING, text, "carla")
            yield fox.record(
                TOPICS["collisions"], "foxglove.Log", time_ns, message, sequence=sequence
            )


def _lights(world: World, time_ns: int) -> dict[str, Any]:
    return {
        "timestamp": fox.stamp(time_ns),
        "frame_id": world.frame_id,
        "lights": [
            {
                "id": light.id,
                "state": None if light.state is None else light.state.name,
                "is_frozen": light.is_frozen,
                "elapsed_time": light.elapsed_time,
                "green_time": light.green_time,
                "yellow_time": light.yellow_time,
                "red_time": light.red_time,
            }
            for light in sorted(world.traffic_lights.values(), key=lambda light: light.id)
        ],
    }


def _events(world: World, time_ns: int) -> Iterator[McapRecord]:
    texts = [f"spawned actor {d.id} ({d.type_id})" for d in world.events.spawned]
    texts += [f"destroyed actor {actor_id}" for actor_id in world.events.destroyed]
    for text in texts:
        message = fox.log(time_ns, fox.LOG_INFO, text, "carla")
        yield fox.record(TOPICS["events"], "foxglove.Log", time_ns, message, sequence=world.index)


def _who(world: World, actor_id: int, hero: bool) -> str:
    actor = world.actors.get(actor_id)
    name = f"actor {actor_id}" + ("" if actor is None else f" ({actor.type_id})")
    return name + (" [hero]" if hero else "")


__all__ = [
    "drawable_poses",
    "frame_records",
    "json_records",
    "mcap_messages",
    "parse_topics",
]
