"""CARLA frames to MCAP records straight from the archive's arrays: no `World`, no `Actor`.

`mcap.frame_records` draws a frame from its `World` (an `Actor` per live actor, then per
actor Python to encode it, `mcap_json`). Here a frame's live actors are columns: spawn
rows, ids and poses matched with numpy from the frame's Position records and the world
tables, so that no Python runs per actor. An actor's JSON parts that do not change
between frames (frame ids, metadata, colour: `mcap_json`'s heads) are kept per spawn row
and picked for a frame's rows at once; a frame's numbers are written by one `orjson.dumps`
of an array, cut at the commas, and laid between the fixed JSON text by list slices, so
the bytes are `mcap_json`'s (and the dict path's): `tests/mcap/test_carla_fast.py`.

A frame with something this path does not draw (spawns, destructions, collisions, an
actor whose pose is in an earlier frame, repeated ids) goes through `mcap.frame_records`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from nanorec.mcap import McapRecord, json_bytes

from .ids import Kind, TrafficLightState
from .mcap import (
    _DEFAULT_EXTENT,
    _DEFAULT_OFFSET,
    _KIND_CODES,
    POSITION_DECIMALS,
    QUATERNION_DECIMALS,
    TOPICS,
    TRAFFIC_LIGHTS_SCHEMA,
    _labels,
    _type_name,
    rotate,
    to_foxglove,
)
from .mcap_json import _orjson, _record, encoded, entity_head, stamp, transform_head
from .message import kind_key, records

if TYPE_CHECKING:
    from .recording import CarlaRecording
    from .world import _Sparse

_EVENTS = tuple(kind_key(kind) for kind in (Kind.EVENT_ADD, Kind.EVENT_DEL, Kind.COLLISION))
_STATES = {state.value: state.name for state in TrafficLightState}
_NUMPY = None if _orjson is None else _orjson.OPT_SERIALIZE_NUMPY
# A transform: head (to `"translation":{"x":`), then 7 numbers between these texts.
_TF_TEXT = (b',"y":', b',"z":', b'},"rotation":{"x":', b',"y":', b',"z":', b',"w":', b"}}")
# An entity: head (to `"position":{"x":`), 10 numbers between these texts, then its tail.
_ENTITY_TEXT = (
    b',"y":',
    b',"z":',
    b'},"orientation":{"x":',
    b',"y":',
    b',"z":',
    b',"w":',
    b'}},"size":{"x":',
    b',"y":',
    b',"z":',
)
_NO_TIMES = (None, None, None)
_NO_STATE = dict.fromkeys(
    ("id", "state", "is_frozen", "elapsed_time", "green_time", "yellow_time", "red_time")
)
_TAIL = b'}],"spheres":[],"cylinders":[],"lines":[],"triangles":[],"texts":[],"models":[]}'


class _Latest:
    """`_Sparse.latest_rows(index, key)`, recomputed only when rows were added since."""

    def __init__(self, sparse: _Sparse, key: str) -> None:
        self.sparse, self.key, self.count = sparse, key, -1
        self.rows: Any = None
        self.by_id: dict[int, Any] | None = None  # for the caller to fill, per `rows`
        self.ids: npt.NDArray[Any] = np.empty(0, np.int64)

    def at(self, index: int) -> Any:
        count = int(np.searchsorted(self.sparse.frames, index, side="right"))
        if count != self.count:
            self.count, self.by_id = count, None
            self.rows = self.sparse.latest_rows(index, self.key)
            self.ids = self.rows[self.key].astype(np.int64) if len(self.rows) else self.ids[:0]
        return self.rows


def _match(keys: npt.NDArray[Any], wanted: npt.NDArray[Any]) -> tuple[Any, Any]:
    """For each of `wanted`: its position in `keys` (sorted, unique) and whether found."""
    at = np.searchsorted(keys, wanted)
    at[at >= len(keys)] = 0
    found = keys[at] == wanted if len(keys) else np.zeros(len(wanted), np.bool_)
    return at, found


class FrameDrawer:
    """The `/tf`, `/carla/scene` and `/carla/traffic_lights` records of frames of one
    recording, from arrays (None for a frame this path leaves to `mcap.frame_records`)."""

    def __init__(self, recording: CarlaRecording, topics: set[str]) -> None:
        self.recording, self.topics = recording, topics
        tables = self.tables = recording.tables
        self.engine = tables.engine
        count = len(tables.spawn_ids)
        self.spawn_ids = tables.spawn_ids.astype(np.int64)
        self.known = np.zeros(count, np.bool_)
        self.kind = np.zeros(count, np.intp)
        self.spectator = np.zeros(count, np.bool_)
        self.spawn_pose = np.zeros((count, 6), np.float64)  # location, pitch/yaw/roll
        self.head_key = np.full((count, 3), -2, np.int64)  # parent, world frame, state
        self.tf_head = np.empty(count, object)
        self.entity_head = np.empty(count, object)
        self.tail = np.empty(count, object)
        # Spawns come in frame order: the live set changes when a count below changes.
        self.ordered = bool((np.diff(tables.spawn_start) >= 0).all())
        self.ends = np.sort(tables.spawn_end)
        self.alive_key: tuple[int, int] = (-1, -1)
        self.alive: tuple[Any, Any] = (None, None)
        self.boxes = _Latest(tables.sparse[Kind.BOUNDING_BOX], "id")
        self.light_times = _Latest(tables.sparse[Kind.TRAFFIC_LIGHT_TIME], "id")
        self.parents = _Latest(tables.parents, "child")

    def records(self, number: int, time_ns: int) -> list[McapRecord] | None:
        frame = self.recording.frame_map(number)
        if any(frame.get(key) for key in _EVENTS):
            return None
        start = records(frame, Kind.FRAME_START, self.engine)
        if len(start) != 1:
            return None
        drawn = self._actors(number, frame)
        if drawn is None:
            return None
        out: list[McapRecord] = []
        stamp_json = stamp(time_ns)
        rows, position, quaternion, offset, extent = drawn
        if len(rows) and TOPICS["tf"] in self.topics:
            data = self._transforms(stamp_json, rows, position, quaternion)
            out.append(_record(TOPICS["tf"], "foxglove.FrameTransforms", time_ns, data, number))
        if len(rows) and TOPICS["scene"] in self.topics:
            data = self._scene(stamp_json, rows, position, quaternion, offset, extent)
            out.append(_record(TOPICS["scene"], "foxglove.SceneUpdate", time_ns, data, number))
        if TOPICS["traffic_lights"] in self.topics:
            lights = self._lights(number, frame, time_ns, int(start["id"][0]))
            if lights is not None:
                out.append(lights)
        return out

    def _actors(self, index: int, frame: Any) -> tuple[Any, ...] | None:
        """The frame's drawable actors: spawn rows, Foxglove poses, box offsets and half
        extents (cm); None when the frame needs `World` (see the module docstring)."""
        tables = self.tables
        rows, ids = self._alive(index)
        if ids is None:
            return None
        poses = records(frame, Kind.POSITION, self.engine)
        pose_ids = poses["id"].astype(np.int64)
        order = np.argsort(pose_ids, kind="stable")
        sorted_ids = pose_ids[order]
        if len(sorted_ids) > 1 and not (sorted_ids[1:] != sorted_ids[:-1]).all():
            return None  # one actor twice: `World` keeps the last
        at, posed = _match(sorted_ids, ids)
        if not posed.all() and (tables.spawn_first_pose[rows[~posed]] < index).any():
            return None  # posed in an earlier frame only
        spawn = self.spawn_pose[rows]
        pose = spawn.copy()
        if len(poses):
            found = order[at[posed]]
            pose[posed, :3] = poses["location"][found]
            pose[posed, 3:] = poses["rotation"][found][:, [1, 2, 0]]  # roll, pitch, yaw
        spawned_here = ~posed | (tables.spawn_start[rows] == index)
        at_spawn = spawned_here & (pose == spawn).all(axis=1)
        parent = self._parent(index, rows, ids)
        finite = np.isfinite(pose).all(axis=1)
        if not finite.all():
            rows, ids, pose = rows[finite], ids[finite], pose[finite]
            at_spawn, parent = at_spawn[finite], parent[finite]
        world = ~(at_spawn & (parent >= 0))
        state = self._states(frame, ids)
        self._heads(rows, parent, world, state)
        position, quaternion = to_foxglove(pose[:, :3], pose[:, 3:])
        offset, extent = _DEFAULT_OFFSET[self.kind[rows]], _DEFAULT_EXTENT[self.kind[rows]]
        boxes = self.boxes.at(index)
        if len(boxes):
            at, boxed = _match(self.boxes.ids, ids)
            values = np.concatenate(
                [boxes["origin"][at[boxed]], boxes["extent"][at[boxed]]], axis=1
            ).astype(np.float64)
            usable = np.isfinite(values).all(axis=1)
            where = np.flatnonzero(boxed)[usable]
            offset[where], extent[where] = values[usable, :3], values[usable, 3:]
        return rows, position, quaternion, offset, extent

    def _alive(self, index: int) -> tuple[Any, Any]:
        """The spawn rows alive after frame `index` and their ids (None when an id is
        there twice); the same arrays as long as no actor came or went."""
        tables = self.tables
        key = (
            int(np.searchsorted(tables.spawn_start, index, side="right")),
            int(np.searchsorted(self.ends, index, side="right")),
        )
        if key != self.alive_key or not self.ordered:
            rows = tables.alive_rows(index)
            ids = self.spawn_ids[rows]
            self._learn(rows[~self.known[rows]])
            self.alive = rows, ids if len(np.unique(ids)) == len(ids) else None
            self.alive_key = key
        return self.alive

    def _learn(self, rows: npt.NDArray[np.intp]) -> None:
        """What never changes for a spawn row: type, spectator, spawn transform."""
        for row in rows.tolist():
            desc = self.tables.description(row)
            self.kind[row] = _KIND_CODES[_type_name(desc.type_id, desc.type)]
            self.spectator[row] = desc.type_id == "spectator"
            self.spawn_pose[row] = (*desc.location, *desc.rotation)
            self.known[row] = True

    def _parent(self, index: int, rows: Any, ids: Any) -> npt.NDArray[np.int64]:
        """Each actor's parent id after frame `index` (-1 for none), as `parent_of`."""
        parent = np.full(len(ids), -1, np.int64)
        latest = self.parents.at(index)
        if len(latest):
            at, found = _match(self.parents.ids, ids)
            found &= latest["frame"][at].astype(np.int64) >= self.tables.spawn_start[rows]
            parent[found] = latest["parent"][at[found]]
        return parent

    def _states(self, frame: Any, ids: Any) -> npt.NDArray[np.int64]:
        """Each actor's traffic-light state code in the frame (-1: none or unknown code)."""
        state = np.full(len(ids), -1, np.int64)
        lights = records(frame, Kind.STATE, self.engine)
        if len(lights):
            order = np.argsort(lights["id"], kind="stable")
            light_ids = lights["id"][order].astype(np.int64)
            last = np.ones(len(order), np.bool_)  # the last record of each id (as `World`)
            last[:-1] = light_ids[1:] != light_ids[:-1]
            light_ids, codes = light_ids[last], lights["state"][order][last].astype(np.int64)
            at, found = _match(light_ids, ids)
            found &= codes[at] <= max(_STATES)
            state[found] = codes[at[found]]
        return state

    def _heads(self, rows: Any, parent: Any, world: Any, state: Any) -> None:
        """Make sure each row's cached JSON parts are for its parent, frame and state."""
        key = np.stack([parent, world.astype(np.int64), state], axis=1)
        stale = (self.head_key[rows] != key).any(axis=1)
        for row, (parent_id, in_world, code) in zip(
            rows[stale].tolist(), key[stale].tolist(), strict=True
        ):
            desc = self.tables.description(row)
            actor_id = int(self.spawn_ids[row])
            frame_id = "world" if in_world else f"actor/{parent_id}"
            kind = _type_name(desc.type_id, desc.type)
            metadata, colour = _labels(
                actor_id,
                desc.type_id,
                kind,
                desc.attributes.get("role_name"),
                None if parent_id < 0 else parent_id,
                _STATES.get(code),
            )
            self.tf_head[row] = transform_head(frame_id, actor_id) + b',"translation":{"x":'
            self.entity_head[row] = entity_head(frame_id, actor_id, encoded(metadata))
            self.tail[row] = b'},"color":' + encoded(colour) + _TAIL
            self.head_key[row] = (parent_id, in_world, code)

    def _transforms(self, stamp_json: bytes, rows: Any, position: Any, quaternion: Any) -> bytes:
        values = np.concatenate(
            [np.round(position, POSITION_DECIMALS), np.round(quaternion, QUATERNION_DECIMALS)],
            axis=1,
        )
        return (
            b'{"transforms":['
            + _lay(b',{"timestamp":' + stamp_json, self.tf_head[rows], values, _TF_TEXT, None)
            + b"]}"
        )

    def _scene(
        self,
        stamp_json: bytes,
        rows: Any,
        position: Any,
        quaternion: Any,
        offset: Any,
        extent: Any,
    ) -> bytes:
        centre = position + rotate(quaternion, offset * np.array([0.01, -0.01, 0.01]))
        size = np.abs(extent) * 0.02  # half-size in cm -> full size in m
        keep = ~self.spectator[rows]
        values = np.concatenate(
            [
                np.round(centre, POSITION_DECIMALS),
                np.round(quaternion, QUATERNION_DECIMALS),
                np.round(size, POSITION_DECIMALS),
            ],
            axis=1,
        )[keep]
        kept = rows[keep]
        heads, tails = self.entity_head[kept], self.tail[kept]
        items = _lay(b',{"timestamp":' + stamp_json, heads, values, _ENTITY_TEXT, tails)
        return b'{"deletions":[],"entities":[' + items + b"]}"

    def _lights(self, index: int, frame: Any, time_ns: int, frame_id: int) -> McapRecord | None:
        """`mcap._lights` from the frame's State records and the latest light times."""
        times = self.light_times
        times.at(index)
        if times.by_id is None:
            times.by_id = {row[0]: row[1:] for row in times.rows.tolist()}
        spans = times.by_id
        names = _STATES
        found: dict[int, dict[str, Any]] = {}
        for light_id, frozen, elapsed, code in records(frame, Kind.STATE, self.engine).tolist():
            green, yellow, red = spans.get(light_id, _NO_TIMES)
            found[light_id] = {
                "id": light_id,
                "state": names.get(code),
                "is_frozen": bool(frozen),
                "elapsed_time": elapsed,
                "green_time": green,
                "yellow_time": yellow,
                "red_time": red,
            }
        for light_id, (green, yellow, red) in spans.items():
            if light_id not in found:
                found[light_id] = dict(_NO_STATE, id=light_id, green_time=green)
                found[light_id].update(yellow_time=yellow, red_time=red)
        if not found:
            return None
        message = {
            "timestamp": {"sec": time_ns // 1_000_000_000, "nsec": time_ns % 1_000_000_000},
            "frame_id": frame_id,
            "lights": [found[light_id] for light_id in sorted(found)],
        }
        return McapRecord(
            TOPICS["traffic_lights"],
            "carla.TrafficLights",
            "jsonschema",
            TRAFFIC_LIGHTS_SCHEMA,
            "json",
            time_ns,
            time_ns,
            json_bytes(message),
            sequence=index,
        )


def _lay(
    start: bytes,
    heads: npt.NDArray[Any],
    values: npt.NDArray[np.float64],
    texts: tuple[bytes, ...],
    tails: npt.NDArray[Any] | None,
) -> bytes:
    """Rows of JSON, comma-separated: `start`, the row's head, then its numbers with
    `texts` between them (and its tail): one orjson call and list slices, no loop."""
    count, width = values.shape
    if not count:
        return b""
    numbers = _orjson.dumps(values.ravel(), option=_NUMPY)[1:-1].split(b",")
    step = 2 + 2 * width  # start, head, then each number and the text after it
    pattern: list[bytes] = [start, b""]
    for column in range(width):
        pattern += [b"", texts[column] if column < len(texts) else b""]
    out = pattern * count
    out[1::step] = heads.tolist()
    for column in range(width):
        out[2 + 2 * column :: step] = numbers[column::width]
    if tails is not None:
        out[step - 1 :: step] = tails.tolist()
    out[0] = start[1:]  # no comma before the first row
    return b"".join(out)


def drawn_records(
    recording: CarlaRecording, numbers: list[int], topics: set[str]
) -> Iterator[tuple[int, list[McapRecord] | None]]:
    """(frame number, its records or None) for `numbers`, in order."""
    drawer = FrameDrawer(recording, topics)
    stamps = recording.reader.index.timestamp_us
    for number in numbers:
        yield number, drawer.records(number, int(stamps[number]) * 1000)


__all__ = ["FrameDrawer", "drawn_records"]
