"""A pbstream as standard messages (`nanorec.standard`), for writers of other formats (a ROS 2
bag: `nanorec export state.pbstream --format ros2`).

- `/trajectory_<id>` (`geometry_msgs/msg/PoseStamped`, frame `map`): one per trajectory
  node at the node's own time (Cartographer's clock is Unix time: exact nanoseconds from its
  100-ns ticks), the optimised pose from the pose graph, or the local one for a trajectory
  the pose graph does not hold (`PbstreamRecording.trajectories`), merged across
  trajectories in time order (ties: trajectory id, then node index).
- `/map` (`nav_msgs/msg/OccupancyGrid`, frame `map`): the submaps drawn together as the
  `ros-map` export draws them (`rosmap.assemble`: 2D submaps, or 3D ones projected, as
  `cartographer_pbstream_to_ros_map` does), last, stamped at the last selected node's time
  (the map is the state after every node; the last node of all when no node is selected).
  Cells are cartographer_ros' `CreateOccupancyGridMsg` values, round(100 p) for the
  occupancy probability p map_server reads off the PGM, -1 never observed; rows run upward
  from the map's lower-left corner (the `origin`), the PGM's rows downward, so the PGM is
  flipped.

Selection: a time range (seconds from the recording's start, both ends inclusive) applies
to each node's own time, as the `trajectory` table does; a message range keeps the nodes
whose node records it holds. The map is a summary of the whole state, so a range keeps it;
only kinds (`--type`/`--topic`) naming topics without `/map` leave it out.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from nanorec import standard
from nanorec.errors import EmptySelectionError, UsageError
from nanorec.outputs.mcap_foxglove import occupancy_from_probability
from nanorec.selection import Selection, index_span_s

from .records import NODE
from .rosmap import OccupancyMap, assemble
from .trajectory import Poses

if TYPE_CHECKING:
    from .recording import PbstreamRecording

MAP_TOPIC = "/map"
POSE_TYPE = "geometry_msgs/msg/PoseStamped"
GRID_TYPE = "nav_msgs/msg/OccupancyGrid"
FIXED_FRAME = "map"


def pose_topic(trajectory_id: int) -> str:
    """The topic of a trajectory's node poses."""
    return f"/trajectory_{trajectory_id}"


def parse_topics(kinds: frozenset[str] | None, trajectory_ids: list[int]) -> frozenset[str]:
    """The topics a selection's kinds keep: topics (with or without the leading slash),
    their types, or the pbstream record kinds behind them (`node`: every trajectory, `submap`:
    the map). An unknown kind is an `EmptySelectionError` listing the topics, as a typo
    would otherwise write an empty bag without a word."""
    poses = frozenset(pose_topic(tid) for tid in trajectory_ids)
    if kinds is None:
        return poses | {MAP_TOPIC}
    names: dict[str, frozenset[str]] = {
        NODE: poses,
        POSE_TYPE: poses,
        "submap": frozenset({MAP_TOPIC}),
        GRID_TYPE: frozenset({MAP_TOPIC}),
    }
    for topic in (*sorted(poses), MAP_TOPIC):
        names[topic] = names[topic[1:]] = frozenset({topic})
    unknown = sorted(kinds - names.keys())
    if unknown:
        raise EmptySelectionError(
            f"--type {', '.join(unknown)} selects nothing: a pbstream's standard messages are "
            f"on {', '.join((*sorted(poses), MAP_TOPIC))} (kinds: {', '.join(names)})"
        )
    return frozenset().union(*(names[kind] for kind in kinds))


def standard_messages(
    rec: PbstreamRecording, selection: Selection | None
) -> Iterator[standard.StandardMessage]:
    """The selected node poses in time order, then the map.

    The selection is checked here, before the first message: an empty range, an unknown kind,
    or a selection leaving nothing to write raises `EmptySelectionError` at the call."""
    selection = selection or Selection()
    index = rec.reader.index
    by_range = dataclasses.replace(selection, kinds=None)
    if not by_range.everything:
        by_range.chosen(index)  # the one rule for an empty range, every verb and format
    trajectories = rec.trajectories()
    topics = parse_topics(selection.kinds, list(trajectories))
    every = _merged(trajectories)
    inside = every[_in_selection(rec, by_range, every)]
    kept = inside[np.isin(inside["trajectory"], _ids_of(topics))]
    grid: OccupancyMap | None = None
    if MAP_TOPIC in topics and not len(kept):
        grid = _grid(rec)  # needed now: it decides whether anything is selected
    if not len(kept) and grid is None:
        raise _nothing(rec, selection, every)
    last = inside if len(inside) else every
    map_ns = int(last["unix_ns"][-1]) if len(last) else round(rec.end_time * 1e6) * 1000
    return _messages(rec, kept, MAP_TOPIC in topics, grid, map_ns)


def _messages(
    rec: PbstreamRecording,
    kept: NDArray[Any],
    with_map: bool,
    grid: OccupancyMap | None,
    map_ns: int,
) -> Iterator[standard.StandardMessage]:
    for tid, time_ns, position, rotation in zip(
        kept["trajectory"].tolist(),
        kept["unix_ns"].tolist(),
        kept["translation"].tolist(),
        kept["rotation"].tolist(),
        strict=True,
    ):
        value = {
            "header": standard.header(time_ns, FIXED_FRAME),
            "pose": standard.pose(position, rotation),
        }
        yield standard.StandardMessage(pose_topic(tid), POSE_TYPE, time_ns, value)
    if with_map:
        grid = grid if grid is not None else _grid(rec)
        if grid is not None:
            yield standard.StandardMessage(
                MAP_TOPIC, GRID_TYPE, map_ns, occupancy_grid(grid, map_ns)
            )


def occupancy_grid(grid: OccupancyMap, time_ns: int) -> dict[str, Any]:
    """`nav_msgs/msg/OccupancyGrid` of an assembled map (see the module docstring)."""
    cells = occupancy_from_probability(grid.probability()[::-1])  # row 0 at the lowest y
    height, width = cells.shape
    return {
        "header": standard.header(time_ns, FIXED_FRAME),
        "info": {
            "map_load_time": standard.stamp(time_ns),
            "resolution": float(grid.resolution),
            "width": int(width),
            "height": int(height),
            "origin": standard.pose((grid.origin[0], grid.origin[1], 0.0), (0.0, 0.0, 0.0, 1.0)),
        },
        "data": np.ascontiguousarray(cells).reshape(-1),
    }


def _nothing(rec: PbstreamRecording, selection: Selection, nodes: NDArray[Any]) -> UsageError:
    """The error for a selection keeping no pose and no map (its range holds records, so
    `Selection.empty` would blame the wrong thing): what it asked for and what there is."""
    asked = " ".join(
        part
        for part in (
            selection.range_options(),
            "" if selection.kinds is None else "--type " + ", ".join(sorted(selection.kinds)),
        )
        if part
    )
    if not len(nodes):
        there = "the pbstream has no node pose and no map"
    else:
        origin_ns = round(rec.start_time * 1e6) * 1000
        first, last = ((int(nodes["unix_ns"][k]) - origin_ns) / 1e9 for k in (0, -1))
        there = f"{len(nodes)} node poses from {first:.3f} s to {last:.3f} s"
    return EmptySelectionError(
        f"{asked or 'the selection'} selects no pose and no map ({there}; "
        f"{index_span_s(rec.reader.index):.3f} s of records)"
    )


def _grid(rec: PbstreamRecording) -> OccupancyMap | None:
    """The assembled map, None when no submap can be drawn."""
    try:
        return assemble(rec)
    except UsageError:
        return None


NODES_DTYPE = np.dtype(
    [
        ("unix_ns", "<i8"),
        ("trajectory", "<i4"),
        ("index", "<i4"),
        ("translation", "<f8", (3,)),
        ("rotation", "<f8", (4,)),
    ]
)


def _merged(trajectories: dict[int, Poses]) -> NDArray[Any]:
    """Every trajectory's nodes in one array, in time order (ties: trajectory, index)."""
    parts = []
    for tid, poses in trajectories.items():
        part = np.zeros(len(poses), NODES_DTYPE)
        part["unix_ns"] = poses.unix_ns
        part["trajectory"] = tid
        part["index"] = poses.index
        part["translation"] = poses.translation
        part["rotation"] = poses.rotation
        parts.append(part)
    nodes = np.concatenate(parts) if parts else np.zeros(0, NODES_DTYPE)
    return nodes[np.lexsort((nodes["index"], nodes["trajectory"], nodes["unix_ns"]))]


def _in_selection(rec: PbstreamRecording, selection: Selection, nodes: NDArray[Any]) -> Any:
    """Which nodes a time range (each node's own time) or a message range (the node's
    record) keeps."""
    keep = np.ones(len(nodes), bool)
    if selection.start is not None or selection.end is not None:
        origin_ns = round(rec.start_time * 1e6) * 1000  # as the tables count from the start
        times = nodes["unix_ns"]
        if selection.start is not None:
            keep &= times >= origin_ns + round(selection.start * 1e9)
        if selection.end is not None:
            keep &= times <= origin_ns + round(selection.end * 1e9)
    if selection.first is not None or selection.stop is not None:
        numbers = rec.numbers_of(NODE, selection)
        ids, indexes = rec.trajectory_ids[numbers].tolist(), rec.indexes[numbers].tolist()
        held = set(zip(ids, indexes, strict=True))
        pairs = zip(nodes["trajectory"].tolist(), nodes["index"].tolist(), strict=True)
        keep &= np.fromiter((pair in held for pair in pairs), bool, len(nodes))
    return keep


def _ids_of(topics: frozenset[str]) -> list[int]:
    prefix = pose_topic(0)[:-1]
    return [int(t[len(prefix) :]) for t in topics if t.startswith(prefix)]


__all__ = ["MAP_TOPIC", "occupancy_grid", "parse_topics", "pose_topic", "standard_messages"]
