"""The event tables of a CARLA recording: what seeking needs besides the frame's own message.

CARLA's replayer rebuilds the world by applying every EventAdd/EventDel/EventParent
from the beginning of the file (spec §8). Here the converter records those events
once, as small columnar *event tables* (`WorldTables`): each spawn with the frame
interval it is alive, each re-parenting, and every record of the kinds CARLA writes
only when something changes (bounding boxes, trigger volumes, traffic-light times,
physics control, scene lights, doors, weather). `WorldTablesBuilder` collects them frame
by frame while converting and packs them into the archive's world member; `WorldTables`
reads them back and answers "latest before frame n" with one `searchsorted` per table.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from nanorec.errors import FormatError, NanorecError
from nanorec.untyped import Payload

from .ids import Engine, Kind
from .message import from_text, kind_key, maps_to_var
from .records import FIXED_DTYPES, ActorAdd, Cursor, PhysicsControl
from .world import ActorDescription

__all__ = ["NEVER", "PARENT_DTYPE", "SPARSE_FIXED_KINDS", "WorldTables", "WorldTablesBuilder"]

_ID_TYPE = struct.Struct("<IB")
_UID_SIZE = struct.Struct("<IH")
_TYPE_SIZE = struct.Struct("<BH")
_U16 = struct.Struct("<H")

NEVER = np.iinfo(np.int64).max  # "end" of an actor that is never destroyed

# Kinds CARLA writes only when something changes: their latest value before a frame
# comes from the event tables, keyed by (actor or light) id.
SPARSE_FIXED_KINDS: tuple[Kind, ...] = (
    Kind.BOUNDING_BOX,
    Kind.TRIGGER_VOLUME,
    Kind.TRAFFIC_LIGHT_TIME,
    Kind.SCENE_LIGHT,
    Kind.VEHICLE_DOOR,
    Kind.WEATHER,
)


class Sparse:
    """Rows (frame index, record) of one sparse kind, in frame order."""

    def __init__(self, frames: npt.NDArray[np.int64], rows: npt.NDArray[Any]) -> None:
        self.frames = frames
        self.rows = rows

    def upto(self, index: int) -> npt.NDArray[Any]:
        """Every row recorded at or before frame `index`."""
        return self.rows[: int(np.searchsorted(self.frames, index, side="right"))]

    def latest_rows(self, index: int, key: str) -> npt.NDArray[Any]:
        """The last row at or before `index` for each value of `key`."""
        rows = self.upto(index)
        if not len(rows):
            return rows
        # The last occurrence of each id: unique over the reversed rows.
        _, first_reversed = np.unique(rows[key][::-1], return_index=True)
        return rows[len(rows) - 1 - first_reversed]

    def latest_by(self, index: int, key: str) -> dict[int, np.void]:
        """`latest_rows` keyed by `key` (python dict of records)."""
        rows = self.latest_rows(index, key)
        return dict(zip(rows[key].tolist(), rows, strict=True))


class WorldTables:
    """The event tables of a recording; built by `WorldTablesBuilder`, stored in a member."""

    def __init__(self, engine: Engine, data: Mapping[str, Any]) -> None:
        self.engine = engine
        try:
            self.spawn_records: list[bytes] = list(data["spawns"])
            self.spawn_start = np.frombuffer(data["spawn_start"], np.int64)
            self.spawn_end = np.frombuffer(data["spawn_end"], np.int64)
            self.spawn_ids = np.frombuffer(data["spawn_ids"], np.uint32)
            self.spawn_first_pose = np.frombuffer(data["spawn_first_pose"], np.int64)
            parents = np.frombuffer(data["parents"], PARENT_DTYPE)
            self.parents = Sparse(parents["frame"].astype(np.int64), parents)
            self.sparse: dict[Kind, Sparse] = {}
            for kind in SPARSE_FIXED_KINDS:
                entry = data["sparse"].get(kind.value)
                dtype = FIXED_DTYPES[engine][kind]
                if entry is None:
                    frames, rows = np.empty(0, np.int64), np.empty(0, dtype)
                else:
                    frames = np.frombuffer(entry[0], np.int64)
                    rows = np.frombuffer(entry[1], dtype)
                self.sparse[kind] = Sparse(frames, rows)
            self.physics_frames = np.frombuffer(data["physics_frames"], np.int64)
            self.physics_ids = np.frombuffer(data["physics_ids"], np.uint32)
            self.physics_maps: list[dict[str, Any]] = list(data["physics"])
        except (KeyError, TypeError, ValueError, IndexError) as error:
            raise FormatError(f"damaged CARLA world tables: {error!r}") from None
        self._descriptions: dict[int, ActorDescription] = {}

    def description(self, row: int) -> ActorDescription:
        """The ActorDescription of spawn row `row` (decoded once, then cached)."""
        found = self._descriptions.get(row)
        if found is None:
            found = ActorDescription.of(self.spawn(row))
            self._descriptions[row] = found
        return found

    def spawn(self, row: int) -> ActorAdd:
        """The EventAdd record of spawn row `row`."""
        try:
            return ActorAdd.parse(Cursor(self.spawn_records[row]), self.engine)
        except NanorecError as error:
            raise FormatError(f"damaged spawn record {row} in the world tables: {error}") from None

    def alive_rows(self, index: int) -> npt.NDArray[np.intp]:
        """Spawn rows alive after frame `index`'s events, in spawn order."""
        return np.flatnonzero((self.spawn_start <= index) & (self.spawn_end > index))

    def parent_of(self, index: int, spawn_rows: npt.NDArray[np.intp]) -> dict[int, int]:
        """actor id -> parent id after frame `index`, for re-parentings within each lifetime."""
        latest = self.parents.latest_by(index, "child")
        result: dict[int, int] = {}
        starts = dict(
            zip(
                self.spawn_ids[spawn_rows].tolist(),
                self.spawn_start[spawn_rows].tolist(),
                strict=True,
            )
        )
        for child, row in latest.items():
            start = starts.get(child)
            if start is not None and int(row["frame"]) >= start:
                result[child] = int(row["parent"])
        return result

    def physics_at(self, index: int) -> dict[int, PhysicsControl]:
        """The latest PhysicsControl per vehicle at or before frame `index`."""
        stop = int(np.searchsorted(self.physics_frames, index, side="right"))
        latest: dict[int, int] = {}
        for row, actor_id in enumerate(self.physics_ids[:stop].tolist()):
            latest[actor_id] = row
        result: dict[int, PhysicsControl] = {}
        for actor_id, row in latest.items():
            (record,) = maps_to_var(Kind.PHYSICS_CONTROL, [self.physics_maps[row]], self.engine)
            assert isinstance(record, PhysicsControl)
            result[actor_id] = record
        return result


PARENT_DTYPE = np.dtype([("frame", "<i8"), ("child", "<u4"), ("parent", "<u4")])


def _spawn_rows(content: Payload, engine: Engine) -> list[tuple[int, str, bytes]] | None:
    """Each EventAdd of a frame map's columns as (actor id, blueprint, the record's bytes as
    `ActorAdd.serialize` gives them), without making the `ActorAdd`s (that round trip was a
    fifth of converting a small recording); None when the columns are not as `var_to_maps`
    writes them."""
    width = 3 * (4 if engine is Engine.UE4 else 8)
    try:
        ids = np.frombuffer(content["id"], "<u4").tolist()
        count = len(ids)
        locations = np.frombuffer(content["location"], np.uint8).tobytes()
        rotations = np.frombuffer(content["rotation"], np.uint8).tobytes()
        uids = np.frombuffer(content["uid"], "<u4").tolist()
        types = bytes(content["type"])
        names, attributes = content["type_id"], content["attributes"]
        if not (
            len(locations) == len(rotations) == count * width
            and len(types) == len(uids) == len(names) == len(attributes) == count
        ):
            return None
        rows = []
        for i in range(count):
            at = i * width
            name = _utf8(names[i])
            parts = [
                _ID_TYPE.pack(ids[i], types[i]),
                locations[at : at + width],
                rotations[at : at + width],
                _UID_SIZE.pack(uids[i], len(name)),
                name,
                _U16.pack(len(attributes[i])),
            ]
            for attr_type, attr_id, attr_value in attributes[i]:
                key, value = _utf8(attr_id), _utf8(attr_value)
                parts += [_TYPE_SIZE.pack(attr_type, len(key)), key, _U16.pack(len(value)), value]
            blueprint = names[i] if isinstance(names[i], str) else from_text(names[i])
            rows.append((ids[i], blueprint, b"".join(parts)))
    except (KeyError, TypeError, ValueError, IndexError, struct.error):
        return None
    return rows


def _utf8(text: str | bytes) -> bytes:
    """A frame map's string as the file's bytes (`message._text` made bytes of those that
    are not UTF-8)."""
    if isinstance(text, bytes):
        return text
    if isinstance(text, str):
        return text.encode("utf-8", "surrogateescape")
    raise TypeError(f"{type(text).__name__} is not a string")


class WorldTablesBuilder:
    """Collects the event tables while frames are converted, in order."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.spawns: list[bytes] = []  # each spawn's EventAdd record, as in the file
        self.spawn_type_ids: list[str] = []
        self.spawn_ids: list[int] = []
        self.spawn_start: list[int] = []
        self.spawn_end: list[int] = []
        self.spawn_first_pose: list[int] = []  # first frame with a Position record
        self.alive: dict[int, int] = {}  # actor id -> spawn row
        self.unposed: dict[int, int] = {}  # alive actor id -> spawn row, no Position yet
        self._position_dtype = FIXED_DTYPES[engine][Kind.POSITION]
        self._last_position_ids = b""
        self.parents: list[tuple[int, int, int]] = []
        self.parent: dict[int, int] = {}  # alive child id -> current parent id
        self.detached: list[int] = []  # ids re-added in the last frame that lost a parent
        self.sparse: dict[Kind, tuple[list[int], list[bytes]]] = {
            kind: ([], []) for kind in SPARSE_FIXED_KINDS
        }
        self.physics_frames: list[int] = []
        self.physics_ids: list[int] = []
        self.physics: list[dict[str, Any]] = []

    def observe(self, index: int, frame: Mapping[str, Any]) -> tuple[list[int], list[int]]:
        """Record frame `index`'s events; returns (ids spawned, ids destroyed) in it."""
        spawned: list[int] = []
        destroyed: list[int] = []
        self.detached = []
        adds = frame.get(kind_key(Kind.EVENT_ADD))
        if adds:
            rows = _spawn_rows(adds, self.engine)
            if rows is None:  # not as `var_to_maps` writes them: `maps_to_var` says why
                rows = []
                for add in maps_to_var(Kind.EVENT_ADD, adds, self.engine):
                    assert isinstance(add, ActorAdd)
                    rows.append((add.id, add.blueprint, add.serialize(self.engine)))
            for actor_id, blueprint, record in rows:
                previous = self.alive.get(actor_id)
                if previous is not None:  # re-added while alive: the new one replaces it
                    self.spawn_end[previous] = index
                    if self.parent.pop(actor_id, None) is not None:
                        self.detached.append(actor_id)
                self.alive[actor_id] = self.unposed[actor_id] = len(self.spawns)
                self.spawns.append(record)
                self.spawn_type_ids.append(blueprint)
                self.spawn_ids.append(actor_id)
                self.spawn_start.append(index)
                self.spawn_end.append(int(NEVER))
                self.spawn_first_pose.append(int(NEVER))
                spawned.append(actor_id)
        dels = frame.get(kind_key(Kind.EVENT_DEL))
        if dels:
            for actor_id in np.frombuffer(dels, "<u4").tolist():
                row = self.alive.pop(actor_id, None)
                self.unposed.pop(actor_id, None)
                self.parent.pop(actor_id, None)
                if row is not None:
                    self.spawn_end[row] = index
                destroyed.append(actor_id)
        positions = frame.get(kind_key(Kind.POSITION))
        if positions and self.unposed:
            ids = np.frombuffer(positions, self._position_dtype)["id"]
            key = ids.tobytes()
            if key != self._last_position_ids or spawned:  # the usual frame: same actors
                self._last_position_ids = key
                for actor_id in set(ids.tolist()) & self.unposed.keys():
                    self.spawn_first_pose[self.unposed.pop(actor_id)] = index
        parents = frame.get(kind_key(Kind.EVENT_PARENT))
        if parents:
            for child, parent in np.frombuffer(parents, "<u4").reshape(-1, 2).tolist():
                self.parents.append((index, child, parent))
                if child in self.alive:  # as CARLA's replayer: a dead child has no parent
                    self.parent[child] = parent
        for kind, (frames, blobs) in self.sparse.items():
            content = frame.get(kind_key(kind))
            if content:
                count = len(content) // FIXED_DTYPES[self.engine][kind].itemsize
                frames.extend([index] * count)
                blobs.append(bytes(content))
        physics = frame.get(kind_key(Kind.PHYSICS_CONTROL))
        if physics:
            for item in physics:
                self.physics_frames.append(index)
                self.physics_ids.append(int(item["id"]))
                self.physics.append(dict(item))
        return spawned, destroyed

    def to_value(self) -> dict[str, Any]:
        """The tables as one map for msgpack (columns as little-endian bytes): the world
        member (`ArchiveWriter.add_meta`), read back by the constructor."""
        parents = np.array(self.parents, dtype=PARENT_DTYPE) if self.parents else None
        return {
            "spawns": self.spawns,
            "spawn_ids": np.asarray(self.spawn_ids, np.uint32).tobytes(),
            "spawn_start": np.asarray(self.spawn_start, np.int64).tobytes(),
            "spawn_end": np.asarray(self.spawn_end, np.int64).tobytes(),
            "spawn_first_pose": np.asarray(self.spawn_first_pose, np.int64).tobytes(),
            "parents": b"" if parents is None else parents.tobytes(),
            "sparse": {
                kind.value: [np.asarray(frames, np.int64).tobytes(), b"".join(blobs)]
                for kind, (frames, blobs) in self.sparse.items()
                if frames
            },
            "physics_frames": np.asarray(self.physics_frames, np.int64).tobytes(),
            "physics_ids": np.asarray(self.physics_ids, np.uint32).tobytes(),
            "physics": self.physics,
        }
