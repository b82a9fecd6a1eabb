"""CARLA's `/tf` and `/carla/scene` messages in Foxglove's protobuf encoding, as bytes.

An item (a `FrameTransform` of `FrameTransforms`, a `SceneEntity` of `SceneUpdate`) is laid
out as three pieces, field order free as protobuf allows:

- its head: the item's tag and length, then what does not change between frames (frame
  ids; an entity's id, lifetime, metadata, and the start of its cube: size and colour),
  kept per actor;
- its block: the doubles that move (`TF_BLOCK`: translation and rotation; `POSE_BLOCK`:
  the cube's pose), written by `DoubleBlock` for all the rows of a run of frames at once;
- the frame's timestamp field, one bytes object shared by every item of the frame.

Numbers go on a binary grid (`nanorec.outputs.mcap_protobuf.on_grid`): metres to 2**-20 (under a
micrometre), quaternions to 2**-30, the resolution the JSON encoding had (6 and 9
decimals) with zero low bytes that zstd compresses. `quantized` is the rounding of both
the fast and the reference path (`mcap.py`), and `pose_columns` / `centre_columns` do
`to_foxglove` / `rotate`'s arithmetic column by column (the same floats).
"""

from __future__ import annotations

import functools
import struct
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from nanorec.outputs import mcap_protobuf as pb
from nanorec.outputs.mcap import McapRecord

from .mcap_scene import TOPICS, actor_boxes, entity_labels, reference_frame

if TYPE_CHECKING:
    from .world import Actor, World

POSITION_BITS, QUATERNION_BITS = 20, 30
#: translation (3) and rotation (4) of a FrameTransform (fields 4 and 5).
TF_BLOCK = pb.DoubleBlock([*pb.message(4, pb.doubles(3)), *pb.message(5, pb.doubles(4))])
#: A cube's pose (CubePrimitive field 1: position 3, orientation 4).
POSE_BLOCK = pb.DoubleBlock(
    pb.message(1, pb.message(1, pb.doubles(3)), pb.message(2, pb.doubles(4)))
)
TF_ITEM, ENTITY_ITEM = 1, 2  # FrameTransforms.transforms, SceneUpdate.entities
_CUBES, _DELETIONS = 8, 1  # SceneEntity.cubes, SceneUpdate.deletions
_CUBE_SIZE = 2 + 27 + 2 + 36 + POSE_BLOCK.width  # size, colour, pose
Columns = list[npt.NDArray[np.float64]]


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
def cube_start(size: tuple[float, ...], colour: tuple[float, ...]) -> bytes:
    """An entity's cube field up to its pose: tag, length, size (on the grid), colour."""
    return (
        pb.tag(_CUBES, 2)
        + pb.varint(_CUBE_SIZE)
        + b"\x12\x1b\x09%b\x11%b\x19%b" % tuple(struct.pack("<d", v) for v in size)
        + b"\x1a\x24\x09%b\x11%b\x19%b\x21%b" % tuple(struct.pack("<d", v) for v in colour)
    )


@functools.lru_cache(maxsize=1 << 16)
def head(item: int, body: bytes, rest: int) -> bytes:
    """An item's tag and length (its `body` plus `rest` bytes: block and timestamp), then
    its body."""
    return pb.tag(item, 2) + pb.varint(len(body) + rest) + body


def lay(heads: list[bytes], blocks: list[Any], stamp_field: bytes, first: bytes = b"") -> bytes:
    """A message: `first`, then per item its head, its block and the timestamp."""
    pieces: list[bytes] = [stamp_field] * (3 * len(heads))
    pieces[0::3] = heads
    pieces[1::3] = blocks
    return first + b"".join(pieces)


def pose_columns(
    location_cm: npt.NDArray[np.float64], rotation_deg: npt.NDArray[np.float64]
) -> tuple[Columns, Columns]:
    """`mcap.to_foxglove` as columns: (x, y, z) metres and (x, y, z, w) quaternions from
    (n, 3) locations and pitch/yaw/roll, the same operations on the same floats."""
    x, y, z = (location_cm[:, i] * k for i, k in enumerate((0.01, -0.01, 0.01)))
    pitch, yaw, roll = (np.radians(rotation_deg[:, i]) for i in range(3))
    half_pitch, half_yaw, half_roll = -pitch / 2, -yaw / 2, roll / 2
    cr, sr = np.cos(half_roll), np.sin(half_roll)
    cp, sp = np.cos(half_pitch), np.sin(half_pitch)
    cy, sy = np.cos(half_yaw), np.sin(half_yaw)
    quaternion = [
        sr * cp * cy - cr * sp * sy,
        cr * sp * cy + sr * cp * sy,
        cr * cp * sy - sr * sp * cy,
        cr * cp * cy + sr * sp * sy,
    ]
    return [x, y, z], quaternion


def centre_columns(position: Columns, quaternion: Columns, offset_m: Columns) -> Columns:
    """`position + mcap.rotate(quaternion, offset_m)` as columns (the same floats)."""
    u0, u1, u2, w = quaternion
    v0, v1, v2 = offset_m
    t0, t1, t2 = 2 * (u1 * v2 - u2 * v1), 2 * (u2 * v0 - u0 * v2), 2 * (u0 * v1 - u1 * v0)
    return [
        position[0] + (v0 + w * t0 + (u1 * t2 - u2 * t1)),
        position[1] + (v1 + w * t1 + (u2 * t0 - u0 * t2)),
        position[2] + (v2 + w * t2 + (u0 * t1 - u1 * t0)),
    ]


def on_grid(position: Columns, quaternion: Columns) -> Columns:
    """Block columns: a position and a quaternion, each on its grid."""
    return [quantized(c) for c in position] + [quantized(c, QUATERNION_BITS) for c in quaternion]


def deletions(time_ns: int, actor_ids: list[int]) -> bytes:
    """The SceneUpdate's deletions (by id: type 0, left out) of `actor/<id>`."""
    when = stamp(time_ns)
    return b"".join(
        pb.field(_DELETIONS, when + pb.string(3, f"actor/{actor_id}")) for actor_id in actor_ids
    )


def transforms(time_ns: int, bodies: list[bytes], values: Columns) -> bytes:
    """One FrameTransforms: `bodies` from `transform_body`, `values` from `on_grid`."""
    when = stamp(time_ns)
    rest = len(when) + TF_BLOCK.width
    heads = [head(TF_ITEM, body, rest) for body in bodies]
    return lay(heads, TF_BLOCK.rows(values), when)


def scene(time_ns: int, deleted: list[int], bodies: list[bytes], values: Columns) -> bytes:
    """One SceneUpdate: `bodies` from `entity_body` + `cube_start`, `values` (the cubes'
    poses) from `on_grid`."""
    when = stamp(time_ns)
    rest = len(when) + POSE_BLOCK.width
    heads = [head(ENTITY_ITEM, body, rest) for body in bodies]
    return lay(heads, POSE_BLOCK.rows(values), when, deletions(time_ns, deleted))


class RunMessages:
    """One topic's messages for the frames of a run. Each item is three pieces: its head,
    picked per frame from the run's few distinct `bodies` (`which[frame, item]` indexes
    them), its doubles, laid for the whole run at once (`values`: columns, frame after
    frame, item after item) and the frame's timestamp (`stamps`, from `stamp`). `keep`:
    the items (columns of `which`) that go into the messages."""

    def __init__(
        self,
        item: int,
        values: Columns,
        bodies: list[bytes],
        which: npt.NDArray[np.intp],
        stamps: list[bytes],
        keep: npt.NDArray[np.bool_] | None = None,
    ) -> None:
        block = TF_BLOCK if item == TF_ITEM else POSE_BLOCK
        if keep is not None and not keep.all():
            which = which[:, keep]
            rows = np.repeat(keep[None, :], len(which), axis=0).ravel()
            values = [column[rows] for column in values]
        count, width = which.shape
        pieces: list[Any] = [None] * (3 * count * width)
        rests = [len(when) + block.width for when in stamps]
        heads = np.empty((count, width), object)
        for rest in set(rests):
            distinct = np.empty(len(bodies), object)
            distinct[:] = [head(item, body, rest) for body in bodies]
            frames = [f for f, r in enumerate(rests) if r == rest]
            heads[frames] = distinct[which[frames]]
        pieces[0::3] = heads.ravel().tolist()
        pieces[1::3] = block.rows(values)
        times = np.empty(count, object)
        times[:] = stamps
        pieces[2::3] = np.repeat(times, width).tolist()
        self.width, self.pieces = 3 * width, pieces

    def data(self, frame: int) -> bytes:
        """Frame `frame` of the run, encoded."""
        return b"".join(self.pieces[frame * self.width : (frame + 1) * self.width])


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
    frames = [reference_frame(actor) for actor in actors]
    if actors and TOPICS["tf"] in topics:
        bodies = [transform_body(f, a.id) for f, a in zip(frames, actors, strict=True)]
        values = on_grid(list(position.T), list(quaternion.T))
        data = transforms(time_ns, bodies, values)
        yield pb.record(
            TOPICS["tf"], "foxglove.FrameTransforms", time_ns, data, sequence=world.index
        )
    if TOPICS["scene"] in topics and (actors or world.events.destroyed):
        kinds, centre, size = actor_boxes(actors, position, quaternion)
        sizes = quantized(size).tolist()
        lights = world.traffic_lights
        rows: list[int] = []
        bodies = []
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
            bodies.append(body + cube_start(tuple(sizes[row]), colour))
        keep = np.asarray(rows, np.intp)
        values = on_grid(list(centre[keep].T), list(quaternion[keep].T))
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
    metadata, colour = entity_labels(actor_id, blueprint, kind, role, parent, state)
    pairs = tuple((item["key"], item["value"]) for item in metadata)
    return entity_body(frame_id, actor_id, pairs), tuple(colour[c] for c in "rgba")


__all__ = [
    "ENTITY_ITEM",
    "POSE_BLOCK",
    "TF_BLOCK",
    "TF_ITEM",
    "RunMessages",
    "centre_columns",
    "cube_start",
    "deletions",
    "entity_body",
    "entity_parts",
    "frame_records",
    "head",
    "lay",
    "on_grid",
    "pose_columns",
    "quantized",
    "scene",
    "stamp",
    "transform_body",
    "transforms",
]
