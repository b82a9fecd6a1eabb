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
compare it with Foxglove's JSON built as dicts: tests/converters/carla/reference/).

Axes. CARLA (Unreal) is left-handed: x forward, y right, z up, centimetres, rotations in
degrees (roll about x, pitch about y with nose up positive, yaw about z turning x toward
+y). Foxglove (ROS REP 103) is right-handed: x forward, y left, z up, metres, radians.
Mirroring y (S = diag(1, -1, 1)) maps a point p to S p and a rotation R to S R S; writing
Unreal's rotation matrix out shows S R(roll, pitch, yaw) S = R_zyx(yaw=-yaw, pitch=-pitch,
roll=roll): roll is kept, pitch and yaw change sign (`to_foxglove`; tested against
Unreal's own matrix formula in `tests/mcap/test_carla_axes.py`).
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from nanorec.errors import UsageError
from nanorec.outputs import mcap_foxglove as fox
from nanorec.outputs.mcap import McapRecord, Progress, Reporter, json_bytes
from nanorec.selection import Selection

from .ids import ActorType
from .message import _DAMAGE
from .world import Actor, World
from .world_build import posed_actors

if TYPE_CHECKING:
    from .recording import CarlaRecording

TOPICS = {
    "tf": "/tf",
    "scene": "/carla/scene",
    "traffic_lights": "/carla/traffic_lights",
    "collisions": "/carla/collisions",
    "events": "/carla/events",
}
SCENERY_IDS = (0, 0xFFFFFFFF)  # actor2 of a collision with the world (before/after 0.9.13)

# type name -> (colour rgba, default box origin offset in cm, default half-size in cm)
_STYLE: dict[str, tuple[tuple[float, ...], tuple[float, ...], tuple[float, ...]]] = {
    "vehicle": ((0.20, 0.45, 0.90, 0.85), (0.0, 0.0, 75.0), (230.0, 100.0, 75.0)),
    "walker": ((1.00, 0.55, 0.10, 0.85), (0.0, 0.0, 0.0), (25.0, 25.0, 90.0)),
    "traffic_light": ((0.50, 0.50, 0.50, 0.85), (0.0, 0.0, 200.0), (25.0, 25.0, 200.0)),
    "traffic_sign": ((0.90, 0.90, 0.90, 0.85), (0.0, 0.0, 100.0), (10.0, 50.0, 100.0)),
    "sensor": ((0.60, 0.20, 0.80, 0.85), (0.0, 0.0, 0.0), (10.0, 10.0, 10.0)),
    "other": ((0.60, 0.60, 0.60, 0.85), (0.0, 0.0, 50.0), (50.0, 50.0, 50.0)),
}
_KIND_CODES = {name: code for code, name in enumerate(_STYLE)}
_DEFAULT_OFFSET = np.array([style[1] for style in _STYLE.values()], np.float64)
_DEFAULT_EXTENT = np.array([style[2] for style in _STYLE.values()], np.float64)
_LIGHT_COLOURS = {
    "RED": (0.90, 0.10, 0.10, 0.9),
    "YELLOW": (0.95, 0.80, 0.10, 0.9),
    "GREEN": (0.10, 0.80, 0.20, 0.9),
}
_COLOURS = {
    name: fox.color(*rgba)
    for name, rgba in [*((k, v[0]) for k, v in _STYLE.items()), *_LIGHT_COLOURS.items()]
}
_BY_TYPE = {
    ActorType.VEHICLE: "vehicle",
    ActorType.WALKER: "walker",
    ActorType.TRAFFIC_LIGHT: "traffic_light",
    ActorType.TRAFFIC_SIGN: "traffic_sign",
    ActorType.SENSOR: "sensor",
}

TRAFFIC_LIGHTS_SCHEMA = json_bytes(
    {
        "title": "carla.TrafficLights",
        "description": "CARLA traffic-light states of one frame (times in seconds)",
        "type": "object",
        "properties": {
            "timestamp": {
                "type": "object",
                "properties": {"sec": {"type": "integer"}, "nsec": {"type": "integer"}},
            },
            "frame_id": {"type": "integer", "description": "CARLA's frame number"},
            "lights": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "id": {"type": "integer"},
                        "state": {"type": ["string", "null"]},
                        "is_frozen": {"type": ["boolean", "null"]},
                        "elapsed_time": {"type": ["number", "null"]},
                        "green_time": {"type": ["number", "null"]},
                        "yellow_time": {"type": ["number", "null"]},
                        "red_time": {"type": ["number", "null"]},
                    },
                },
            },
        },
        "required": ["timestamp", "frame_id", "lights"],
    }
)


def to_foxglove(
    location_cm: npt.ArrayLike, rotation_deg: npt.ArrayLike
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """CARLA poses to Foxglove: (n, 3) locations in cm and (n, 3) pitch/yaw/roll in degrees
    (CARLA's `carla.Rotation` order) give (n, 3) positions in metres and (n, 4) x/y/z/w
    quaternions (see the module docstring for the axes)."""
    loc = np.asarray(location_cm, np.float64).reshape(-1, 3)
    rot = np.radians(np.asarray(rotation_deg, np.float64).reshape(-1, 3))
    position = loc * np.array([0.01, -0.01, 0.01])
    half_pitch, half_yaw, half_roll = -rot[:, 0] / 2, -rot[:, 1] / 2, rot[:, 2] / 2
    cr, sr = np.cos(half_roll), np.sin(half_roll)
    cp, sp = np.cos(half_pitch), np.sin(half_pitch)
    cy, sy = np.cos(half_yaw), np.sin(half_yaw)
    quaternion = np.stack(
        [
            sr * cp * cy - cr * sp * sy,
            cr * sp * cy + sr * cp * sy,
            cr * cp * sy - sr * sp * cy,
            cr * cp * cy + sr * sp * sy,
        ],
        axis=1,
    )
    return position, quaternion


def rotate(quaternion: npt.NDArray[np.float64], v: npt.NDArray[np.float64]) -> Any:
    """Each (x, y, z, w) quaternion applied to the vector of the same row."""
    u, w = quaternion[:, :3], quaternion[:, 3:]
    t = 2 * _cross(u, v)
    return v + w * t + _cross(u, t)


def _cross(a: npt.NDArray[np.float64], b: npt.NDArray[np.float64]) -> Any:
    """`np.cross` of (n, 3) rows, the same operations (so the same floats) without its
    axis handling, which costs more than the products on a frame's few hundred rows."""
    a0, a1, a2 = a.T
    b0, b1, b2 = b.T
    return np.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=1)


def type_name(actor: Actor) -> str:
    """vehicle, walker, traffic_light, traffic_sign, sensor or other: from the blueprint
    (stable across releases), else from EventAdd's type byte."""
    return _type_name(actor.type_id, actor.type)


@functools.lru_cache(maxsize=4096)
def _type_name(blueprint: str, actor_type: ActorType | int) -> str:
    for prefix, name in (
        ("vehicle.", "vehicle"),
        ("walker.", "walker"),
        ("traffic.traffic_light", "traffic_light"),
        ("traffic.", "traffic_sign"),
        ("sensor.", "sensor"),
    ):
        if blueprint.startswith(prefix):
            return name
    return _BY_TYPE.get(actor_type, "other") if isinstance(actor_type, ActorType) else "other"


def reference_frame(actor: Actor) -> str:
    """The frame an actor's pose is in: `world`, except for an attached actor CARLA never
    positioned (sensors), whose only pose is its spawn transform, relative to its parent
    (spec §5.2 marks this uncertain; Foxglove then places it through `/tf`)."""
    description = actor.description
    if (
        actor.parent_id is not None
        and actor.pose_index == actor.spawn_index
        and actor.location == description.location
        and actor.rotation == description.rotation
    ):
        return f"actor/{actor.parent_id}"
    return "world"


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
    from .mcap_frames import RUN_FRAMES, FrameDrawer

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
        except _DAMAGE:  # the reference path says what is wrong
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
    from . import mcap_proto

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
    location = _vectors([a.location for a in actors])
    rotation = _vectors([a.rotation for a in actors])
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


def _vectors(items: list[Any]) -> npt.NDArray[np.float64]:
    """(n, 3) floats from n 3-tuples (ten times faster than `np.array` on named tuples)."""
    flat = itertools.chain.from_iterable(items)
    return np.fromiter(flat, np.float64, 3 * len(items)).reshape(-1, 3)


def _boxes(
    actors: list[Actor], position: npt.NDArray[np.float64], quaternion: npt.NDArray[np.float64]
) -> tuple[list[str], npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Each actor's type name, and its cube's centre and full size in metres."""
    kinds = [type_name(actor) for actor in actors]
    codes = np.fromiter((_KIND_CODES[kind] for kind in kinds), np.intp, len(kinds))
    offset, extent = _DEFAULT_OFFSET[codes], _DEFAULT_EXTENT[codes]
    boxes = [(row, box) for row, box in enumerate(a.bounding_box for a in actors) if box]
    if boxes:
        values = np.fromiter(
            itertools.chain.from_iterable((*box.location, *box.extent) for _, box in boxes),
            np.float64,
            6 * len(boxes),
        ).reshape(-1, 6)
        # CARLA records an empty box (NaN origin, -inf extent) for actors without bounds
        # (spectator, sensors): those keep the type's default, like actors with no box.
        usable = np.isfinite(values).all(axis=1)
        rows = np.fromiter((row for row, _ in boxes), np.intp, len(boxes))[usable]
        offset[rows], extent[rows] = values[usable, :3], values[usable, 3:]
    centre = position + rotate(quaternion, offset * np.array([0.01, -0.01, 0.01]))
    size = np.abs(extent) * 0.02  # half-size in cm -> full size in m
    return kinds, centre, size


@functools.lru_cache(maxsize=1 << 16)
def _labels(
    actor_id: int,
    blueprint: str,
    kind: str,
    role: str | None,
    parent: int | None,
    state: str | None,
) -> tuple[list[dict[str, str]], Any]:
    """An entity's metadata and colour from what they depend on; the same objects frame
    after frame (the JSON encoder only reads them), so a frame does not rebuild them."""
    metadata = [
        {"key": "id", "value": str(actor_id)},
        {"key": "blueprint", "value": blueprint},
        {"key": "type", "value": kind},
    ]
    if role:
        metadata.append({"key": "role_name", "value": role})
    if parent is not None:
        metadata.append({"key": "parent", "value": str(parent)})
    colour = _COLOURS[kind]
    if state is not None:
        metadata.append({"key": "state", "value": state})
        colour = _COLOURS.get(state, colour)
    return metadata, colour


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
    "TOPICS",
    "drawable_poses",
    "frame_records",
    "json_records",
    "mcap_messages",
    "parse_topics",
    "reference_frame",
    "rotate",
    "to_foxglove",
    "type_name",
]
