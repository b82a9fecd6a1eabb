"""Flat tables of a pbstream: node poses, submap poses, constraints, landmark poses (from the
pose graph) and one row per record of the sensor, node and submap kinds.

Record rows start with `number` (record number) and `time` (seconds from the recording's
start, by the record's own time where it has one: sensor data may precede the first node,
so it can be negative), then `trajectory_id`, `timestamp` (Cartographer ticks), `unix_ns`.
Pose columns are x y z qx qy qz qw.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from nanorec.errors import UsageError
from nanorec.selection import Selection

from .decode import decode_record
from .pose import POSE, pose7
from .records import (
    FIXED_FRAME,
    IMU,
    LANDMARK,
    NODE,
    ODOMETRY,
    OPTIONS,
    SUBMAP,
    TRAJECTORY_DATA,
    ticks_to_unix_ns,
)
from .trajectory import TAGS, Poses

if TYPE_CHECKING:
    from .recording import PbstreamRecording

Row = dict[str, Any]


def _pose_columns(pose: tuple[float, ...] | Any, prefix: str = "") -> Row:
    return {prefix + name: float(value) for name, value in zip(POSE, pose, strict=True)}


def _vector(value: dict[str, Any] | None, prefix: str) -> Row:
    value = value or {}
    return {f"{prefix}_{axis}": value.get(axis, 0.0) for axis in ("x", "y", "z")}


def pose_rows(poses: Poses, index_name: str, *, timed: bool = True) -> Iterator[Row]:
    """One row per pose of `poses`."""
    table = list(zip(poses.translation.tolist(), poses.rotation.tolist(), strict=True))
    stamps = poses.timestamp.tolist()
    for row, (index, (t, q)) in enumerate(zip(poses.index.tolist(), table, strict=True)):
        out: Row = {"trajectory_id": poses.trajectory_id, index_name: index}
        if timed:
            out.update(timestamp=stamps[row], unix_ns=ticks_to_unix_ns(stamps[row]))
        out.update(_pose_columns((*t, *q)))
        yield out


def in_range(rec: PbstreamRecording, selection: Selection | None) -> Callable[[int], bool]:
    """Whether a time in ticks lies in the selection's time range (seconds from the start)."""
    if selection is None or (selection.start is None and selection.end is None):
        return lambda ticks: True
    origin_ns = round(rec.start_time * 1e6) * 1000
    start = None if selection.start is None else origin_ns + round(selection.start * 1e9)
    end = None if selection.end is None else origin_ns + round(selection.end * 1e9)

    def inside(ticks: int) -> bool:
        ns = ticks_to_unix_ns(ticks)
        return (start is None or ns >= start) and (end is None or ns <= end)

    return inside


def _trajectory(rec: PbstreamRecording, selection: Selection | None) -> Iterator[Row]:
    inside = in_range(rec, selection)
    for poses in rec.trajectories().values():
        for row in pose_rows(poses, "node_index"):
            if inside(row["timestamp"]):
                row["source"] = poses.source
                yield row


def _submap_poses(rec: PbstreamRecording, selection: Selection | None) -> Iterator[Row]:
    for poses in rec.pose_graph().submaps.values():
        yield from pose_rows(poses, "submap_index", timed=False)


def _constraint(rec: PbstreamRecording, selection: Selection | None) -> Iterator[Row]:
    for item in rec.pose_graph().constraints.tolist():
        submap_tid, submap_index, node_tid, node_index, tag, tw, rw, pose = item
        row: Row = {
            "submap_trajectory_id": submap_tid,
            "submap_index": submap_index,
            "node_trajectory_id": node_tid,
            "node_index": node_index,
            "tag": TAGS.get(tag, str(tag)),
            "translation_weight": tw,
            "rotation_weight": rw,
        }
        row.update(_pose_columns(pose))
        yield row


def _landmark_poses(rec: PbstreamRecording, selection: Selection | None) -> Iterator[Row]:
    for landmark_id, pose in rec.pose_graph().landmarks:
        yield {"landmark_id": landmark_id, **_pose_columns(pose)}


def selected(rec: PbstreamRecording, kind: str, selection: Selection | None) -> list[int]:
    """Records of `kind` in the selection, a time range applying to each record's own time
    where it has one (the index clamps times that go back: sensor data after the nodes)."""
    if selection is None or (selection.start is None and selection.end is None):
        return [int(n) for n in rec.numbers_of(kind, selection).tolist()]
    by_number = Selection(first=selection.first, stop=selection.stop)
    inside = in_range(rec, selection)
    lo, hi = selection.span(rec.reader.index)
    return [
        number
        for number in rec.numbers_of(kind, by_number).tolist()
        if (inside(int(rec.ticks[number])) if rec.timed[number] else lo <= number < hi)
    ]


def _record_rows(kind: str) -> Callable[[PbstreamRecording, Selection | None], Iterator[Row]]:
    """Rows of one record kind: the common columns, then `_FIELDS[kind]` of its body."""

    def rows(rec: PbstreamRecording, selection: Selection | None) -> Iterator[Row]:
        return record_rows(rec, kind, selected(rec, kind, selection))

    return rows


def record_rows(rec: PbstreamRecording, kind: str, numbers: list[int]) -> Iterator[Row]:
    """The rows of records `numbers` of `kind`, one record at a time (`columnar.py` takes
    the records it cannot decode at once through here)."""
    origin_ns = round(rec.start_time * 1e6) * 1000
    for number in numbers:
        _, entry = rec.entry(number)
        body = decode_record(kind, entry, packed=False)  # no table holds them
        base: Row = {"number": number, "time": rec.time_of(number)}
        if "trajectory_id" in entry:
            base["trajectory_id"] = entry["trajectory_id"]
        if "timestamp" in entry:
            base["timestamp"] = entry["timestamp"]
            base["unix_ns"] = ticks_to_unix_ns(entry["timestamp"])
            # seconds from the start by the record's own time, not its (clamped) index time
            base["time"] = (base["unix_ns"] - origin_ns) / 1e9
        for extra in _FIELDS[kind](body):
            yield {**base, **extra}


def _imu(body: Row) -> Iterator[Row]:
    data = body.get("imu_data") or {}
    yield {
        **_vector(data.get("linear_acceleration"), "linear_acceleration"),
        **_vector(data.get("angular_velocity"), "angular_velocity"),
    }


def _timed_pose(field: str) -> Callable[[Row], Iterator[Row]]:
    def rows(body: Row) -> Iterator[Row]:
        yield _pose_columns(pose7((body.get(field) or {}).get("pose")))

    return rows


def _landmark(body: Row) -> Iterator[Row]:
    for item in (body.get("landmark_data") or {}).get("landmark_observations", []):
        yield {
            "landmark_id": item.get("id", b""),
            "translation_weight": item.get("translation_weight", 0.0),
            "rotation_weight": item.get("rotation_weight", 0.0),
            **_pose_columns(pose7(item.get("landmark_to_tracking_transform"))),
        }


def _node(body: Row) -> Iterator[Row]:
    data = body.get("node_data") or {}
    clouds = (
        "filtered_gravity_aligned_point_cloud",
        "high_resolution_point_cloud",
        "low_resolution_point_cloud",
    )
    row: Row = {"node_index": (body.get("node_id") or {}).get("node_index", 0)}
    row.update(_pose_columns(pose7(data.get("local_pose"))))
    for name in clouds:
        row[name.replace("point_cloud", "points")] = (data.get(name) or {}).get("num_points", 0)
    yield row


def _submap(body: Row) -> Iterator[Row]:
    two = body.get("submap_2d")
    submap = two if two is not None else body.get("submap_3d") or {}
    row: Row = {
        "submap_index": (body.get("submap_id") or {}).get("submap_index", 0),
        "dims": 2 if two is not None else 3 if "submap_3d" in body else None,
        "num_range_data": submap.get("num_range_data", 0),
        "finished": submap.get("finished", False),
    }
    row.update(_pose_columns(pose7(submap.get("local_pose")), "local_"))
    limits = (submap.get("grid") or {}).get("limits") or {}
    cells = limits.get("cell_limits") or {}
    row.update(
        resolution=limits.get("resolution", 0.0),
        num_x_cells=cells.get("num_x_cells", 0),
        num_y_cells=cells.get("num_y_cells", 0),
    )
    yield row


def _trajectory_data(body: Row) -> Iterator[Row]:
    q = body.get("imu_calibration") or {}
    row: Row = {"gravity_constant": body.get("gravity_constant", 0.0)}
    row.update({f"imu_calibration_q{a}": q.get(a, 0.0) for a in ("x", "y", "z", "w")})
    row.update(_pose_columns(pose7(body.get("fixed_frame_origin_in_map")), "fixed_frame_"))
    yield row


_FIELDS: dict[str, Callable[[Row], Iterator[Row]]] = {
    IMU: _imu,
    ODOMETRY: _timed_pose("odometry_data"),
    FIXED_FRAME: _timed_pose("fixed_frame_pose_data"),
    LANDMARK: _landmark,
    NODE: _node,
    SUBMAP: _submap,
    TRAJECTORY_DATA: _trajectory_data,
}

TABLES: dict[str, Callable[[PbstreamRecording, Selection | None], Iterator[Row]]] = {
    "trajectory": _trajectory,
    "submap_poses": _submap_poses,
    "constraint": _constraint,
    "landmark_poses": _landmark_poses,
    **{kind: _record_rows(kind) for kind in _FIELDS},
}


def iter_rows(rec: PbstreamRecording, kind: str, selection: Selection | None) -> Iterator[Row]:
    """The rows of table `kind`; `UsageError` for a kind with no table."""
    if kind not in TABLES:
        raise UsageError(f"no table {kind!r} (tables: {', '.join(TABLES)})")
    return TABLES[kind](rec, selection)


def options_dims(rec: PbstreamRecording) -> set[int]:
    """2 and/or 3, from which builder options (2D field 1, 3D field 2) the entries carry."""
    found: set[int] = set()
    for number in rec.numbers_of(OPTIONS).tolist()[:1]:
        body = decode_record(OPTIONS, rec.entry(number)[1])
        for entry in body.get("options_with_sensor_ids", []):
            options = entry.get("trajectory_builder_options") or {}
            if "trajectory_builder_2d_options" in options:
                found.add(2)
            if "trajectory_builder_3d_options" in options:
                found.add(3)
    return found


__all__ = ["TABLES", "iter_rows", "options_dims", "pose_rows", "record_rows", "selected"]
