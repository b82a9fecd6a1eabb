"""CARLA frames to MCAP records straight from the archive's arrays, a run of frames at once.

`mcap.frame_records` draws a frame from its `World` (an `Actor` per live actor). Here the
frames of a run that share their live actors and the order of their Position records
(CARLA writes every actor every frame, in the same order) are drawn together: the poses
of the whole run are one (frames, actors) array, matched to the spawn rows once, turned
into Foxglove's axes once, and every number of the run's `/tf` and `/carla/scene` is laid
into its protobuf bytes at once (`mcap_proto`). What does not change between frames (frame
ids, metadata, the cube's size and colour: an item's head) is kept per actor and state.
Then a frame is a `b"".join` of its items' pieces. The messages are the reference path's,
byte for byte (`tests/mcap/test_carla_fast.py`).

A frame with something this path does not draw (spawns, destructions, collisions, an
actor whose pose is in an earlier frame, repeated ids) goes through `mcap.frame_records`.
The runs and their poses (`FrameDrawer.runs`, `run_poses`) also feed the ROS bag export
(`standard_runs.py`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias, TypeVar

import numpy as np
import numpy.typing as npt

from nanorec.outputs import mcap_protobuf as pb
from nanorec.outputs.mcap import McapRecord, json_bytes
from nanorec.untyped import Payload

from . import mcap_lights
from . import mcap_proto as proto
from .ids import Kind
from .mcap_lights import match, same_rows
from .mcap_scene import DEFAULT_EXTENT, DEFAULT_OFFSET, KIND_CODES, TOPICS, type_name_of
from .message import kind_key, records

if TYPE_CHECKING:
    from .recording import CarlaRecording
    from .world_tables import Sparse

#: Frames drawn together at most (and between two progress reports).
RUN_FRAMES = 64
_TF, _SCENE = "foxglove.FrameTransforms", "foxglove.SceneUpdate"
_EVENTS = tuple(kind_key(kind) for kind in (Kind.EVENT_ADD, Kind.EVENT_DEL, Kind.COLLISION))
_START, _POSITION = kind_key(Kind.FRAME_START), kind_key(Kind.POSITION)
_CM_TO_M = np.array([0.01, -0.01, 0.01])

Drawn = list[McapRecord] | None
#: The spawn rows alive after a frame and their ids (None when an id is there twice).
_Alive: TypeAlias = tuple[npt.NDArray[np.intp], npt.NDArray[np.int64] | None]
T = TypeVar("T")
#: A frame's map as the archive decoded it (kind key -> records).
FrameMap: TypeAlias = dict[str, Payload]
#: The Position records of a run of frames: a structured array (frames, actors).
Poses: TypeAlias = npt.NDArray[np.void]
#: What a run of frames gives, per frame: (numbers, times, frame maps, Position records).
Run = Callable[[list[int], list[int], list[FrameMap], Poses], list[T | None]]


@dataclass(frozen=True)
class RunPoses:
    """The live actors of a run of frames and their poses, as the reference path sees them:
    `rows` (spawn rows) and `ids` (n), `pose` (frames, n, 6: location cm, pitch/yaw/roll
    degrees), `at_spawn` (frames, n: still at the spawn transform, unmoved since),
    `parent` (n: the parent's id, -1 for none) and `earlier` (frames: an actor's pose is
    in an earlier frame, which this path does not look for)."""

    rows: npt.NDArray[np.intp]
    ids: npt.NDArray[np.int64]
    pose: npt.NDArray[np.float64]
    at_spawn: npt.NDArray[np.bool_]
    parent: npt.NDArray[np.int64]
    earlier: npt.NDArray[np.bool_]

    def fields(self) -> tuple[Any, ...]:
        return self.rows, self.ids, self.pose, self.at_spawn, self.parent, self.earlier


class _Latest:
    """`Sparse.latest_rows(index, key)`, recomputed only when rows were added since."""

    def __init__(self, sparse: Sparse, key: str) -> None:
        self.sparse, self.key, self.count = sparse, key, -1
        self.rows: npt.NDArray[Any] = np.empty(0)  # set by the first `at`
        self.by_id: mcap_lights.Spans | None = None  # for the caller to fill, per `rows`
        self.ids: npt.NDArray[Any] = np.empty(0, np.int64)

    def counts(self, numbers: npt.NDArray[np.int64]) -> npt.NDArray[np.intp]:
        """How many rows are at or before each frame of `numbers`."""
        return np.searchsorted(self.sparse.frames, numbers, side="right")

    def at(self, index: int) -> npt.NDArray[Any]:
        count = int(self.counts(np.array([index]))[0])
        if count != self.count:
            self.count, self.by_id = count, None
            self.rows = self.sparse.latest_rows(index, self.key)
            self.ids = self.rows[self.key].astype(np.int64) if len(self.rows) else self.ids[:0]
        return self.rows


class FrameDrawer:
    """The `/tf`, `/carla/scene` and `/carla/traffic_lights` records of frames of one
    recording, from arrays (None for a frame this path leaves to `mcap.frame_records`)."""

    def __init__(self, recording: CarlaRecording, topics: set[str]) -> None:
        self.recording, self.topics = recording, topics
        tables = self.tables = recording.tables
        self.engine = tables.engine
        self.sizes = [
            (kind_key(kind), records({}, kind, self.engine).dtype.itemsize)
            for kind in (Kind.FRAME_START, Kind.POSITION, Kind.STATE)
        ]
        count = len(tables.spawn_ids)
        self.spawn_ids = tables.spawn_ids.astype(np.int64)
        self.known = np.zeros(count, np.bool_)
        self.kind = np.zeros(count, np.intp)
        self.spectator = np.zeros(count, np.bool_)
        self.spawn_pose = np.zeros((count, 6), np.float64)  # location, pitch/yaw/roll
        # (row, parent, in world, state) -> transform body, entity body, colour
        self.parts: dict[tuple[int, int, int, int], tuple[bytes, bytes, tuple[float, ...]]] = {}
        self.ends = np.sort(tables.spawn_end)
        self.ordered = bool((np.diff(tables.spawn_start) >= 0).all())
        self.alive_key: tuple[int, int] = (-1, -1)
        self.alive: _Alive = (np.empty(0, np.intp), None)  # set by the first `_alive`
        self.boxes = _Latest(tables.sparse[Kind.BOUNDING_BOX], "id")
        self.light_times = _Latest(tables.sparse[Kind.TRAFFIC_LIGHT_TIME], "id")
        self.parents = _Latest(tables.parents, "child")

    def records(self, number: int, time_ns: int) -> Drawn:
        """One frame's records (None: left to the reference path)."""
        return self.draw([number], [time_ns])[0]

    def draw(self, numbers: list[int], times: list[int]) -> list[Drawn]:
        """The records of frames `numbers` logged at `times` (ns), a run at a time."""
        return self.runs(numbers, times, self._run)

    def runs(self, numbers: list[int], times: list[int], run: Run[T]) -> list[T | None]:
        """`run` of each run of frames `numbers` (logged at `times`, ns) that share their
        live actors and the order of their Position records: its values, one per frame
        (None for a frame this path leaves to the reference path)."""
        frames = [self._frame(number) for number in numbers]
        index = np.asarray(numbers, np.int64)
        tables = self.tables
        simple = [
            frame is not None
            and len(frame.get(_START, b"")) > 0
            and not any(frame.get(key) for key in _EVENTS)
            for frame in frames
        ]
        keys = np.stack(
            [
                np.asarray(simple, np.int64),
                np.searchsorted(tables.spawn_start, index, side="right"),
                np.searchsorted(self.ends, index, side="right"),
                self.boxes.counts(index),
                self.parents.counts(index),
                self.light_times.counts(index),
                [len(frame.get(_POSITION, b"")) if frame else 0 for frame in frames],
            ],
            axis=1,
        )
        out: list[T | None] = [None] * len(numbers)
        lo = 0
        while lo < len(numbers):
            hi = lo + same_rows(keys[lo:])
            if simple[lo]:
                out[lo:hi] = self._group(numbers[lo:hi], times[lo:hi], frames[lo:hi], run)
            lo = hi
        return out

    def _frame(self, number: int) -> dict[str, Any] | None:
        """Archive frame `number`'s map, its values this path reads checked for their
        shape (`message.checked_frame` checks them all: the reference path's job); None
        when one is damaged (the reference path then says what is wrong)."""
        frame = self.recording.reader[number].get("frame")
        if not isinstance(frame, dict):
            return None
        for key, size in self.sizes:
            value = frame.get(key)
            if value is not None and (type(value) is not bytes or len(value) % size):
                return None
        start = frame.get(_START)
        return frame if start is None or len(start) == self.sizes[0][1] else None

    def _group(
        self, numbers: list[int], times: list[int], frames: list[Any], run: Run[T]
    ) -> list[T | None]:
        """Frames of one live set: split where the order of Position records changes."""
        contents = [frame.get(_POSITION, b"") for frame in frames]
        poses = np.frombuffer(b"".join(contents), records({}, Kind.POSITION, self.engine).dtype)
        poses = poses.reshape(len(frames), -1)
        out: list[T | None] = []
        lo = 0
        while lo < len(frames):
            hi = lo + (same_rows(poses["id"][lo:]) if poses.shape[1] else len(frames) - lo)
            out += run(numbers[lo:hi], times[lo:hi], frames[lo:hi], poses[lo:hi])
            lo = hi
        return out

    def run_poses(self, numbers: list[int], poses: Poses) -> RunPoses | None:
        """The poses of a run's frames (their live actors, in the reference path's order),
        None when this path cannot draw them (an id there twice)."""
        tables = self.tables
        count = len(numbers)
        index = np.asarray(numbers, np.int64)
        rows, ids = self._alive(numbers[0])
        if ids is None:
            return None
        pose_ids = poses["id"][0].astype(np.int64)
        order = np.argsort(pose_ids, kind="stable")
        sorted_ids = pose_ids[order]
        if len(sorted_ids) > 1 and not (sorted_ids[1:] != sorted_ids[:-1]).all():
            return None  # one actor twice: `World` keeps the last
        at, posed = match(sorted_ids, ids)
        first_pose = tables.spawn_first_pose[rows[~posed]]
        earlier = (first_pose[None, :] < index[:, None]).any(axis=1)  # posed before only
        spawn = self.spawn_pose[rows]
        pose = np.repeat(spawn[None], count, axis=0)
        if poses.shape[1]:
            found = order[at[posed]]
            pose[:, posed, :3] = poses["location"][:, found]
            pose[:, posed, 3:] = poses["rotation"][:, found][..., [1, 2, 0]]  # roll, pitch, yaw
        spawned_here = ~posed[None, :] | (tables.spawn_start[rows][None, :] == index[:, None])
        at_spawn = spawned_here & (pose == spawn[None]).all(axis=2)
        parent = self._parent(numbers[0], rows, ids)
        return RunPoses(rows, ids, pose, at_spawn, parent, earlier)

    def _run(
        self, numbers: list[int], times: list[int], frames: list[FrameMap], poses: Poses
    ) -> list[Drawn]:
        """Frames of one live set whose Position records name the same ids in order."""
        count = len(numbers)
        got = self.run_poses(numbers, poses)
        if got is None:
            return [None] * count
        rows, ids, pose, at_spawn, parent, earlier = got.fields()
        finite = np.isfinite(pose).all(axis=2)
        if not finite.all() and count > 1:  # frame by frame, each its own actors
            return [
                self._run(
                    numbers[f : f + 1], times[f : f + 1], frames[f : f + 1], poses[f : f + 1]
                )[0]
                for f in range(count)
            ]
        if not finite.all():
            keep = finite[0]
            rows, ids, pose, at_spawn, parent = (
                rows[keep],
                ids[keep],
                pose[:, keep],
                at_spawn[:, keep],
                parent[keep],
            )
        world = ~(at_spawn & (parent >= 0)[None, :])
        lights = mcap_lights.run_states(frames, self.engine)
        if lights is None:
            state = np.stack(
                [mcap_lights.actor_states(records(f, Kind.STATE, self.engine), ids) for f in frames]
            )
        else:
            state = mcap_lights.run_actor_states(lights, ids)
        # Each (frame, actor)'s parts, through the few distinct (actor, in world, state).
        code = (np.arange(len(rows))[None, :] * 2 + world) * 8 + (state + 1)
        present = np.zeros(len(rows) * 16, np.bool_)
        present[code] = True
        unique = np.flatnonzero(present)
        table = np.zeros(len(present), np.intp)
        table[unique] = np.arange(len(unique))
        inverse = table[code]
        parts = [
            self._parts(int(rows[c >> 4]), int(parent[c >> 4]), (c >> 3) & 1, (c & 7) - 1)
            for c in unique.tolist()
        ]
        position, quaternion = proto.pose_columns(
            pose[..., :3].reshape(-1, 3), pose[..., 3:].reshape(-1, 3)
        )
        on_grid = proto.on_grid(position, quaternion)
        messages: list[tuple[str, str, proto.RunMessages]] = []
        stamps = [proto.stamp(time_ns) for time_ns in times]
        if TOPICS["tf"] in self.topics and len(rows):
            bodies = [p[0] for p in parts]
            laid = proto.RunMessages(proto.TF_ITEM, on_grid, bodies, inverse, stamps)
            messages.append((TOPICS["tf"], _TF, laid))
        if TOPICS["scene"] in self.topics and len(rows):
            offset, extent = self._boxes(numbers[0], rows, ids)
            offset_m = [np.tile(offset[:, i] * _CM_TO_M[i], count) for i in range(3)]
            centre = proto.centre_columns(position, quaternion, offset_m)
            values = [*(proto.quantized(c) for c in centre), *on_grid[3:]]
            sizes = proto.quantized(np.abs(extent) * 0.02).tolist()  # half-size cm -> size m
            bodies = [
                p[1] + proto.cube_start(tuple(sizes[c >> 4]), p[2])
                for c, p in zip(unique.tolist(), parts, strict=True)
            ]
            keep = ~self.spectator[rows]
            laid = proto.RunMessages(proto.ENTITY_ITEM, values, bodies, inverse, stamps, keep)
            messages.append((TOPICS["scene"], _SCENE, laid))
        texts = self._lights(numbers, times, frames, lights)
        out: list[Drawn] = []
        for f, (number, time_ns, text) in enumerate(zip(numbers, times, texts, strict=True)):
            if earlier[f]:
                out.append(None)
                continue
            drawn = [
                pb.record(topic, type_name, time_ns, laid.data(f), sequence=number)
                for topic, type_name, laid in messages
            ]
            if text is not None:
                drawn.append(mcap_lights.record(time_ns, text, number))
            out.append(drawn)
        return out

    def _lights(
        self,
        numbers: list[int],
        times: list[int],
        frames: list[FrameMap],
        lights: mcap_lights.States | None,
    ) -> list[bytes | None]:
        """Each frame's `/carla/traffic_lights` message, encoded (None: no light)."""
        if TOPICS["traffic_lights"] not in self.topics:
            return [None] * len(numbers)
        spans = self.light_times
        spans.at(numbers[0])
        if spans.by_id is None:
            spans.by_id = mcap_lights.spans_of(spans.rows)
        frame_ids = [int(records(f, Kind.FRAME_START, self.engine)["id"][0]) for f in frames]
        if lights is not None:
            texts = mcap_lights.run_messages(lights, spans.by_id, times, frame_ids)
            if texts is not None:
                return texts
        out: list[bytes | None] = []
        for frame, time_ns, frame_id in zip(frames, times, frame_ids, strict=True):
            states = records(frame, Kind.STATE, self.engine)
            message = mcap_lights.frame_message(states, spans.by_id, time_ns, frame_id)
            out.append(None if message is None else json_bytes(message))
        return out

    def _alive(self, index: int) -> _Alive:
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
            self.kind[row] = KIND_CODES[type_name_of(desc.type_id, desc.type)]
            self.spectator[row] = desc.type_id == "spectator"
            self.spawn_pose[row] = (*desc.location, *desc.rotation)
            self.known[row] = True

    def _parent(self, index: int, rows: Any, ids: Any) -> npt.NDArray[np.int64]:
        """Each actor's parent id after frame `index` (-1 for none), as `parent_of`."""
        parent = np.full(len(ids), -1, np.int64)
        latest = self.parents.at(index)
        if len(latest):
            at, found = match(self.parents.ids, ids)
            found &= latest["frame"][at].astype(np.int64) >= self.tables.spawn_start[rows]
            parent[found] = latest["parent"][at[found]]
        return parent

    def _boxes(
        self, index: int, rows: npt.NDArray[np.intp], ids: npt.NDArray[np.int64]
    ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
        """Each actor's box offset and half extent (cm): its latest usable bounding box,
        else its type's default."""
        offset, extent = DEFAULT_OFFSET[self.kind[rows]], DEFAULT_EXTENT[self.kind[rows]]
        boxes = self.boxes.at(index)
        if len(boxes):
            at, boxed = match(self.boxes.ids, ids)
            values = np.concatenate(
                [boxes["origin"][at[boxed]], boxes["extent"][at[boxed]]], axis=1
            ).astype(np.float64)
            usable = np.isfinite(values).all(axis=1)
            where = np.flatnonzero(boxed)[usable]
            offset[where], extent[where] = values[usable, :3], values[usable, 3:]
        return offset, extent

    def _parts(
        self, row: int, parent_id: int, in_world: int, code: int
    ) -> tuple[bytes, bytes, tuple[float, ...]]:
        """A spawn row's transform body, entity body and colour for its parent, frame and
        traffic-light state."""
        key = (row, parent_id, in_world, code)
        found = self.parts.get(key)
        if found is None:
            desc = self.tables.description(row)
            actor_id = int(self.spawn_ids[row])
            frame_id = "world" if in_world else f"actor/{parent_id}"
            body, colour = proto.entity_parts(
                frame_id,
                actor_id,
                desc.type_id,
                type_name_of(desc.type_id, desc.type),
                desc.attributes.get("role_name"),
                None if parent_id < 0 else parent_id,
                mcap_lights.STATES.get(code),
            )
            found = self.parts[key] = (proto.transform_body(frame_id, actor_id), body, colour)
        return found


def drawn_records(
    recording: CarlaRecording, numbers: list[int], topics: set[str]
) -> Iterator[tuple[int, Drawn]]:
    """(frame number, its records or None) for `numbers`, in order."""
    drawer = FrameDrawer(recording, topics)
    stamps = recording.reader.index.timestamp_us
    for lo in range(0, len(numbers), RUN_FRAMES):
        run = numbers[lo : lo + RUN_FRAMES]
        drawn = drawer.draw(run, [int(stamps[number]) * 1000 for number in run])
        yield from zip(run, drawn, strict=True)


__all__ = ["RUN_FRAMES", "FrameDrawer", "RunPoses", "drawn_records"]
