"""A CARLA recording as standard messages (`nanorec.standard`), for writers of other formats
(a ROS 2 bag: `nanorec export run.log --format ros2`).

Each selected frame gives, at the frame's time:

- `/tf` (`tf2_msgs/msg/TFMessage`): one `TransformStamped` per live actor whose pose is
  finite, `map` -> `actor_<id>` (an attached actor CARLA never positioned, a sensor, hangs
  from its parent, `actor_<parent>`, as `mcap.reference_frame` says). Every frame repeats
  every live actor, as the MCAP export does, so a reader that seeks sees the whole scene.
  Frame names follow ROS habits (no slashes, `map` as the fixed frame, as the CARLA ROS
  bridge names it) rather than the MCAP export's `world`/`actor/<id>`.
- `/carla/hero/pose` (`geometry_msgs/msg/PoseStamped`, frame `map`): the hero's pose, when a
  live actor has role_name "hero" (as `plot_data.heroes` finds the heroes the plot draws); with
  several, the lowest live one (a stable choice: it does not hang on the order actors are
  stored in; should that hero be destroyed, the topic follows the next one).

Axes: CARLA (Unreal) is left-handed, x forward, y right, z up, centimetres and degrees
(pitch, yaw, roll); ROS (REP 103) is right-handed, x forward, y left, z up, metres. As the
CARLA ROS bridge does (`carla_location_to_ros_vector3`, `carla_rotation_to_ros_quaternion`)
a location becomes (x, -y, z) and a rotation the quaternion of the Euler angles
(roll, -pitch, -yaw): mirroring y. This is `mcap.to_foxglove`, reused so both exports agree
(its module docstring derives it; `tests/mcap/test_carla_axes.py` checks it against Unreal).

Time: CARLA records no Unix time per frame (the header's `date` is the recording's start in
whole seconds, too coarse for a clock), so messages carry the recording's own clock, the
frame's elapsed seconds as nanoseconds (the archive index's microseconds), as the MCAP export
and `nanorec.standard` say for formats without Unix time.

Frames are read a run of at most `mcap_frames.RUN_FRAMES` at a time
(`standard_runs.standard_messages`: a run's poses as arrays; `frame_messages` here is the
reference, for the frames it does not take), so memory stays bounded whatever the
recording's length.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import numpy as np

from nanorec import standard
from nanorec.errors import EmptySelectionError

from .mcap_scene import reference_frame, to_foxglove, vectors
from .world import Actor, World
from .world_build import posed_actors

if TYPE_CHECKING:
    pass

TF_TOPIC = "/tf"
HERO_TOPIC = "/carla/hero/pose"
TF_TYPE = "tf2_msgs/msg/TFMessage"
POSE_TYPE = "geometry_msgs/msg/PoseStamped"
FIXED_FRAME = "map"

#: What a selection's kinds (`--type`/`--topic`) may name: topics, their short names, their
#: types; `frame` (the archive's message kind) keeps both.
KIND_TOPICS: dict[str, frozenset[str]] = {
    "frame": frozenset({TF_TOPIC, HERO_TOPIC}),
    TF_TOPIC: frozenset({TF_TOPIC}),
    "tf": frozenset({TF_TOPIC}),
    TF_TYPE: frozenset({TF_TOPIC}),
    HERO_TOPIC: frozenset({HERO_TOPIC}),
    "hero": frozenset({HERO_TOPIC}),
    POSE_TYPE: frozenset({HERO_TOPIC}),
}


def frame_name(actor_id: int) -> str:
    """The tf frame of an actor."""
    return f"actor_{actor_id}"


def parse_topics(kinds: frozenset[str] | None) -> frozenset[str]:
    """The topics a selection's kinds keep (all for none). An unknown kind is an
    `EmptySelectionError` listing what there is, as the MCAP export refuses one: a typo
    would otherwise write an empty bag without a word."""
    if kinds is None:
        return KIND_TOPICS["frame"]
    unknown = sorted(kinds - KIND_TOPICS.keys())
    if unknown:
        raise EmptySelectionError(
            f"--type {', '.join(unknown)} selects nothing: a CARLA recording's standard "
            f"messages are on {TF_TOPIC} and {HERO_TOPIC} (kinds: {', '.join(KIND_TOPICS)})"
        )
    return frozenset().union(*(KIND_TOPICS[kind] for kind in kinds))


def frame_messages(
    world: World, time_ns: int, topics: frozenset[str] = KIND_TOPICS["frame"]
) -> Iterator[standard.StandardMessage]:
    """One frame's standard messages on `topics`, all at `time_ns`."""
    actors = posed_actors(world)
    location = vectors([a.location for a in actors])
    rotation = vectors([a.rotation for a in actors])
    finite = np.isfinite(location).all(axis=1) & np.isfinite(rotation).all(axis=1)
    if not finite.all():  # a pose nobody can place: leave the actor out of this frame
        actors = [actors[row] for row in np.flatnonzero(finite).tolist()]
        location, rotation = location[finite], rotation[finite]
    converted = to_foxglove(location, rotation)
    position, quaternion = converted[0].tolist(), converted[1].tolist()
    if TF_TOPIC in topics and actors:
        transforms = [
            standard.transform(time_ns, reference_frame_name(actor), frame_name(actor.id), p, q)
            for actor, p, q in zip(actors, position, quaternion, strict=True)
        ]
        yield standard.StandardMessage(TF_TOPIC, TF_TYPE, time_ns, {"transforms": transforms})
    if HERO_TOPIC in topics:
        row = hero_row(actors)
        if row is not None:
            value = {
                "header": standard.header(time_ns, reference_frame_name(actors[row])),
                "pose": standard.pose(position[row], quaternion[row]),
            }
            yield standard.StandardMessage(HERO_TOPIC, POSE_TYPE, time_ns, value)


def hero_row(actors: list[Actor]) -> int | None:
    """The row of the hero (role_name "hero", the lowest id if several), None without one."""
    rows = [row for row, a in enumerate(actors) if a.attributes.get("role_name") == "hero"]
    return min(rows, key=lambda row: actors[row].id) if rows else None


def reference_frame_name(actor: Actor) -> str:
    """The tf frame an actor's pose is given in: `map`, or its parent's frame for an attached
    actor never positioned (see `mcap.reference_frame`)."""
    parent = reference_frame(actor)
    return FIXED_FRAME if parent == "world" else frame_name(int(parent.split("/", 1)[1]))


__all__ = [
    "HERO_TOPIC",
    "KIND_TOPICS",
    "TF_TOPIC",
    "frame_messages",
    "frame_name",
    "hero_row",
    "parse_topics",
    "reference_frame_name",
]
