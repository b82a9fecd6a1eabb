"""CARLA's `/tf` and `/carla/scene` messages in Foxglove's protobuf encoding, as bytes.

An item (a `FrameTransform` of `FrameTransforms`, a `SceneEntity` of `SceneUpdate`) is laid
out as three pieces, field order free as protobuf allows:

- its head: the item's tag and length, then what does not change between frames (frame
  ids; an entity's id, lifetime and metadata), kept per actor;
- the frame's timestamp field, one bytes object shared by every item of the frame;
- its block: every double of the item (`TF_BLOCK`: translation and rotation;
  `CUBE_BLOCK`: the cube's pose, size and colour), written by `DoubleBlock` for all the rows
  of a run of frames at once.

Numbers go on a binary grid (`nanorec.mcap_protobuf.on_grid`): metres to 2**-20 (under a
micrometre), quaternions to 2**-30, which is the resolution the JSON encoding had (6 and 9
decimals) with zero low bytes that zstd compresses. `quantized` is the one rounding of
both the fast and the reference path (`mcap.py`).
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from nanorec import mcap_protobuf as pb
from nanorec.mcap import McapRecord

if TYPE_CHECKING:
    from .world import Actor, World

POSITION_BITS, QUATERNION_BITS = 20, 30
#: translation (3) and rotation (4) of a FrameTransform (fields 4 and 5).
TF_BLOCK = pb.DoubleBlock([*pb.message(4, pb.doubles(3)), *pb.message(5, pb.doubles(4))])
#: A SceneEntity's cube (field 8): pose (position 3, orientation 4), size (3), colour (4).
CUBE_BLOCK = pb.DoubleBlock(
    pb.message(
        8,
        pb.message(1, pb.message(1, pb.doubles(3)), pb.message(2, pb.doubles(4))),
        pb.message(2, pb.doubles(3)),
        pb.message(3, pb.doubles(4)),
    )
)
TF_ITEM, ENTITY_ITEM = 1, 2  # FrameTransforms.transforms, SceneUpdate.entities
_DELETIONS = 1  # SceneUpdate.deletions


def quantized(values: npt.ArrayLike, bits: int = POSITION_BITS) -> npt.NDArray[np.float64]:
    return pb.on_grid(values, bits)


def stamp(time_ns: int) -> bytes:
    """The timestamp field (1) of a transform, an entity or a deletion."""
    return pb.timestamp(1, time_ns)


@functools.lru_cache(maxsize=1 << 16)
def transform_body(parent_frame: str, actor_id: int) -> bytes:
    """A transform's frame ids (fields 2 and 3)."""
    return pb.string(2, parent_frame) + pb.string(3, f"actor/{actor_id}")


@functools.lru_cache(maxsize=1 << 16)
def entity_body(frame_id: str, actor_id: int, metadata: tuple[tuple[str, str], ...]) -> bytes:
    """An entity's frame, id, lifetime (zero: until replaced) and metadata; `frame_locked`
    stays false (proto3's default, left out)."""
    pairs = b"".join(pb.field(6, pb.string(1, k) + pb.string(2, v)) for k, v in metadata)
    return pb.string(2, frame_id) + pb.string(3, f"actor/{actor_id}") + pb.field(4, b"") + pairs


@functools.lru_cache(maxsize=1 << 16)
def head(item: int, body: bytes, rest: int) -> bytes:
    """An item's tag and length (its `body` plus `rest` bytes: timestamp and block), then
    its body."""
    return pb.tag(item, 2) + pb.varint(len(body) + rest) + body


def lay(heads: list[bytes], stamp_field: bytes, blocks: list[Any], first: bytes = b"") -> bytes:
    """A message: `first`, then per item its head, the timestamp and its block."""
    count = len(heads)
    pieces: list[bytes] = [stamp_field] * (3 * count)
    pieces[0::3] = heads
    pieces[2::3] = blocks
    return first + b"".join(pieces)


_TF_SCALE = np.array([2.0**POSITION_BITS] * 3 + [2.0**QUATERNION_BITS] * 4)
_CUBE_SCALE = np.array(
    [2.0**POSITION_BITS] * 3 + [2.0**QUATERNION_BITS] * 4 + [2.0**POSITION_BITS] * 3
)


def transforms_values(
    position: npt.NDArray[np.float64], quaternion: npt.NDArray[np.float64]
) -> npt.NDArray[np.float64]:
    """(rows, 7) values of `TF_BLOCK`, on the grid (as `quantized` puts them)."""
    values = np.concatenate([position, quaternion], axis=-1)
    values *= _TF_SCALE
    np.rint(values, out=values)
    values /= _TF_SCALE
    return values


def cube_values(
    centre: npt.NDArray[np.float64],
    quaternion: npt.NDArray[np.float64],
    size: npt.NDArray[np.float64],
    colour: npt.NDArray[np.float64],
) -> npt.NDArray[np.float64]:
    """(rows, 14) values of `CUBE_BLOCK`, on the grid (the colours as they are)."""
    values = np.concatenate([centre, quaternion, size, colour], axis=-1)
    pose = values[:, :10]
    pose *= _CUBE_SCALE
    np.rint(pose, out=pose)
    pose /= _CUBE_SCALE
    return values


def deletions(time_ns: int, actor_ids: list[int]) -> bytes:
    """The SceneUpdate's deletions (by id: type 0, left out) of `actor/<id>`."""
    when = stamp(time_ns)
    return b"".join(
        pb.field(_DELETIONS, when + pb.string(3, f"actor/{actor_id}")) for actor_id in actor_ids
    )


def transforms(time_ns: int, bodies: list[bytes], values: npt.NDArray[np.float64]) -> bytes:
    """One FrameTransforms: `bodies` from `transform_body`, `values` from
    `transforms_values`."""
    when = stamp(time_ns)
    rest = len(when) + TF_BLOCK.width
    heads = [head(TF_ITEM, body, rest) for body in bodies]
    return lay(heads, when, TF_BLOCK.rows(values))


def scene(
    time_ns: int, deleted: list[int], bodies: list[bytes], values: npt.NDArray[np.float64]
) -> bytes:
    """One SceneUpdate: `bodies` from `entity_body`, `values` from `cube_values`."""
    when = stamp(time_ns)
    rest = len(when) + CUBE_BLOCK.width
    heads = [head(ENTITY_ITEM, body, rest) for body in bodies]
    return lay(heads, when, CUBE_BLOCK.rows(values), deletions(time_ns, deleted))


class RunMessages:
    """One topic's messages for the frames of a run: every item's block laid at once
    (`DoubleBlock.rows` of `values`, frame after frame), its head picked per frame from
    the run's few distinct `bodies` (`which[frame, item]` indexes them), and each frame's
    timestamp (`stamps`, from `stamp`)."""

    def __init__(
        self,
        type_name: str,
        block: pb.DoubleBlock,
        values: npt.NDArray[np.float64],
        bodies: list[bytes],
        which: npt.NDArray[np.intp],
        stamps: list[bytes],
    ) -> None:
        item = TF_ITEM if type_name == "foxglove.FrameTransforms" else ENTITY_ITEM
        count, width = which.shape
        pieces = self.pieces = np.empty((count, width, 3), object)
        rests = [len(when) + block.width for when in stamps]
        for rest in set(rests):
            heads = np.empty(len(bodies), object)
            heads[:] = [head(item, body, rest) for body in bodies]
            frames = [f for f, r in enumerate(rests) if r == rest]
            pieces[frames, :, 0] = heads[which[frames]]
        column = np.empty((count, 1), object)
        column[:, 0] = stamps
        pieces[:, :, 1] = column
        pieces[:, :, 2] = np.array(block.rows(values), object).reshape(count, width)

    def data(self, frame: int) -> bytes:
        """Frame `frame` of the run, encoded."""
        return b"".join(self.pieces[frame].ravel().tolist())


def frame_records(
    world: World,
    actors: list[Actor],
    position: npt.NDArray[np.float64],
    quaternion: npt.NDArray[np.float64],
    time_ns: int,
    topics: set[str],
) -> Iterator[McapRecord]:
    """`/tf` and `/carla/scene` of one frame as `mcap.frame_records` draws it (its actors,
    their poses in Foxglove axes), encoded here: the reference path, one frame at a time."""
    from .mcap import TOPICS, _boxes, reference_frame

    frames = [reference_frame(actor) for actor in actors]
    if actors and TOPICS["tf"] in topics:
        bodies = [transform_body(f, a.id) for f, a in zip(frames, actors, strict=True)]
        data = transforms(time_ns, bodies, transforms_values(position, quaternion))
        yield pb.record(
            TOPICS["tf"], "foxglove.FrameTransforms", time_ns, data, sequence=world.index
        )
    if TOPICS["scene"] in topics and (actors or world.events.destroyed):
        kinds, centre, size = _boxes(actors, position, quaternion)
        lights = world.traffic_lights
        rows: list[int] = []
        bodies, colours = [], []
        for row, (actor, kind, frame) in enumerate(zip(actors, kinds, frames, strict=True)):
            if actor.type_id == "spectator":
                continue
            light = lights.get(actor.id) if actor.id in lights else None
            state = None if light is None or light.state is None else light.state.name
            role = actor.attributes.get("role_name")
            body, colour = entity_parts(
                frame, actor.id, actor.type_id, kind, role, actor.parent_id, state
            )
            rows.append(row)
            bodies.append(body)
            colours.append(colour)
        keep = np.asarray(rows, np.intp)
        rgba = np.asarray(colours, np.float64).reshape(-1, 4)
        values = cube_values(centre[keep], quaternion[keep], size[keep], rgba)
        data = scene(time_ns, list(world.events.destroyed), bodies, values)
        yield pb.record(
            TOPICS["scene"], "foxglove.SceneUpdate", time_ns, data, sequence=world.index
        )


@functools.lru_cache(maxsize=1 << 16)
def entity_parts(
    frame_id: str,
    actor_id: int,
    blueprint: str,
    kind: str,
    role: str | None,
    parent: int | None,
    state: str | None,
) -> tuple[bytes, tuple[float, ...]]:
    """An entity's body (`entity_body`) and colour (r, g, b, a) from all they depend on."""
    from .mcap import _labels

    metadata, colour = _labels(actor_id, blueprint, kind, role, parent, state)
    pairs = tuple((item["key"], item["value"]) for item in metadata)
    return entity_body(frame_id, actor_id, pairs), tuple(colour[c] for c in "rgba")


__all__ = [
    "CUBE_BLOCK",
    "ENTITY_ITEM",
    "TF_BLOCK",
    "TF_ITEM",
    "RunMessages",
    "cube_values",
    "deletions",
    "entity_body",
    "entity_parts",
    "frame_records",
    "head",
    "lay",
    "quantized",
    "scene",
    "stamp",
    "transform_body",
    "transforms",
    "transforms_values",
]
