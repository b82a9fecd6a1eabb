"""CARLA frames written as archive messages: one at a time (`write_frame`, the per-frame
way: decoded, observed by the world tables, packed) or as the fast rows of a run
(`write_rows`, see `runs.py`); the index flags and the NanoVer state changes they carry."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgpack
import numpy as np

from nanorec.archive.writer import ArchiveWriter
from nanorec.buffers import Buffer

from .frames import Frame, FrameMaps
from .ids import Family, Kind
from .message import FRAME_START, KIND_KEYS, RAW_KEY, kind_key, msgpack_text
from .meta import HEAD_KEY
from .runs import FastRows
from .world_tables import WorldTablesBuilder

STATE_FLAG = 1 << 40  # index flag: the message also carries a NanoVer `state` change
_KEY_BITS = {key: kind.bit for kind, key in KIND_KEYS.items()}


def write_frame(
    writer: ArchiveWriter,
    packer: msgpack.Packer,
    world: WorldTablesBuilder,
    buf: Buffer,
    index: int,
    run: Frame,
    raw_counts: dict[int, int],
    last_time: int,
    encoder: FrameMaps,
    head: dict[str, Any] | None = None,
) -> tuple[int, dict[str, Any]]:
    """Write one frame message (the first one also carries `head`); returns its timestamp
    (µs) and its frame map (the template of the frames that follow, see `runs.py`)."""
    frame, _ = encoder.encode(index, buf, run)
    for position, _body in frame.get(RAW_KEY, ()):
        pid = run.ids[position]
        raw_counts[pid] = raw_counts.get(pid, 0) + 1
    spawned, destroyed = world.observe(index, frame)
    message: dict[str, Any] = {"frame": frame}
    if head is not None:
        message[HEAD_KEY] = head
    flags = flags_of(frame)
    parents = frame.get(kind_key(Kind.EVENT_PARENT))
    if spawned or destroyed or parents:
        message["state"] = state_change(world, spawned, destroyed, parents)
        flags |= STATE_FLAG
    start = frame.get(kind_key(Kind.FRAME_START))
    elapsed = FRAME_START.unpack(start)[2] if start is not None else float("nan")
    # Index timestamps must not decrease; a damaged elapsed time keeps the previous one.
    timestamp = round(elapsed * 1e6) if np.isfinite(elapsed) and elapsed >= 0 else last_time
    timestamp = max(timestamp, last_time)
    writer.write_packed(
        packer.pack(message), types=list(message), timestamp_us=timestamp, flags=flags
    )
    return timestamp, frame


def write_rows(writer: ArchiveWriter, rows: FastRows, template: Mapping[str, Any]) -> None:
    """Write the fast rows of frames like `template` (their `count` is final after)."""
    for data, stamps in rows.groups:
        writer.write_stored_rows(data, stamps, types=("frame",), flags=flags_of(template))


def flags_of(frame: Mapping[str, Any]) -> int:
    """The index flags of a frame map: one bit per kind it holds records of."""
    flags = 0
    for key in frame:
        flags |= _KEY_BITS.get(key, 0)
    return flags


def first_head(header_bytes: bytes, fam: Family, prelude: bytes) -> dict[str, Any]:
    """What the first message carries besides its frame: the file's header and release
    family, and any packets before the first frame, so that an archive recovered from a
    killed writer (without its CARLA member) can be made whole again (`adopt.py`)."""
    return {"header": header_bytes, "family": fam.name, "prelude": prelude}


def state_change(
    world: WorldTablesBuilder, spawned: list[int], destroyed: list[int], parents: bytes | None
) -> dict[str, Any]:
    """A frame's NanoVer state change: `actor.<id>` -> blueprint id for each live actor,
    `parent.<id>` -> parent id for each attached one (kept small: repeated per change)."""
    updates: dict[str, Any] = {}
    for actor_id in spawned:
        row = world.alive.get(actor_id)
        if row is not None:
            # bytes when the blueprint is not UTF-8 (msgpack strings must be)
            updates[f"actor.{actor_id}"] = msgpack_text(world.spawn_type_ids[row])
    if parents:
        for child in np.frombuffer(parents, "<u4")[::2].tolist():
            parent = world.parent.get(child)
            if parent is not None:
                updates[f"parent.{child}"] = parent
    removals = []
    for actor_id in destroyed:
        if actor_id not in world.alive:
            removals += [f"actor.{actor_id}", f"parent.{actor_id}"]
    # re-added while attached: the new actor has no parent (unless attached again)
    removals += [f"parent.{i}" for i in world.detached if i not in world.parent]
    return {"updates": updates, "removals": removals}
