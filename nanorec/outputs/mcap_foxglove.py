"""Foxglove's message schemas, JSON-encoded, for converters that export MCAP.

Foxglove (the viewer) recognises its own types by schema name (`foxglove.SceneUpdate`...)
in any encoding. We use the JSON encoding with the JSON Schemas Foxglove publishes
(`mcap_schemas.json`, copied unchanged from the `@foxglove/schemas` package): no protobuf
dependency, and a message is a plain dict. JSON conventions of those schemas: times and
durations are `{"sec", "nsec"}`, enums are integers, bytes are base64 text. Messages that
are mostly numbers, many per frame (CARLA's `/tf` and scene), are better written in
Foxglove's protobuf encoding: `nanorec.outputs.mcap_protobuf`.

The helpers build the small shared pieces (times, poses, colours) as plain dicts.
"""

from __future__ import annotations

import base64
import functools
import json
from importlib import resources
from typing import Any

import numpy as np
import numpy.typing as npt

from nanorec.outputs.mcap import McapRecord, json_bytes
from nanorec.untyped import Json

#: foxglove.Log levels.
LOG_INFO, LOG_WARNING = 2, 3
#: foxglove.LinePrimitive types.
LINE_STRIP, LINE_LOOP, LINE_LIST = 0, 1, 2
#: foxglove.SceneEntityDeletion type: delete the entity with this id.
DELETE_MATCHING_ID = 0
#: foxglove.PackedElementField numeric types.
UINT8, INT8 = 1, 2

IDENTITY_QUATERNION: dict[str, float] = {"x": 0.0, "y": 0.0, "z": 0.0, "w": 1.0}
ZERO_DURATION: dict[str, int] = {"sec": 0, "nsec": 0}


@functools.cache
def _all_schemas() -> dict[str, Any]:
    text = resources.files("nanorec.outputs").joinpath("mcap_schemas.json").read_text("utf-8")
    schemas: dict[str, Any] = json.loads(text)
    return schemas


def schema_names() -> list[str]:
    """The Foxglove types bundled here."""
    return sorted(name for name in _all_schemas() if name.startswith("foxglove."))


@functools.cache
def schema(name: str) -> bytes:
    """The JSON Schema of Foxglove type `name` (`"foxglove.SceneUpdate"`), as bytes; the
    same bytes object every call. Raises KeyError for a type not bundled."""
    return json_bytes(_all_schemas()[name])


def stamp(time_ns: int) -> dict[str, int]:
    """A Foxglove time from integer nanoseconds (>= 0)."""
    sec, nsec = divmod(time_ns, 1_000_000_000)
    return {"sec": sec, "nsec": nsec}


def vector(x: float, y: float, z: float) -> dict[str, float]:
    return {"x": x, "y": y, "z": z}


def pose(position: tuple[float, float, float], quaternion: tuple[float, ...]) -> dict[str, Any]:
    """A foxglove.Pose from (x, y, z) metres and an (x, y, z, w) quaternion."""
    qx, qy, qz, qw = quaternion
    return {
        "position": vector(*position),
        "orientation": {"x": qx, "y": qy, "z": qz, "w": qw},
    }


def color(r: float, g: float, b: float, a: float = 1.0) -> dict[str, float]:
    return {"r": r, "g": g, "b": b, "a": a}


def entity(
    time_ns: int, frame_id: str, entity_id: str, metadata: dict[str, str], **primitives: Json
) -> dict[str, Any]:
    """A foxglove.SceneEntity that stays until replaced or deleted, with every primitive
    list the schema requires (empty unless given: `cubes=[...]`, `lines=[...]`)."""
    item: dict[str, Any] = {
        "timestamp": stamp(time_ns),
        "frame_id": frame_id,
        "id": entity_id,
        "lifetime": ZERO_DURATION,
        "frame_locked": False,
        "metadata": [{"key": key, "value": value} for key, value in metadata.items()],
    }
    for name in ("arrows", "cubes", "spheres", "cylinders", "lines", "triangles", "texts"):
        item[name] = primitives.pop(name, [])
    item["models"] = primitives.pop("models", [])
    if primitives:
        raise TypeError(f"unknown primitives: {', '.join(primitives)}")
    return item


def log(time_ns: int, level: int, message: str, name: str) -> dict[str, Any]:
    """A foxglove.Log entry (no source file)."""
    return {
        "timestamp": stamp(time_ns),
        "level": level,
        "message": message,
        "name": name,
        "file": "",
        "line": 0,
    }


def base64_text(data: bytes) -> str:
    """Bytes fields (foxglove.Grid's `data`) in the JSON encoding."""
    return base64.b64encode(data).decode("ascii")


def frame_transform(
    time_ns: int,
    parent: str,
    child: str,
    translation: tuple[float, float, float],
    quaternion: tuple[float, ...],
) -> dict[str, Any]:
    """A foxglove.FrameTransform (metres, x/y/z/w quaternion)."""
    qx, qy, qz, qw = quaternion
    return {
        "timestamp": stamp(time_ns),
        "parent_frame_id": parent,
        "child_frame_id": child,
        "translation": vector(*translation),
        "rotation": {"x": qx, "y": qy, "z": qz, "w": qw},
    }


def pose_in_frame(
    time_ns: int, frame_id: str, position: tuple[float, float, float], quaternion: tuple[float, ...]
) -> dict[str, Any]:
    """A foxglove.PoseInFrame."""
    return {"timestamp": stamp(time_ns), "frame_id": frame_id, "pose": pose(position, quaternion)}


def line_strip(
    points: npt.ArrayLike, rgba: tuple[float, float, float, float], thickness: float = 0.05
) -> dict[str, Any]:
    """A foxglove.LinePrimitive joining (n, 3) points in metres, `thickness` in metres."""
    xyz = np.asarray(points, np.float64).reshape(-1, 3).tolist()
    return {
        "type": LINE_STRIP,
        "pose": pose((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0)),
        "thickness": thickness,
        "scale_invariant": False,
        "points": [{"x": x, "y": y, "z": z} for x, y, z in xyz],
        "color": color(*rgba),
        "colors": [],
        "indices": [],
    }


def occupancy_grid(
    time_ns: int,
    frame_id: str,
    cells: npt.NDArray[Any],
    resolution: float,
    origin: tuple[float, float, float] = (0.0, 0.0, 0.0),
    quaternion: tuple[float, ...] = (0.0, 0.0, 0.0, 1.0),
) -> dict[str, Any]:
    """A foxglove.Grid of one 8-bit field `occupancy` (int8 as ROS maps: -1 unknown, 0-100;
    or uint8). `cells[row, column]`: row 0 is the one at the origin (lowest y), columns run
    along +x; `resolution` metres per cell; `origin` the corner of cell (0, 0)."""
    if cells.ndim != 2 or cells.dtype.itemsize != 1 or cells.dtype.kind not in "iu":
        raise TypeError(f"a grid is a 2D array of int8 or uint8, not {cells.dtype} {cells.shape}")
    columns = cells.shape[1]
    return {
        "timestamp": stamp(time_ns),
        "frame_id": frame_id,
        "pose": pose(origin, quaternion),
        "column_count": columns,
        "cell_size": {"x": resolution, "y": resolution},
        "row_stride": columns,
        "cell_stride": 1,
        "fields": [
            {"name": "occupancy", "offset": 0, "type": INT8 if cells.dtype.kind == "i" else UINT8}
        ],
        "data": base64_text(np.ascontiguousarray(cells).tobytes()),
    }


def occupancy_from_probability(probability: npt.ArrayLike) -> npt.NDArray[np.int8]:
    """ROS occupancy values (int8: 0-100 percent, -1 unknown) from probabilities in [0, 1]
    (NaN for cells never observed), for `occupancy_grid`."""
    p = np.asarray(probability, np.float64)
    known = np.isfinite(p)
    cells = np.full(p.shape, -1, np.int8)
    cells[known] = np.rint(np.clip(p[known], 0.0, 1.0) * 100).astype(np.int8)
    return cells


def record(
    topic: str, type_name: str, time_ns: int, message: dict[str, Any], *, sequence: int = 0
) -> McapRecord:
    """An `McapRecord` of Foxglove type `type_name`, JSON-encoded, logged at `time_ns`."""
    return McapRecord(
        topic=topic,
        schema_name=type_name,
        schema_encoding="jsonschema",
        schema_data=schema(type_name),
        message_encoding="json",
        log_time_ns=time_ns,
        publish_time_ns=time_ns,
        data=json_bytes(message),
        sequence=sequence,
    )


__all__ = [
    "DELETE_MATCHING_ID",
    "IDENTITY_QUATERNION",
    "INT8",
    "LINE_LIST",
    "LINE_LOOP",
    "LINE_STRIP",
    "LOG_INFO",
    "LOG_WARNING",
    "UINT8",
    "ZERO_DURATION",
    "base64_text",
    "color",
    "entity",
    "frame_transform",
    "line_strip",
    "log",
    "occupancy_from_probability",
    "occupancy_grid",
    "pose",
    "pose_in_frame",
    "record",
    "schema",
    "schema_names",
    "stamp",
    "vector",
]
