"""The JSON of a CARLA frame's `/tf` and `/carla/scene` messages, written as bytes.

Those two messages hold every live actor of every frame, a dozen bytes of JSON per byte of
CARLA source: building a dict per transform and per cube, then encoding them, was most of
the MCAP export. Here the parts that do not change from frame to frame (an actor's frame
ids, metadata, colour) are encoded once per actor and kept; a frame's numbers (rounded
as `mcap.py` rounds them) are encoded by one `orjson.dumps` of a flat list and cut at the
commas, and each transform or entity is one `bytes %` of those pieces. The bytes are the
ones `orjson.dumps` gives for `mcap.py`'s dicts (same key order, same number text);
`tests/mcap/test_carla_fast.py` compares both on every sample and real file. Only with
orjson: without it `nanorec.mcap.json_bytes` writes numbers differently, and `mcap.py` keeps
its dicts.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Iterator
from typing import Any

import numpy as np
import numpy.typing as npt

from nanorec import mcap_foxglove as fox
from nanorec.mcap import McapRecord

from .mcap import (
    POSITION_DECIMALS,
    QUATERNION_DECIMALS,
    TOPICS,
    _boxes,
    _deletions,
    _labels,
    reference_frame,
)
from .world import Actor, World

_orjson: Any
try:
    _orjson = importlib.import_module("orjson")
except ImportError:
    _orjson = None

AVAILABLE = _orjson is not None

_TRANSFORM = (
    b'{"timestamp":%b%b,"translation":{"x":%b,"y":%b,"z":%b},'
    b'"rotation":{"x":%b,"y":%b,"z":%b,"w":%b}}'
)
_ENTITY = (
    b'{"timestamp":%b%b%b,"y":%b,"z":%b},"orientation":{"x":%b,"y":%b,"z":%b,"w":%b}},'
    b'"size":{"x":%b,"y":%b,"z":%b},"color":%b}],"spheres":[],"cylinders":[],"lines":[],'
    b'"triangles":[],"texts":[],"models":[]}'
)


def stamp(time_ns: int) -> bytes:
    """A Foxglove time as `fox.stamp` gives it, encoded."""
    sec, nsec = divmod(time_ns, 1_000_000_000)
    return b'{"sec":%d,"nsec":%d}' % (sec, nsec)


def numbers(rows: npt.NDArray[np.float64]) -> list[bytes]:
    """Each value of `rows` (row after row) as `orjson` writes that Python float."""
    if not rows.size:
        return []
    text: bytes = _orjson.dumps(rows.ravel().tolist())
    return text[1:-1].split(b",")


@functools.lru_cache(maxsize=1 << 16)
def transform_head(parent_frame: str, actor_id: int) -> bytes:
    """What follows the timestamp of a transform, up to its numbers."""
    return b',"parent_frame_id":%b,"child_frame_id":%b' % (
        _orjson.dumps(parent_frame),
        _orjson.dumps(f"actor/{actor_id}"),
    )


def transforms(
    stamp_json: bytes,
    heads: list[bytes],
    position: npt.NDArray[np.float64],
    quaternion: npt.NDArray[np.float64],
) -> bytes:
    """`{"transforms": [...]}`: `heads[i]` from `transform_head`, positions and quaternions
    already rounded."""
    values = numbers(np.concatenate([position, quaternion], axis=1))
    items = [
        _TRANSFORM % (stamp_json, head, *values[7 * row : 7 * row + 7])
        for row, head in enumerate(heads)
    ]
    return b'{"transforms":[' + b",".join(items) + b"]}"


@functools.lru_cache(maxsize=1 << 16)
def entity_head(frame_id: str, actor_id: int, metadata: bytes) -> bytes:
    """What follows an entity's timestamp, up to its cube's first number."""
    return (
        b',"frame_id":%b,"id":%b,"lifetime":{"sec":0,"nsec":0},"frame_locked":false,'
        b'"metadata":%b,"arrows":[],"cubes":[{"pose":{"position":{"x":'
        % (_orjson.dumps(frame_id), _orjson.dumps(f"actor/{actor_id}"), metadata)
    )


def encoded(value: Any) -> bytes:
    """`value` (metadata, a colour) encoded once, for the caches."""
    data: bytes = _orjson.dumps(value)
    return data


def scene_update(
    stamp_json: bytes,
    deletions: list[dict[str, Any]],
    entities: list[tuple[int, bytes, bytes]],
    cubes: npt.NDArray[np.float64],
) -> bytes:
    """`{"deletions": [...], "entities": [...]}`: `entities` are (row of `cubes`, head from
    `entity_head`, colour encoded); `cubes` rows are centre (3), quaternion (4), size (3),
    already rounded."""
    values = numbers(cubes)
    items = [
        _ENTITY % (stamp_json, head, *values[10 * row : 10 * row + 10], colour)
        for row, head, colour in entities
    ]
    return b'{"deletions":' + encoded(deletions) + b',"entities":[' + b",".join(items) + b"]}"


def frame_bytes_records(
    world: World,
    actors: list[Actor],
    position: npt.NDArray[np.float64],
    quaternion: npt.NDArray[np.float64],
    time_ns: int,
    topics: set[str],
) -> Iterator[McapRecord]:
    """`/tf` and `/carla/scene` of one frame as `mcap.frame_records` makes them (its
    actors, poses in Foxglove axes, time), encoded here."""
    stamp_json = stamp(time_ns)
    frames = [reference_frame(actor) for actor in actors]
    rounded = np.round(quaternion, QUATERNION_DECIMALS)
    if actors and TOPICS["tf"] in topics:
        heads = [transform_head(f, a.id) for f, a in zip(frames, actors, strict=True)]
        data = transforms(stamp_json, heads, np.round(position, POSITION_DECIMALS), rounded)
        yield _record(TOPICS["tf"], "foxglove.FrameTransforms", time_ns, data, world.index)
    if TOPICS["scene"] in topics and (actors or world.events.destroyed):
        kinds, centre, size = _boxes(actors, position, quaternion)
        lights = world.traffic_lights
        entities: list[tuple[int, bytes, bytes]] = []
        for row, (actor, kind, frame) in enumerate(zip(actors, kinds, frames, strict=True)):
            if actor.type_id == "spectator":
                continue
            light = lights.get(actor.id) if actor.id in lights else None
            state = None if light is None or light.state is None else light.state.name
            role = actor.attributes.get("role_name")
            head, colour = _entity_parts(
                frame, actor.id, actor.type_id, kind, role, actor.parent_id, state
            )
            entities.append((row, head, colour))
        cubes = np.concatenate(
            [np.round(centre, POSITION_DECIMALS), rounded, np.round(size, POSITION_DECIMALS)],
            axis=1,
        )
        data = scene_update(stamp_json, _deletions(world, time_ns), entities, cubes)
        yield _record(TOPICS["scene"], "foxglove.SceneUpdate", time_ns, data, world.index)


def _record(topic: str, type_name: str, time_ns: int, data: bytes, sequence: int) -> McapRecord:
    return McapRecord(
        topic,
        type_name,
        "jsonschema",
        fox.schema(type_name),
        "json",
        time_ns,
        time_ns,
        data,
        sequence=sequence,
    )


@functools.lru_cache(maxsize=1 << 16)
def _entity_parts(
    frame_id: str,
    actor_id: int,
    blueprint: str,
    kind: str,
    role: str | None,
    parent: int | None,
    state: str | None,
) -> tuple[bytes, bytes]:
    """An entity's head (`entity_head`) and colour, encoded, from all they depend on."""
    metadata, colour = _labels(actor_id, blueprint, kind, role, parent, state)
    return entity_head(frame_id, actor_id, encoded(metadata)), encoded(colour)


__all__ = [
    "AVAILABLE",
    "encoded",
    "entity_head",
    "frame_bytes_records",
    "numbers",
    "scene_update",
    "stamp",
    "transform_head",
    "transforms",
]
