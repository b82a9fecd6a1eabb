"""A plain sequential replay of a CARLA file, written independently of nanorec's codec.

It walks the file from the first byte with `struct` only and keeps, as CARLA's replayer
does (spec §8), the live actors from EventAdd/EventDel, their parents from EventParent,
the latest pose of each actor from Position, and the latest traffic-light state. Tests
compare `CarlaRecording.frame(n)` (which seeks through event tables) with this.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Snapshot:
    """The replayed state after one complete frame."""

    index: int
    frame_id: int
    elapsed: float
    actors: dict[int, dict[str, Any]] = field(default_factory=dict)
    traffic_lights: dict[int, tuple[int, bool, float]] = field(default_factory=dict)


def replay(data: bytes, *, vector: str = "f") -> Iterator[Snapshot]:
    """Yield the state after every frame that ends with a FrameEnd (ids 0-7 are the same
    in every release; `vector` is "f" for UE4 files and "d" for UE5)."""
    vec = struct.Struct("<3" + vector)
    (magic_len,) = struct.unpack_from("<H", data, 2)
    pos = 4 + magic_len + 8
    (map_len,) = struct.unpack_from("<H", data, pos)
    pos += 2 + map_len
    actors: dict[int, dict[str, Any]] = {}
    lights: dict[int, tuple[int, bool, float]] = {}
    index = 0
    frame_id = 0
    elapsed = 0.0
    while pos + 5 <= len(data):
        pid, size = struct.unpack_from("<BI", data, pos)
        body = data[pos + 5 : pos + 5 + size]
        if len(body) < size:
            return
        pos += 5 + size
        if pid == 0:
            frame_id, _, elapsed = struct.unpack_from("<Qdd", body)
        elif pid == 1:
            yield Snapshot(
                index,
                frame_id,
                elapsed,
                {k: dict(v) for k, v in actors.items()},
                dict(lights),
            )
            index += 1
        elif pid == 2:
            _read_adds(body, vec, actors)
        elif pid == 3:
            (count,) = struct.unpack_from("<H", body)
            for i in range(count):
                (actor_id,) = struct.unpack_from("<I", body, 2 + 4 * i)
                actors.pop(actor_id, None)
        elif pid == 4:
            (count,) = struct.unpack_from("<H", body)
            for i in range(count):
                child, parent = struct.unpack_from("<II", body, 2 + 8 * i)
                if child in actors:
                    actors[child]["parent_id"] = parent
        elif pid == 6:
            (count,) = struct.unpack_from("<H", body)
            record = 4 + 2 * vec.size
            for i in range(count):
                at = 2 + record * i
                (actor_id,) = struct.unpack_from("<I", body, at)
                location = vec.unpack_from(body, at + 4)
                roll, pitch, yaw = vec.unpack_from(body, at + 4 + vec.size)
                if actor_id in actors:
                    actors[actor_id]["location"] = location
                    actors[actor_id]["rotation"] = (pitch, yaw, roll)
        elif pid == 7:
            (count,) = struct.unpack_from("<H", body)
            for i in range(count):
                light_id, frozen, light_elapsed, state = struct.unpack_from(
                    "<IBfB", body, 2 + 10 * i
                )
                lights[light_id] = (state, bool(frozen), light_elapsed)


def _read_adds(body: bytes, vec: struct.Struct, actors: dict[int, dict[str, Any]]) -> None:
    (count,) = struct.unpack_from("<H", body)
    at = 2
    for _ in range(count):
        actor_id, _type = struct.unpack_from("<IB", body, at)
        at += 5
        location = vec.unpack_from(body, at)
        roll, pitch, yaw = vec.unpack_from(body, at + vec.size)
        at += 2 * vec.size + 4  # + blueprint uid
        blueprint, at = _string(body, at)
        (attr_count,) = struct.unpack_from("<H", body, at)
        at += 2
        attributes = {}
        for _ in range(attr_count):
            at += 1  # attribute type
            key, at = _string(body, at)
            value, at = _string(body, at)
            attributes[key] = value
        actors[actor_id] = {
            "type_id": blueprint,
            "attributes": attributes,
            "parent_id": None,
            "location": location,
            "rotation": (pitch, yaw, roll),
        }


def _string(body: bytes, at: int) -> tuple[str, int]:
    (size,) = struct.unpack_from("<H", body, at)
    return body[at + 2 : at + 2 + size].decode("utf-8", "surrogateescape"), at + 2 + size
