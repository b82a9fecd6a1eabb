"""Clips: a standalone CARLA recording of frames [start, stop) that CARLA can replay.

CARLA's replayer creates actors only from EventAdd packets (spec §8), so a clip cut
out of the middle of a recording must restate the world in its first frame: an EventAdd
for every actor alive at `start` (its blueprint, attributes, and its pose at `start`),
an EventParent for every attachment, and the latest scene lights, traffic-light times,
physics control, bounding boxes, trigger volumes, door states and weather. The rest of
the first frame is the original frame's own packets (positions, traffic-light states,
animations...). Later frames are copied; frame ids restart at 1, elapsed times at 0, and
the last frame's duration is -1 as CARLA writes it.
"""

from __future__ import annotations

import hashlib
import os
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from nanorec.archive.atomic import atomic_output
from nanorec.contract import ExportReport
from nanorec.errors import FormatError, UsageError
from nanorec.untyped import Payload

from .ids import ADDITIONAL_DATA, SHAPES, Engine, Kind, Shape
from .message import (
    FRAME_START,
    PACKET_HEADER,
    iter_message_packets,
)
from .meta import read_meta
from .recording import CarlaRecording
from .records import ActorAdd, PhysicsControl, serialize_var_body
from .world import World
from .world_tables import SPARSE_FIXED_KINDS, WorldTables

_COUNT = struct.Struct("<H")


def export_clip(
    recording: CarlaRecording,
    output: str | os.PathLike[str],
    *,
    start: int,
    stop: int,
    overwrite: bool = False,
) -> ExportReport:
    """Write frames `[start, stop)` of `recording` as a standalone CARLA file at `output`;
    the contract's report, `details` saying the range and the actors spawned in its first
    frame.

    The world state at clip frame k equals the original's at frame `start + k`. Raises
    `UsageError` for an empty or out-of-range frame range, `FormatError` for a damaged
    frame, and `OutputExistsError` when `output` exists and `overwrite` is false.
    """
    count = len(recording)
    if not 0 <= start < stop <= count:
        raise UsageError(f"frames {start}:{stop} are not a non-empty range within 0:{count}")
    digest = hashlib.sha256()
    size = 0
    spawned = 0
    with atomic_output(output, overwrite=overwrite) as stream:
        for chunk, actors in _iter_clip(recording, start, stop):
            stream.write(chunk)
            digest.update(chunk)
            size += len(chunk)
            spawned += actors
    details = {"start": start, "stop": stop, "actors_spawned": spawned}
    return ExportReport(Path(output), size, digest.hexdigest(), stop - start, None, details)


def _iter_clip(rec: CarlaRecording, start: int, stop: int) -> Iterator[tuple[bytes, int]]:
    yield _header_bytes(rec), 0
    base = _elapsed(rec.frame_map(start))
    first, actors = _first_frame(rec, start, stop)
    yield first + (_frame_end(rec, start) if stop - start == 1 else b""), actors
    for index in range(start + 1, stop):
        frame = rec.frame_map(index)
        _, duration, elapsed = _frame_start(frame)
        if index == stop - 1:
            duration = -1.0
        replace = {Kind.FRAME_START: FRAME_START.pack(index - start + 1, duration, elapsed - base)}
        body = _packets(rec, frame, replace)
        yield body + (_frame_end(rec, index) if index == stop - 1 else b""), 0


def _frame_end(rec: CarlaRecording, index: int) -> bytes:
    """A FrameEnd packet for the clip's last frame when the source frame had none (a damaged
    source): without it the clip's last frame would read as cut short, one frame lost."""
    order = rec.frame_map(index).get("order")
    if isinstance(order, int) and 0 <= order < len(rec.orders):
        order = rec.orders[order]
    end_id = next(pid for pid, kind in rec.family.ids.items() if kind is Kind.FRAME_END)
    if isinstance(order, bytes) and end_id in order:
        return b""
    return PACKET_HEADER.pack(end_id, 0)


def _header_bytes(rec: CarlaRecording) -> bytes:
    return bytes(read_meta(rec.reader)["header"]["bytes"])


def _frame_start(frame: Payload) -> tuple[int, float, float]:
    value = frame.get("start")
    if value is None:
        raise FormatError("a frame of the archive has no FrameStart record")
    frame_id, duration, elapsed = FRAME_START.unpack(value)
    return int(frame_id), float(duration), float(elapsed)


def _elapsed(frame: Payload) -> float:
    return _frame_start(frame)[2]


def _packets(rec: CarlaRecording, frame: Payload, replace: dict[Kind, bytes]) -> bytes:
    """A frame's native bytes with the bodies of the kinds in `replace` swapped."""
    family = rec.family
    parts = []
    for pid, body in iter_message_packets(frame, family, rec.orders):
        kind = family.kind_of(pid)
        if kind in replace:
            body = replace[kind]
        parts.append(PACKET_HEADER.pack(pid, len(body)) + body)
    return b"".join(parts)


def _first_frame(rec: CarlaRecording, start: int, stop: int) -> tuple[bytes, int]:
    """The clip's first frame: the world at `start` restated, then the frame's own packets."""
    family = rec.family
    engine = family.engine
    tables = rec.tables
    frame = rec.frame_map(start)
    world = rec.frame(start)
    _, duration, _ = _frame_start(frame)
    original = list(iter_message_packets(frame, family, rec.orders))
    present = {family.kind_of(pid) for pid, _ in original}
    additional = Kind.PLATFORM_TIME in present
    rows = tables.alive_rows(start)

    bodies: dict[Kind, bytes] = {
        Kind.FRAME_START: FRAME_START.pack(1, -1.0 if stop - start == 1 else duration, 0.0),
        Kind.EVENT_ADD: serialize_var_body(_spawns(tables, rows, world, engine), engine),
        Kind.EVENT_DEL: _COUNT.pack(0),
        Kind.EVENT_PARENT: _fixed(
            np.array(
                [(child, parent) for child, parent in _parents(world)],
                dtype=[("id", "<u4"), ("parent_id", "<u4")],
            )
        ),
    }
    alive = tables.spawn_ids[rows]
    for kind in SPARSE_FIXED_KINDS:
        if kind not in family.kinds or (kind in ADDITIONAL_DATA and not additional):
            continue
        table = tables.sparse[kind]
        if kind is Kind.SCENE_LIGHT:
            latest = table.latest_rows(start, "light_id")
        elif kind is Kind.WEATHER:
            latest = table.upto(start)[-1:]
        elif kind is Kind.VEHICLE_DOOR:
            latest = _latest_doors(table.upto(start), alive)
        else:
            latest = table.latest_rows(start, "id")
            latest = latest[np.isin(latest["id"], alive)]
        if len(latest) or kind in present:
            bodies[kind] = _fixed(latest)
    if additional and Kind.PHYSICS_CONTROL in family.kinds:
        physics = [world.actors[i].physics_control for i in world.actors]
        controls = [p for p in physics if isinstance(p, PhysicsControl)]
        if controls:
            bodies[Kind.PHYSICS_CONTROL] = serialize_var_body(controls, engine)

    parts: list[bytes] = []
    written: set[Kind] = set()
    extra: list[tuple[int, bytes]] = []
    own = {family.kind_of(pid): body for pid, body in reversed(original)}
    for item in family.order:
        kind = item.kind
        pid = family.kinds.get(kind)
        if pid is None:
            continue
        if kind in bodies:
            body = bodies[kind]
            if not item.always and SHAPES[kind] is not Shape.SINGLE and body == _COUNT.pack(0):
                continue
        elif kind in own:
            body = own[kind]
        else:
            continue
        written.add(kind)
        if kind is Kind.FRAME_END:
            for extra_pid, extra_body in extra:
                parts.append(PACKET_HEADER.pack(extra_pid, len(extra_body)) + extra_body)
        parts.append(PACKET_HEADER.pack(pid, len(body)) + body)
        if kind is Kind.FRAME_START:
            # Packets the family's order does not place (unknown ids) go before FrameEnd.
            extra = [(p, b) for p, b in original if family.kind_of(p) is None]
    return b"".join(parts), len(rows)


def _spawns(
    tables: WorldTables, rows: np.ndarray[Any, Any], world: Any, engine: Engine
) -> list[ActorAdd]:
    """EventAdd records of the actors alive at the clip start, posed where they are."""
    vec = "<f4" if engine is Engine.UE4 else "<f8"
    adds: list[ActorAdd] = []
    for row in rows.tolist():
        add = tables.spawn(row)
        actor = world.actors[add.id]
        location = np.array(actor.location, dtype=vec)
        rotation = np.array(
            (actor.rotation.roll, actor.rotation.pitch, actor.rotation.yaw), dtype=vec
        )
        adds.append(
            ActorAdd(add.id, add.type, location, rotation, add.uid, add.blueprint, add.attributes)
        )
    return adds


def _parents(world: World) -> list[tuple[int, int]]:
    return [
        (actor_id, parent)
        for actor_id in world.actors
        if (parent := world.actors[actor_id].parent_id) is not None
    ]


def _latest_doors(rows: np.ndarray[Any, Any], alive: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    latest: dict[tuple[int, int], int] = {}
    for position, (vehicle, door) in enumerate(
        zip(rows["id"].tolist(), rows["door"].tolist(), strict=True)
    ):
        latest[(vehicle, door)] = position
    picked = rows[sorted(latest.values())]
    return picked[np.isin(picked["id"], alive)]


def _fixed(rows: np.ndarray[Any, Any]) -> bytes:
    return _COUNT.pack(len(rows)) + rows.tobytes()


__all__ = ["export_clip"]
