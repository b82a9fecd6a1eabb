"""Synthetic `.pbstream` files: valid Cartographer states for tests, samples and benchmarks.

A robot drives circles in a square room; each trajectory has 2D submaps with probability
grids of the room (walls occupied, the inside free, the rest unknown), nodes with a small
point cloud, IMU and odometry data, landmark observations, and a pose graph with intra-
and inter-submap constraints. Everything is deterministic (a seeded PCG64), written with
Cartographer's member settings (`stream.build_member`), in the record order of spec §4.
`layout` picks format version 2, 1 (no trajectory_data) or legacy (no header, old field
numbers).
"""

from __future__ import annotations

import json
import math
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .records import LEGACY_KINDS, UNIX_EPOCH_TICKS, V2_FIELDS
from .stream import MAGIC, SIZE, build_member
from .wire import field_bytes, field_double, field_float, field_varint, packed_varints

#: 2024-01-01T00:00:00Z in Cartographer ticks.
START_TICKS = UNIX_EPOCH_TICKS + 1_704_067_200 * 10_000_000
_LEGACY_FIELDS = {kind: number for number, kind in LEGACY_KINDS.items()}


def _msg(number: int, body: bytes) -> bytes:
    """A set sub-message field (present even when empty, as Cartographer's `mutable_*`)."""
    return field_bytes(number, body, keep_empty=True)


def vector3(x: float, y: float, z: float) -> bytes:
    return field_double(1, x) + field_double(2, y) + field_double(3, z)


def quaternion(x: float, y: float, z: float, w: float) -> bytes:
    return vector3(x, y, z) + field_double(4, w)


def rigid3d(x: float, y: float, yaw: float, z: float = 0.0) -> bytes:
    half = yaw / 2
    return _msg(1, vector3(x, y, z)) + _msg(2, quaternion(0.0, 0.0, math.sin(half), math.cos(half)))


def _noise(rng: np.random.Generator) -> tuple[float, float]:
    x, y = rng.integers(-1000, 1000, 2).tolist()
    return x / 10_000, y / 10_000


def _ids(trajectory: int, index: int) -> bytes:
    return field_varint(1, trajectory) + field_varint(2, index)


@dataclass(frozen=True)
class Plan:
    """What to generate."""

    trajectories: int = 2
    nodes: int = 60
    nodes_per_submap: int = 20
    imu_per_node: int = 2
    odometry_per_node: int = 1
    landmarks: int = 3
    grid_cells: int = 80
    resolution: float = 0.1
    room: float = 3.0  # half-size of the room in metres
    seed: int = 7
    dims: int = 2  # 3: submaps with hybrid grids, nodes with high/low resolution clouds


def _pose_at(plan: Plan, trajectory: int, t: float) -> tuple[float, float, float]:
    """x, y, yaw of a trajectory at `t` seconds: a circle around the room's centre."""
    radius = 1.2 + 0.3 * trajectory
    angle = 0.25 * t + trajectory
    return radius * math.cos(angle), radius * math.sin(angle), angle + math.pi / 2


def _ticks(trajectory: int, t: float) -> int:
    return START_TICKS + trajectory * 250_000_000 + round(t * 1e7)


def _grid(plan: Plan, centre: tuple[float, float], rng: np.random.Generator) -> bytes:
    """A Grid2D of the room around `centre` (local frame), known cells boxed."""
    n, r = plan.grid_cells, plan.resolution
    max_x, max_y = centre[0] + n * r / 2, centre[1] + n * r / 2
    j, i = np.mgrid[0:n, 0:n]
    x = max_x - (j + 0.5) * r
    y = max_y - (i + 0.5) * r
    inside = (np.abs(x) < plan.room) & (np.abs(y) < plan.room)
    wall = inside & ((np.abs(x) > plan.room - r) | (np.abs(y) > plan.room - r))
    seen = inside & (np.hypot(x - centre[0], y - centre[1]) < n * r * 0.45)
    cells = np.zeros((n, n), np.int64)
    free = 32767 - rng.integers(0, 3000, (n, n))
    cells[seen] = free[seen]
    cells[seen & wall] = 1 + rng.integers(0, 2000, (n, n))[seen & wall]
    rows, cols = np.nonzero(cells)
    box = b""
    if len(rows):
        box = _msg(
            3,
            field_varint(1, int(cols.max()))
            + field_varint(2, int(rows.max()))
            + field_varint(3, int(cols.min()))
            + field_varint(4, int(rows.min())),
        )
    limits = (
        field_double(1, r)
        + _msg(2, field_double(1, max_x) + field_double(2, max_y))
        + _msg(3, field_varint(1, n) + field_varint(2, n))
    )
    return (
        _msg(1, limits)
        + field_bytes(2, packed_varints(cells.ravel()))
        + box
        + _msg(4, b"")
        + field_float(6, 0.1)
        + field_float(7, 0.9)
    )


def _hybrid(plan: Plan, centre: tuple[float, float], resolution: float) -> bytes:
    """A HybridGrid (submap frame, origin at `centre`) of the room's walls, 1 m high."""
    steps = np.arange(-plan.room, plan.room, resolution)
    edge = np.full_like(steps, plan.room - resolution / 2)
    wx = np.concatenate([steps, steps, edge, -edge])
    wy = np.concatenate([edge, -edge, steps, steps])
    near = np.hypot(wx - centre[0], wy - centre[1]) < plan.grid_cells * plan.resolution * 0.45
    heights = np.arange(0, 1.0, resolution)
    x = np.repeat(np.rint((wx[near] - centre[0]) / resolution), len(heights)).astype(np.int64)
    y = np.repeat(np.rint((wy[near] - centre[1]) / resolution), len(heights)).astype(np.int64)
    z = np.tile(np.rint(heights / resolution), int(near.sum())).astype(np.int64)

    def zigzag(values: np.ndarray[Any, Any]) -> bytes:
        return packed_varints(((values << 1) ^ (values >> 63)) & 0xFFFFFFFF)

    return (
        field_float(1, resolution)
        + field_bytes(3, zigzag(x))
        + field_bytes(4, zigzag(y))
        + field_bytes(5, zigzag(z))
        + field_bytes(6, packed_varints(np.full(len(x), 30000)))
    )


def _wrap(kind: str, body: bytes, legacy: bool) -> bytes:
    return _msg((_LEGACY_FIELDS if legacy else V2_FIELDS)[kind], body)


def iter_payloads(plan: Plan, layout: str = "2") -> Iterator[bytes]:
    """The payloads of a stream, in order (see the module docstring)."""
    rng = np.random.Generator(np.random.PCG64(plan.seed))
    legacy = layout == "legacy"
    dt = 0.5
    count = plan.nodes
    submaps = max(1, math.ceil(count / plan.nodes_per_submap))
    graph: list[bytes] = []
    options: list[bytes] = []
    for tid in range(plan.trajectories):
        nodes = b"".join(
            _msg(
                1,
                field_varint(1, _ticks(tid, k * dt))
                + _msg(5, rigid3d(*_pose_at(plan, tid, k * dt)))
                + field_varint(7, k),
            )
            for k in range(count)
        )
        maps = b"".join(
            _msg(
                2,
                _msg(1, rigid3d(*_pose_at(plan, tid, s * plan.nodes_per_submap * dt)[:2], 0.0))
                + field_varint(2, s),
            )
            for s in range(submaps)
        )
        graph.append(_msg(4, nodes + maps + field_varint(3, tid)))
        sensors = _msg(1, field_varint(1, 0) + field_bytes(2, b"scan")) + _msg(
            1, field_varint(1, 1) + field_bytes(2, b"imu")
        )
        sensors += _msg(1, field_varint(1, 2) + field_bytes(2, b"odom"))
        sensors += _msg(1, field_varint(1, 4) + field_bytes(2, b"landmark"))
        builder = _msg(1, field_float(1, 0.2) + field_float(2, 30.0)) + field_varint(7, 0)
        options.append(_msg(1, sensors + _msg(2, builder)))
    constraints = []
    for tid in range(plan.trajectories):
        for k in range(count):
            submap = min(k // plan.nodes_per_submap, submaps - 1)
            for s, tag in ((submap, 0), (submap - 1, 0), (0, 1)):
                if s < 0 or (tag == 1 and (k % 7 or tid == 0)):
                    continue
                constraints.append(
                    _msg(
                        2,
                        _msg(1, _ids(0 if tag else tid, s))
                        + _msg(2, _ids(tid, k))
                        + _msg(3, rigid3d(0.1 * k % 1, 0.2, 0.1))
                        + field_varint(5, tag)
                        + field_double(6, 10.0)
                        + field_double(7, 1.0),
                    )
                )
    landmark_poses = [
        _msg(5, field_bytes(1, f"landmark_{n}".encode()) + _msg(2, rigid3d(2.5, n - 1.0, 0.0)))
        for n in range(plan.landmarks)
    ]
    if not legacy:
        yield field_varint(1, 1 if layout == "1" else 2)
    pose_graph = b"".join(constraints) + b"".join(graph) + b"".join(landmark_poses)
    yield pose_graph if legacy else _wrap("pose_graph", pose_graph, False)
    all_options = b"".join(options)
    yield all_options if legacy else _wrap("all_trajectory_builder_options", all_options, False)
    for tid in range(plan.trajectories):
        for s in range(submaps):
            x, y, _ = _pose_at(plan, tid, s * plan.nodes_per_submap * dt)
            body = (
                _msg(1, rigid3d(x, y, 0.0))
                + field_varint(2, plan.nodes_per_submap * 2)
                + field_varint(3, int(s < submaps - 1))
            )
            if plan.dims == 3:
                body += _msg(4, _hybrid(plan, (x, y), plan.resolution))
                body += _msg(5, _hybrid(plan, (x, y), plan.resolution * 4))
                if layout != "1":  # format 1 had no histogram
                    body += field_bytes(6, np.linspace(0, 1, 16, dtype="<f4").tobytes())
                yield _wrap("submap", _msg(1, _ids(tid, s)) + _msg(3, body), legacy)
            else:
                body += _msg(4, _grid(plan, (x, y), rng))
                yield _wrap("submap", _msg(1, _ids(tid, s)) + _msg(2, body), legacy)
    for tid in range(plan.trajectories):
        for k in range(count):
            points = rng.integers(-2000, 2000, 3 * 16)
            cloud = _msg(3, field_varint(1, 16) + field_bytes(3, packed_varints(points)))
            if plan.dims == 3:
                cloud += _msg(4, field_varint(1, 16) + field_bytes(3, packed_varints(points)))
                cloud += _msg(5, field_varint(1, 16) + field_bytes(3, packed_varints(points)))
                cloud += field_bytes(6, np.linspace(1, 0, 8, dtype="<f4").tobytes())
            data = (
                field_varint(1, _ticks(tid, k * dt))
                + _msg(2, quaternion(0.0, 0.0, 0.0, 1.0))
                + cloud
                + _msg(7, rigid3d(*_pose_at(plan, tid, k * dt)))
            )
            yield _wrap("node", _msg(1, _ids(tid, k)) + _msg(5, data), legacy)
    if layout != "1":
        for tid in range(plan.trajectories):
            body = field_varint(1, tid) + field_double(2, 9.81) + _msg(3, quaternion(0, 0, 0, 1))
            yield _wrap("trajectory_data", body, legacy)
    for kind, per_node in (
        ("imu_data", plan.imu_per_node),
        ("odometry_data", plan.odometry_per_node),
    ):
        for tid in range(plan.trajectories):
            for step in range(count * per_node):
                t = step * dt / per_node
                if kind == "imu_data":
                    inner = (
                        field_varint(1, _ticks(tid, t))
                        + _msg(2, vector3(*_noise(rng), 9.81))
                        + _msg(3, vector3(0.0, 0.0, 0.25))
                    )
                else:
                    inner = field_varint(1, _ticks(tid, t)) + _msg(
                        2, rigid3d(*_pose_at(plan, tid, t))
                    )
                yield _wrap(kind, field_varint(1, tid) + _msg(2, inner), legacy)
    for n in range(plan.landmarks):
        for step in range(3):
            observation = (
                field_bytes(1, f"landmark_{n}".encode())
                + _msg(2, rigid3d(1.0, 0.5 * n, 0.0))
                + field_double(3, 1e5)
                + field_double(4, 1e5)
            )
            inner = field_varint(1, _ticks(0, 4.0 * step + n)) + _msg(2, observation)
            yield _wrap("landmark_data", _msg(2, inner), legacy)


def generate(path: str | os.PathLike[str], plan: Plan | None = None, layout: str = "2") -> Path:
    """Write a synthetic stream to `path` (see `iter_payloads`); returns the path."""
    out = Path(path)
    with out.open("wb") as stream:
        stream.write(MAGIC)
        for payload in iter_payloads(plan or Plan(), layout):
            member = build_member(payload)
            stream.write(SIZE.pack(len(member)) + member)
    return out


#: The bundled samples (`samples/`): name -> (plan, layout).
SAMPLES = {
    "pbstream-small.pbstream": (Plan(trajectories=2, nodes=40, grid_cells=60), "2"),
    "pbstream-legacy-small.pbstream": (Plan(trajectories=1, nodes=20, grid_cells=40), "legacy"),
}


def facts(plan: Plan, layout: str) -> dict[str, Any]:
    """What a generated stream holds, worked out from the plan alone (a sample's JSON twin,
    to check a reader against)."""
    submaps = max(1, math.ceil(plan.nodes / plan.nodes_per_submap))
    kinds = {
        "header": 0 if layout == "legacy" else 1,
        "pose_graph": 1,
        "all_trajectory_builder_options": 1,
        "submap": plan.trajectories * submaps,
        "node": plan.trajectories * plan.nodes,
        "trajectory_data": 0 if layout == "1" else plan.trajectories,
        "imu_data": plan.trajectories * plan.nodes * plan.imu_per_node,
        "odometry_data": plan.trajectories * plan.nodes * plan.odometry_per_node,
        "landmark_data": plan.landmarks * 3,
    }
    last = (plan.nodes - 1) * 0.5
    return {
        "format_version": "legacy" if layout == "legacy" else layout,
        "dimensions": f"{plan.dims}D",
        "records": sum(kinds.values()),
        "records_by_kind": {kind: count for kind, count in sorted(kinds.items()) if count},
        "trajectories": {
            str(tid): {
                "nodes": plan.nodes,
                "submaps": submaps,
                "first_node_ticks": _ticks(tid, 0.0),
                "last_node_ticks": _ticks(tid, last),
            }
            for tid in range(plan.trajectories)
        },
        "landmarks": plan.landmarks,
        "generate": f"generate(path, {plan!r}, {layout!r})",
    }


def main(argv: list[str] | None = None) -> int:
    """`python -m nanorec.converters.pbstream.generate FOLDER`: write the samples there, each
    with its JSON twin (`facts`, size and sha256)."""
    import hashlib

    args = sys.argv[1:] if argv is None else argv
    folder = Path(args[0] if args else "samples")
    for name, (plan, layout) in SAMPLES.items():
        path = generate(folder / name, plan, layout)
        data = path.read_bytes()
        twin = {
            **facts(plan, layout),
            "size": len(data),
            "sha256": hashlib.sha256(data).hexdigest(),
        }
        path.with_name(name + ".json").write_text(json.dumps(twin, indent=2) + "\n")
        print(f"{path}: {len(data)} bytes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

__all__ = ["START_TICKS", "Plan", "generate", "iter_payloads", "quaternion", "rigid3d", "vector3"]
