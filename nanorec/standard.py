"""Standard messages: what a recording of one format hands to a writer of another.

A ROS 2 bag written from a CARLA recording or a Cartographer pbstream (`nanorec export
run.log --format ros2`) needs the recording's content as messages ROS tools understand. A
recording offers them through an optional method `recording.standard_messages(selection)`
yielding `StandardMessage`s, each one of `TYPES`, its value a plain mapping with ROS 2's field
names (times as `{"sec", "nanosec"}`, numeric arrays as numpy arrays). A `TFMessage` of many
transforms may instead be a `Transforms`: the same mapping, its numbers held as arrays, so a
writer can lay them out at once rather than read a dict per transform. The writers (see
`nanorec.contract.ForeignWriter`) hold these types' definitions; the core only names them,
so a format never depends on another.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from nanorec.errors import UnsupportedError
from nanorec.selection import Selection

if TYPE_CHECKING:
    from nanorec.contract import Recording

#: The types a `StandardMessage` may have (ROS 2 names), and what they carry.
TYPES: Mapping[str, str] = {
    "geometry_msgs/msg/PoseStamped": "a pose (an actor, a trajectory node) in a frame",
    "tf2_msgs/msg/TFMessage": "transforms between frames (every actor of a frame)",
    "nav_msgs/msg/OccupancyGrid": "a 2D occupancy map (a pbstream's submaps drawn together)",
}


@dataclass(frozen=True, slots=True)
class StandardMessage:
    """One message: its topic, its type (one of `TYPES`), its time in nanoseconds (Unix time
    for ROS and Cartographer, the recording's own clock otherwise) and its value."""

    topic: str
    type: str
    time_ns: int
    value: Mapping[str, Any]


def standard_messages(
    recording: Recording, selection: Selection | None
) -> Iterator[StandardMessage]:
    """The recording's standard messages in time order (`UnsupportedError` for a recording
    that has none to give)."""
    method = getattr(recording, "standard_messages", None)
    if method is None:
        what = (
            "a plain archive (a NanoVer recording: messages nanorec cannot interpret)"
            if recording.format == "archive"
            else f"a {recording.format} recording"
        )
        raise UnsupportedError(
            f"{what} has no standard messages (poses, transforms, images...) to write as a ROS "
            "bag: only ROS bags, CARLA recordings and pbstreams export to ros1 and ros2"
        )
    yield from method(selection)


def stamp(time_ns: int) -> dict[str, int]:
    """`builtin_interfaces/msg/Time` of a time in nanoseconds."""
    sec, nanosec = divmod(int(time_ns), 1_000_000_000)
    return {"sec": sec, "nanosec": nanosec}


def header(time_ns: int, frame_id: str) -> dict[str, Any]:
    """`std_msgs/msg/Header`."""
    return {"stamp": stamp(time_ns), "frame_id": frame_id}


def pose(position: Sequence[float], orientation: Sequence[float]) -> dict[str, Any]:
    """`geometry_msgs/msg/Pose` from (x, y, z) and a quaternion (x, y, z, w)."""
    x, y, z = (float(v) for v in position)
    qx, qy, qz, qw = (float(v) for v in orientation)
    return {
        "position": {"x": x, "y": y, "z": z},
        "orientation": {"x": qx, "y": qy, "z": qz, "w": qw},
    }


def transform(
    time_ns: int, parent: str, child: str, position: Sequence[float], orientation: Sequence[float]
) -> dict[str, Any]:
    """`geometry_msgs/msg/TransformStamped` (an element of a `TFMessage`'s `transforms`)."""
    placed = pose(position, orientation)
    return {
        "header": header(time_ns, parent),
        "child_frame_id": child,
        "transform": {"translation": placed["position"], "rotation": placed["orientation"]},
    }


@dataclass(frozen=True, eq=False)
class Transforms(Mapping[str, Any]):
    """A `tf2_msgs/msg/TFMessage` as columns: transform i goes from frame `parents[i]` to
    `children[i]`, at `time_ns` (every one), translated by `position[i]` (x, y, z) and
    rotated by `orientation[i]` (x, y, z, w), both float64. As a mapping it is the plain
    value, `{"transforms": [transform(...), ...]}`, built on each lookup."""

    time_ns: int
    parents: tuple[str, ...]
    children: tuple[str, ...]
    position: npt.NDArray[np.float64]
    orientation: npt.NDArray[np.float64]

    def __getitem__(self, key: str) -> Any:
        if key != "transforms":
            raise KeyError(key)
        return [
            transform(self.time_ns, parent, child, p, q)
            for parent, child, p, q in zip(
                self.parents,
                self.children,
                self.position.tolist(),
                self.orientation.tolist(),
                strict=True,
            )
        ]

    def __iter__(self) -> Iterator[str]:
        return iter(("transforms",))

    def __len__(self) -> int:
        return 1
