"""A pbstream as Foxglove messages for MCAP export (`nanorec.outputs.mcap`). Each record gives its
messages at its own index time, so a time range keeps exactly the records inside it:

- node: `/pbstream/node_pose` (`foxglove.PoseInFrame` in `map`, the optimised pose, or the
  local one for trajectories the pose graph does not hold) and `/tf`
  (`foxglove.FrameTransform` map -> `trajectory_<id>`);
- odometry and fixed-frame pose data: `/pbstream/odometry`, `/pbstream/fixed_frame_pose`
  (`foxglove.PoseInFrame`, in the frame of their trajectory's sensor data);
- pose graph: `/pbstream/trajectories` (`foxglove.SceneUpdate`, one line strip per
  trajectory) and `/pbstream/map` (`foxglove.Grid`: the assembled 2D occupancy grid, int8
  0-100, -1 unknown) when the file has 2D submaps.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import numpy as np

from nanorec.errors import UsageError
from nanorec.outputs import mcap_foxglove as fox
from nanorec.outputs.mcap import McapRecord
from nanorec.selection import Selection

from .decode import decode_record
from .pose import pose7
from .records import FIXED_FRAME, NODE, ODOMETRY, POSE_GRAPH

if TYPE_CHECKING:
    from .recording import PbstreamRecording

_COLOURS = [(0.12, 0.47, 0.71, 1.0), (1.0, 0.5, 0.05, 1.0), (0.17, 0.63, 0.17, 1.0)]


def _node_poses(rec: PbstreamRecording) -> dict[tuple[int, int], tuple[float, ...]]:
    found: dict[tuple[int, int], tuple[float, ...]] = {}
    for tid, poses in rec.trajectories().items():
        table = np.concatenate([poses.translation, poses.rotation], axis=1).tolist()
        found.update(
            {(tid, i): tuple(row) for i, row in zip(poses.index.tolist(), table, strict=True)}
        )
    return found


def _pose_graph_records(rec: PbstreamRecording, time_ns: int, number: int) -> Iterator[McapRecord]:
    entities = []
    for k, (tid, poses) in enumerate(rec.trajectories().items()):
        points = poses.translation if len(poses) else np.zeros((0, 3))
        line = fox.line_strip(points, _COLOURS[k % len(_COLOURS)], 0.05)
        entities.append(
            fox.entity(time_ns, "map", f"trajectory_{tid}", {"source": poses.source}, lines=[line])
        )
    yield fox.record(
        "/pbstream/trajectories",
        "foxglove.SceneUpdate",
        time_ns,
        {"deletions": [], "entities": entities},
        sequence=number,
    )
    from .rosmap import assemble

    try:
        grid = assemble(rec)
    except UsageError:
        return
    cells = fox.occupancy_from_probability(grid.probability()[::-1])  # row 0 at lowest y
    message = fox.occupancy_grid(
        time_ns, "map", cells, grid.resolution, (grid.origin[0], grid.origin[1], 0.0)
    )
    yield fox.record("/pbstream/map", "foxglove.Grid", time_ns, message, sequence=number)


def mcap_messages(
    rec: PbstreamRecording, selection: Selection | None = None
) -> Iterator[McapRecord]:
    """The selected records' Foxglove messages, in time order."""
    selection = selection or Selection()
    index = rec.reader.index
    wanted = (NODE, ODOMETRY, FIXED_FRAME, POSE_GRAPH)
    numbers = selection.numbers(index)
    numbers = numbers[index.type_mask(wanted)[numbers]]
    poses: dict[tuple[int, int], tuple[float, ...]] | None = None
    stamps = index.timestamp_us
    for number in numbers.tolist():
        time_ns = int(stamps[number]) * 1000
        kind, entry = rec.entry(number)
        if kind == POSE_GRAPH:
            yield from _pose_graph_records(rec, time_ns, number)
            continue
        tid = int(entry.get("trajectory_id", 0))
        if kind == NODE:
            if poses is None:
                poses = _node_poses(rec)
            pose = poses.get((tid, int(entry.get("index", 0))))
            if pose is None:
                continue
            position, rotation = (pose[0], pose[1], pose[2]), pose[3:]
            yield fox.record(
                "/pbstream/node_pose",
                "foxglove.PoseInFrame",
                time_ns,
                fox.pose_in_frame(time_ns, "map", position, rotation),
                sequence=number,
            )
            transform = fox.frame_transform(time_ns, "map", f"trajectory_{tid}", position, rotation)
            yield fox.record(
                "/tf",
                "foxglove.FrameTransforms",
                time_ns,
                {"transforms": [transform]},
                sequence=number,
            )
            continue
        body = decode_record(kind, entry)
        inner = body.get("odometry_data" if kind == ODOMETRY else "fixed_frame_pose_data") or {}
        values = pose7(inner.get("pose"))
        topic = "/pbstream/odometry" if kind == ODOMETRY else "/pbstream/fixed_frame_pose"
        yield fox.record(
            topic,
            "foxglove.PoseInFrame",
            time_ns,
            fox.pose_in_frame(time_ns, f"trajectory_{tid}/odom", values[:3], values[3:]),  # type: ignore[arg-type]
            sequence=number,
        )


__all__ = ["mcap_messages"]
