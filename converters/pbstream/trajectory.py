"""Poses as numpy arrays: optimised node and submap poses from the pose graph, local node
poses from the node records, and the constraints as one structured array.

Trajectories are keyed by their `trajectory_id` field (absent = 0), never by position; a
pose is translation x y z and rotation quaternion x y z w (absent = 0, as proto3 says).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .decode import decode_message
from .graph_columns import parse as parse_columns
from .pose import POSE, pose7
from .records import UNIX_EPOCH_TICKS
from .wire import LEN, VARINT, iter_fields, signed32, signed64

CONSTRAINT_DTYPE = np.dtype(
    [
        ("submap_trajectory_id", "<i4"),
        ("submap_index", "<i4"),
        ("node_trajectory_id", "<i4"),
        ("node_index", "<i4"),
        ("tag", "<i4"),  # 0 intra-submap, 1 inter-submap
        ("translation_weight", "<f8"),
        ("rotation_weight", "<f8"),
        ("pose", "<f8", (7,)),  # x y z qx qy qz qw: the submap-to-node relative pose
    ]
)
TAGS = {0: "intra", 1: "inter"}


@dataclass(frozen=True, repr=False)
class Poses:
    """One trajectory's poses: `index` (node or submap index), `timestamp` in Cartographer
    ticks (0 for submaps), `translation` (n, 3), `rotation` (n, 4) quaternions x y z w.
    `source` says where they come from: "pose_graph" (optimised) or "local"."""

    trajectory_id: int
    index: NDArray[np.int32]
    timestamp: NDArray[np.int64]
    translation: NDArray[np.float64]
    rotation: NDArray[np.float64]
    source: str

    @property
    def unix_ns(self) -> NDArray[np.int64]:
        """Exact Unix nanoseconds of each pose."""
        return (self.timestamp - UNIX_EPOCH_TICKS) * 100

    @property
    def time(self) -> NDArray[np.float64]:
        """Unix seconds (float: microsecond precision for present dates)."""
        seconds = (self.timestamp - UNIX_EPOCH_TICKS) // 10_000_000
        rest = (self.timestamp - UNIX_EPOCH_TICKS) % 10_000_000
        return seconds.astype(np.float64) + rest.astype(np.float64) / 1e7

    def __len__(self) -> int:
        return len(self.index)

    def __repr__(self) -> str:
        return f"<Poses of trajectory {self.trajectory_id}: {len(self)} ({self.source})>"


def _poses(trajectory_id: int, rows: list[tuple[Any, ...]], source: str) -> Poses:
    """`rows` of (index, ticks, x, y, z, qx, qy, qz, qw), sorted by index."""
    rows.sort(key=lambda row: row[0])
    table = np.array([row[2:] for row in rows], np.float64).reshape(-1, 7)
    return Poses(
        trajectory_id,
        np.array([row[0] for row in rows], np.int32),
        np.array([row[1] for row in rows], np.int64),
        table[:, :3].copy(),
        table[:, 3:].copy(),
        source,
    )


def _columns_poses(
    trajectory_id: int, index: NDArray[np.int32], ticks: NDArray[np.int64], table: np.ndarray
) -> Poses:
    """The poses `graph_columns` read, as they are (already sorted by index)."""
    return Poses(
        trajectory_id, index, ticks, table[:, :3].copy(), table[:, 3:].copy(), "pose_graph"
    )


@dataclass(frozen=True)
class PoseGraph:
    """The decoded pose graph: node and submap poses per trajectory, in the order the file
    lists the trajectories, constraints and landmark poses."""

    nodes: dict[int, Poses]
    submaps: dict[int, Poses]
    constraints: NDArray[np.void]
    landmarks: list[tuple[str, tuple[float, ...]]]

    @classmethod
    def empty(cls) -> PoseGraph:
        return cls({}, {}, np.zeros(0, CONSTRAINT_DTYPE), [])

    @classmethod
    def parse(cls, payload: bytes, start: int = 0, end: int | None = None) -> PoseGraph:
        quick = parse_columns(payload, start, end)  # numpy over the usual shapes (None: others)
        if quick is not None:
            by_node, by_submap, table, landmarks = quick
            constraints = np.zeros(len(table["tag"]), CONSTRAINT_DTYPE)
            for name in ("submap_trajectory", "submap_index", "node_trajectory", "node_index"):
                constraints[name.replace("trajectory", "trajectory_id")] = table[name]
            for name in ("tag", "translation_weight", "rotation_weight"):
                constraints[name] = table[name]
            constraints["pose"] = np.stack([table[name] for name in POSE], axis=1)
            return cls(
                {tid: _columns_poses(tid, *found) for tid, found in by_node.items()},
                {tid: _columns_poses(tid, *found) for tid, found in by_submap.items()},
                constraints,
                landmarks,
            )
        graph = decode_message(payload, "PoseGraph", start, end)
        nodes: dict[int, Poses] = {}
        submaps: dict[int, Poses] = {}
        for trajectory in graph.get("trajectory", []):
            tid = trajectory.get("trajectory_id", 0)
            node_rows = [
                (n.get("node_index", 0), n.get("timestamp", 0), *pose7(n.get("pose")))
                for n in trajectory.get("node", [])
            ]
            submap_rows = [
                (s.get("submap_index", 0), 0, *pose7(s.get("pose")))
                for s in trajectory.get("submap", [])
            ]
            nodes[tid] = _poses(tid, node_rows, "pose_graph")
            submaps[tid] = _poses(tid, submap_rows, "pose_graph")
        found = graph.get("constraint", [])
        constraints = np.zeros(len(found), CONSTRAINT_DTYPE)
        for row, item in enumerate(found):
            submap = item.get("submap_id") or {}
            node = item.get("node_id") or {}
            constraints[row] = (
                submap.get("trajectory_id", 0),
                submap.get("submap_index", 0),
                node.get("trajectory_id", 0),
                node.get("node_index", 0),
                item.get("tag", 0),
                item.get("translation_weight", 0.0),
                item.get("rotation_weight", 0.0),
                pose7(item.get("relative_pose")),
            )
        landmarks = [
            (str(item.get("landmark_id", "")), pose7(item.get("global_pose")))
            for item in graph.get("landmark_poses", [])
        ]
        return cls(nodes, submaps, constraints, landmarks)


def node_local(payload: bytes, start: int, end: int) -> tuple[int, int, int, tuple[float, ...]]:
    """(trajectory id, node index, ticks, local pose) of a Node body, reading only those
    fields (the point clouds are skipped by length)."""
    trajectory = index = ticks = 0
    local: dict[str, Any] | None = None
    for number, wire, a, b in iter_fields(payload, start, end):
        if number == 1 and wire == LEN:
            for n, w, value, _ in iter_fields(payload, a, b):
                if w == VARINT and n == 1:
                    trajectory = signed32(value)
                elif w == VARINT and n == 2:
                    index = signed32(value)
        elif number == 5 and wire == LEN:
            for n, w, c, d in iter_fields(payload, a, b):
                if n == 1 and w == VARINT:
                    ticks = signed64(c)
                elif n == 7 and w == LEN:
                    local = decode_message(payload, "Rigid3d", c, d)
    return trajectory, index, ticks, pose7(local)


def node_dims(payload: bytes, start: int, end: int) -> int | None:
    """3 when a Node's data holds 3D data (high/low resolution clouds, histogram), 2 when it
    holds only the 2D filtered cloud, None when it holds no points at all.

    Cartographer sets every cloud field (`mutable_*`), so a 2D node carries fields 4 and 5
    too, as empty messages: only their contents tell.
    """
    found: int | None = None
    for number, wire, a, b in iter_fields(payload, start, end):
        if number != 5 or wire != LEN:
            continue
        for n, w, c, d in iter_fields(payload, a, b):
            if w == LEN and d > c and n in (4, 5, 6):
                return 3
            if w == LEN and d > c and n == 3:
                found = 2
    return found


def local_poses(rows: dict[int, list[tuple[Any, ...]]]) -> dict[int, Poses]:
    """Per trajectory, from `(index, ticks, x, y, z, qx, qy, qz, qw)` rows of node records."""
    return {tid: _poses(tid, items, "local") for tid, items in sorted(rows.items())}


__all__ = [
    "CONSTRAINT_DTYPE",
    "TAGS",
    "PoseGraph",
    "Poses",
    "local_poses",
    "node_dims",
    "node_local",
]
