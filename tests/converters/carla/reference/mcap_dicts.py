"""CARLA's MCAP messages of one frame with `/tf` and `/carla/scene` as Foxglove's JSON, built
as dicts from whole actors: the reference the tests compare the exported protobuf with
(`mcap.frame_records`), rounded as the protobuf is (`mcap_proto.quantized`). Only tests
(and bench/bench_mcap.py) use it, so it lives here and not in the shipped package."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import numpy.typing as npt

from nanorec.converters.carla.mcap import drawable_poses, json_records
from nanorec.converters.carla.mcap_proto import QUATERNION_BITS, quantized
from nanorec.converters.carla.mcap_scene import (
    TOPICS,
    actor_boxes,
    entity_labels,
    reference_frame,
)
from nanorec.converters.carla.world import Actor, World
from nanorec.outputs import mcap_foxglove as fox
from nanorec.outputs.mcap import McapRecord


def frame_records(
    world: World, time_ns: int, topics: set[str], actors: list[Actor] | None = None
) -> Iterator[McapRecord]:
    """`mcap.frame_records` with `/tf` and `/carla/scene` as Foxglove's JSON."""
    drawn, position, quaternion = drawable_poses(world, actors)
    yield from _tf_and_scene(world, drawn, position, quaternion, time_ns, topics)
    yield from json_records(world, time_ns, topics)


def _tf_and_scene(
    world: World,
    actors: list[Actor],
    position: npt.NDArray[np.float64],
    quaternion: npt.NDArray[np.float64],
    time_ns: int,
    topics: set[str],
) -> Iterator[McapRecord]:
    """One frame's `/tf` and `/carla/scene` (its drawable actors, poses in Foxglove axes)."""
    sequence = world.index
    if actors and TOPICS["tf"] in topics:
        yield fox.record(
            TOPICS["tf"],
            "foxglove.FrameTransforms",
            time_ns,
            {"transforms": _transforms(actors, position, quaternion, time_ns)},
            sequence=sequence,
        )
    if TOPICS["scene"] in topics and (actors or world.events.destroyed):
        entities = _entities(world, actors, position, quaternion, time_ns)
        yield fox.record(
            TOPICS["scene"],
            "foxglove.SceneUpdate",
            time_ns,
            {"deletions": _deletions(world, time_ns), "entities": entities},
            sequence=sequence,
        )


def _deletions(world: World, time_ns: int) -> list[dict[str, Any]]:
    return [
        {"timestamp": fox.stamp(time_ns), "type": fox.DELETE_MATCHING_ID, "id": f"actor/{i}"}
        for i in world.events.destroyed
    ]


def _transforms(
    actors: list[Actor],
    position: npt.NDArray[np.float64],
    quaternion: npt.NDArray[np.float64],
    time_ns: int,
) -> list[dict[str, Any]]:
    stamp = fox.stamp(time_ns)
    positions = quantized(position).tolist()
    quaternions = quantized(quaternion, QUATERNION_BITS).tolist()
    return [
        {
            "timestamp": stamp,
            "parent_frame_id": reference_frame(actor),
            "child_frame_id": f"actor/{actor.id}",
            "translation": {"x": p[0], "y": p[1], "z": p[2]},
            "rotation": {"x": q[0], "y": q[1], "z": q[2], "w": q[3]},
        }
        for actor, p, q in zip(actors, positions, quaternions, strict=True)
    ]


def _entities(
    world: World,
    actors: list[Actor],
    position: npt.NDArray[np.float64],
    quaternion: npt.NDArray[np.float64],
    time_ns: int,
) -> list[dict[str, Any]]:
    kinds, centre, size = actor_boxes(actors, position, quaternion)
    template = fox.entity(time_ns, "world", "", {})  # shared empty lists: JSON only reads them
    entities: list[dict[str, Any]] = []
    rows = zip(
        actors,
        kinds,
        quantized(centre).tolist(),
        quantized(quaternion, QUATERNION_BITS).tolist(),
        quantized(size).tolist(),
        strict=True,
    )
    for actor, kind, c, q, s in rows:
        if actor.type_id == "spectator":
            continue
        light = world.traffic_lights.get(actor.id) if actor.id in world.traffic_lights else None
        state = None if light is None or light.state is None else light.state.name
        role = actor.attributes.get("role_name")
        metadata, colour = entity_labels(
            actor.id, actor.type_id, kind, role, actor.parent_id, state
        )
        cube = {
            "pose": {
                "position": {"x": c[0], "y": c[1], "z": c[2]},
                "orientation": {"x": q[0], "y": q[1], "z": q[2], "w": q[3]},
            },
            "size": {"x": s[0], "y": s[1], "z": s[2]},
            "color": colour,
        }
        item = dict(template, id=f"actor/{actor.id}", metadata=metadata, cubes=[cube])
        item["frame_id"] = reference_frame(actor)
        entities.append(item)
    return entities


__all__ = ["frame_records"]
