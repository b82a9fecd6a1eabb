"""A CARLA recording's standard messages (`standard.py`) a run of frames at once: what
`CarlaRecording.standard_messages` gives.

`standard.frame_messages` builds a frame's `World` (an `Actor` per live actor), then a dict
per transform: right for one frame, but a bag of a long recording holds millions of
transforms. Here the frames of a run that share their live actors and the order of their
Position records are read from the archive's arrays as the MCAP export reads them
(`mcap_frames.FrameDrawer.run_poses`): the poses of the whole run are one array, turned
into ROS axes at once (`mcap_scene.to_foxglove`, the same operations on the same floats), and
frame's `/tf` is a `standard.Transforms` (columns, no dict per transform). Frame names and
the hero are worked out once per actor.

A frame this path does not take (spawns, destructions, an actor whose pose is in an
earlier frame, a pose that is not finite, repeated ids) goes through `frame_messages`; the
messages are the same either way (`tests/converters/carla/test_standard_runs.py`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import TYPE_CHECKING

import numpy as np

from nanorec import standard
from nanorec.selection import Selection

from .mcap_frames import RUN_FRAMES, FrameDrawer, FrameMap, Poses
from .mcap_scene import to_foxglove
from .standard import (
    FIXED_FRAME,
    HERO_TOPIC,
    POSE_TYPE,
    TF_TOPIC,
    TF_TYPE,
    frame_messages,
    frame_name,
    parse_topics,
)

if TYPE_CHECKING:
    from .recording import CarlaRecording

Messages = list[standard.StandardMessage]


class _Runs:
    """The standard messages of runs of frames, from `FrameDrawer`'s poses."""

    def __init__(self, recording: CarlaRecording, topics: frozenset[str]) -> None:
        self.drawer = FrameDrawer(recording, set())
        self.topics = topics
        self.names: dict[int, str] = {}
        self.heroes: dict[int, bool] = {}

    def name(self, actor_id: int) -> str:
        found = self.names.get(actor_id)
        if found is None:
            found = self.names[actor_id] = frame_name(actor_id)
        return found

    def hero(self, row: int) -> bool:
        found = self.heroes.get(row)
        if found is None:
            role = self.drawer.tables.description(row).attributes.get("role_name")
            found = self.heroes[row] = role == "hero"
        return found

    def run(
        self, numbers: list[int], times: list[int], frames: list[FrameMap], poses: Poses
    ) -> list[Messages | None]:
        count = len(numbers)
        got = self.drawer.run_poses(numbers, poses)
        if got is None or not np.isfinite(got.pose).all():
            return [None] * count
        rows, ids, pose, at_spawn, parent, earlier = got.fields()
        n = len(rows)
        position, quaternion = to_foxglove(pose[..., :3].reshape(-1, 3), pose[..., 3:])
        position, quaternion = position.reshape(count, n, 3), quaternion.reshape(count, n, 4)
        children = tuple(self.name(actor_id) for actor_id in ids.tolist())
        parent_names = [FIXED_FRAME if p < 0 else self.name(p) for p in parent.tolist()]
        world = ~(at_spawn & (parent >= 0)[None, :])
        heroes = [row for row in range(n) if self.hero(int(rows[row]))]
        hero = min(heroes, key=lambda row: int(ids[row])) if heroes else None
        layouts: dict[bytes, tuple[str, ...]] = {}
        out: list[Messages | None] = []
        for f, time_ns in enumerate(times):
            if earlier[f]:
                out.append(None)
                continue
            key = world[f].tobytes()
            parents = layouts.get(key)
            if parents is None:
                parents = layouts[key] = tuple(
                    FIXED_FRAME if placed else name
                    for placed, name in zip(world[f].tolist(), parent_names, strict=True)
                )
            messages: Messages = []
            if TF_TOPIC in self.topics and n:
                value = standard.Transforms(time_ns, parents, children, position[f], quaternion[f])
                messages.append(standard.StandardMessage(TF_TOPIC, TF_TYPE, time_ns, value))
            if HERO_TOPIC in self.topics and hero is not None:
                pose_value = {
                    "header": standard.header(time_ns, parents[hero]),
                    "pose": standard.pose(position[f, hero].tolist(), quaternion[f, hero].tolist()),
                }
                messages.append(
                    standard.StandardMessage(HERO_TOPIC, POSE_TYPE, time_ns, pose_value)
                )
            out.append(messages)
        return out


def standard_messages(
    recording: CarlaRecording, selection: Selection | None
) -> Iterator[standard.StandardMessage]:
    """The selected frames' `/tf` and hero pose, frame by frame in time order (see
    `standard.py`).

    The selection is checked here, before the first message (an empty range or an unknown
    kind raises `EmptySelectionError` at the call, as every verb does: the range is judged
    without the kinds, which name topics here, not the archive's message kind)."""
    selection = selection or Selection()
    topics = parse_topics(selection.kinds)
    by_range = dataclasses.replace(selection, kinds=None)
    index = recording.reader.index
    numbers = by_range.numbers(index) if by_range.everything else by_range.chosen(index)
    return run_messages(recording, numbers.tolist(), topics)


def run_messages(
    recording: CarlaRecording, numbers: list[int], topics: frozenset[str]
) -> Iterator[standard.StandardMessage]:
    """The standard messages of frames `numbers` on `topics`, in order (as
    `standard.frame_messages` of each frame's world)."""
    runs = _Runs(recording, topics)
    stamps = recording.reader.index.timestamp_us
    for lo in range(0, len(numbers), RUN_FRAMES):
        chunk = numbers[lo : lo + RUN_FRAMES]
        times = [int(stamps[number]) * 1000 for number in chunk]
        drawn = runs.drawer.runs(chunk, times, runs.run)
        for number, time_ns, messages in zip(chunk, times, drawn, strict=True):
            if messages is None:
                messages = list(frame_messages(recording.frame(number), time_ns, topics))
            yield from messages


__all__ = ["run_messages", "standard_messages"]
