"""What a CARLA actor looks like in Foxglove, whichever way a frame is drawn (`mcap.py`'s
reference path one `World` at a time, `mcap_frames` in runs, `mcap_proto`, `mcap_lights`,
and the ROS-standard export): the topics, each actor type's colour and default box, the
axes change (see `mcap.py`'s docstring), type names, frames, boxes and labels. Why a module:
every drawing path shares it, and it needs none of them.
"""

from __future__ import annotations

import functools
import itertools
from typing import Any

import numpy as np
import numpy.typing as npt

from nanorec.outputs import mcap_foxglove as fox
from nanorec.outputs.mcap import json_bytes

from .ids import ActorType
from .world import Actor

TOPICS = {
    "tf": "/tf",
    "scene": "/carla/scene",
    "traffic_lights": "/carla/traffic_lights",
    "collisions": "/carla/collisions",
    "events": "/carla/events",
}

# type name -> (colour rgba, default box origin offset in cm, default half-size in cm)
_STYLE: dict[str, tuple[tuple[float, ...], tuple[float, ...], tuple[float, ...]]] = {
    "vehicle": ((0.20, 0.45, 0.90, 0.85), (0.0, 0.0, 75.0), (230.0, 100.0, 75.0)),
    "walker": ((1.00, 0.55, 0.10, 0.85), (0.0, 0.0, 0.0), (25.0, 25.0, 90.0)),
    "traffic_light": ((0.50, 0.50, 0.50, 0.85), (0.0, 0.0, 200.0), (25.0, 25.0, 200.0)),
    "traffic_sign": ((0.90, 0.90, 0.90, 0.85), (0.0, 0.0, 100.0), (10.0, 50.0, 100.0)),
    "sensor": ((0.60, 0.20, 0.80, 0.85), (0.0, 0.0, 0.0), (10.0, 10.0, 10.0)),
    "other": ((0.60, 0.60, 0.60, 0.85), (0.0, 0.0, 50.0), (50.0, 50.0, 50.0)),
}
KIND_CODES = {name: code for code, name in enumerate(_STYLE)}
DEFAULT_OFFSET = np.array([style[1] for style in _STYLE.values()], np.float64)
DEFAULT_EXTENT = np.array([style[2] for style in _STYLE.values()], np.float64)
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


def rotate(
    quaternion: npt.NDArray[np.float64], v: npt.NDArray[np.float64]
) -> npt.NDArray[np.float64]:
    """Each (x, y, z, w) quaternion applied to the vector of the same row."""
    u, w = quaternion[:, :3], quaternion[:, 3:]
    t = 2 * _cross(u, v)
    out: npt.NDArray[np.float64] = v + w * t + _cross(u, t)
    return out


def _cross(a: npt.NDArray[np.float64], b: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """`np.cross` of (n, 3) rows, the same operations (so the same floats) without its
    axis handling, which costs more than the products on a frame's few hundred rows."""
    a0, a1, a2 = a.T
    b0, b1, b2 = b.T
    return np.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=1)


def type_name(actor: Actor) -> str:
    """vehicle, walker, traffic_light, traffic_sign, sensor or other: from the blueprint
    (stable across releases), else from EventAdd's type byte."""
    return type_name_of(actor.type_id, actor.type)


@functools.lru_cache(maxsize=4096)
def type_name_of(blueprint: str, actor_type: ActorType | int) -> str:
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


def vectors(items: list[Any]) -> npt.NDArray[np.float64]:
    """(n, 3) floats from n 3-tuples (ten times faster than `np.array` on named tuples)."""
    flat = itertools.chain.from_iterable(items)
    return np.fromiter(flat, np.float64, 3 * len(items)).reshape(-1, 3)


def actor_boxes(
    actors: list[Actor], position: npt.NDArray[np.float64], quaternion: npt.NDArray[np.float64]
) -> tuple[list[str], npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Each actor's type name, and its cube's centre and full size in metres."""
    kinds = [type_name(actor) for actor in actors]
    codes = np.fromiter((KIND_CODES[kind] for kind in kinds), np.intp, len(kinds))
    offset, extent = DEFAULT_OFFSET[codes], DEFAULT_EXTENT[codes]
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
def entity_labels(
    actor_id: int,
    blueprint: str,
    kind: str,
    role: str | None,
    parent: int | None,
    state: str | None,
) -> tuple[list[dict[str, str]], dict[str, float]]:
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
