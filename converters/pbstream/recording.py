"""A converted `.pbstream` opened for random access: records decoded on demand, poses as
arrays, tables of constraints and sensor data, and the facts `nanorec info` prints.

Record N is one message of the archive holding the record's gzip member as read (older
archives: its payload); the payload is inflated, and its CRC checked, when a record is read
(`payload`, `body`, `decode`). The per-record trajectory ids, indexes and times live in the
side member, so summaries and selections read no message.
"""

from __future__ import annotations

import contextlib
import datetime as dt
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from nanorec.archive.reader import ArchiveReader
from nanorec.errors import EmptySelectionError, FormatError, UsageError
from nanorec.recording import ArchiveRecording
from nanorec.selection import Selection
from nanorec.standard import StandardMessage
from nanorec.untyped import Payload

from .convert import META_MEMBER, NONE_ID, read_meta, read_tail
from .decode import decode_record
from .export import record_entry
from .records import NODE, POSE_GRAPH, SENSOR_KINDS, SUBMAP, UNIX_EPOCH_TICKS, ticks_to_unix_ns
from .stream import entry_payload
from .trajectory import PoseGraph, Poses, local_poses, node_dims, node_local
from .wire import LEN, iter_fields

if TYPE_CHECKING:
    from nanorec.outputs.mcap import McapRecord

    from .view import PbstreamView


def iso(ticks: int) -> str:
    """Cartographer ticks as an ISO 8601 UTC time with 100-ns digits."""
    seconds, rest = divmod(ticks - UNIX_EPOCH_TICKS, 10_000_000)
    try:
        when = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(seconds=seconds)
    except OverflowError:  # a damaged time: beyond year 9999 (or before year 1)
        return f"{ticks} ticks (outside the calendar)"
    return when.strftime("%Y-%m-%dT%H:%M:%S") + f".{rest:07d}Z"


class PbstreamRecording(ArchiveRecording):
    """A Cartographer state opened for random access; use as a context manager."""

    format = "pbstream"

    def __init__(self, reader: ArchiveReader) -> None:
        super().__init__(reader)
        self.meta = read_meta(reader)
        columns = self.meta.get("columns") or {}
        try:
            self.trajectory_ids: NDArray[np.int32] = np.frombuffer(columns["trajectory"], "<i4")
            self.indexes: NDArray[np.int32] = np.frombuffer(columns["index"], "<i4")
            self.ticks: NDArray[np.int64] = np.frombuffer(columns["ticks"], "<i8")
            self.timed: NDArray[np.bool_] = np.frombuffer(columns["timed"], "i1").astype(bool)
        except KeyError as error:
            raise FormatError(f"damaged {META_MEMBER} member: no {error} column") from None
        except (TypeError, ValueError) as error:  # not bytes, or not whole rows
            raise FormatError(f"damaged {META_MEMBER} member: columns: {error}") from None
        columns_read = (self.trajectory_ids, self.indexes, self.ticks, self.timed)
        if not all(len(a) == len(reader) for a in columns_read):
            raise FormatError(
                f"damaged {META_MEMBER} member: its columns do not match the archive's messages"
            )
        self._graph: PoseGraph | None = None
        #: Records kept with a problem (a bad time), and records that could not be decoded
        #: where a summary or pose needed them.
        self.problems: list[str] = [str(w) for w in self.meta.get("warnings") or []]

    def check_members(self) -> None:
        """Read each side member once (`nanorec verify`): the description was read on
        opening; the tail of a cut stream must hold the bytes recorded (export needs them)."""
        read_tail(self.reader, self.meta)

    def summary_name(self) -> str:
        """The source file's name (the archive's name when none was recorded)."""
        source = (self.reader.description or {}).get("source") or {}
        name = source.get("name") if isinstance(source, dict) else None
        return str(name) if name else self.reader.path.name

    @property
    def format_version(self) -> str:
        """ "2", "1", "legacy" (no header), another version number, or "unknown"."""
        return str(self.meta["format"])

    # -- records ---------------------------------------------------------------------------

    def entry(self, number: int) -> tuple[str, dict[str, Any]]:
        """(kind, stored entry) of record `number`: payload, ids, timestamp..."""
        number = self.reader.index.normalize(number)
        return record_entry(self.reader[number], number)

    def payload(self, number: int) -> bytes:
        """The protobuf payload of record `number`, as read from the file (its gzip member
        inflated and CRC-checked: `FormatError` when it is damaged; b"" for a record
        found damaged at conversion)."""
        kind, entry = self.entry(number)
        return b"" if kind == "damaged" else entry_payload(entry) or b""

    def body(self, number: int) -> tuple[bytes, int, int]:
        """The payload of record `number` and the span of its inner message."""
        kind, entry = self.entry(number)
        payload = b"" if kind == "damaged" else entry_payload(entry) or b""
        if entry.get("bare") or kind == "header":
            return payload, 0, len(payload)
        fields = list(iter_fields(payload))
        if len(fields) != 1 or fields[0][1] != LEN:
            raise FormatError(f"record {number} ({kind}) is not one SerializedData field")
        return payload, fields[0][2], fields[0][3]

    def numbers_of(self, kind: str, selection: Selection | None = None) -> NDArray[np.int64]:
        index = self.reader.index
        numbers = (selection or Selection()).numbers(index)
        return numbers[index.has_type(kind)[numbers]] if kind in self.kinds() else numbers[:0]

    def kinds(self) -> list[str]:
        return sorted({name for types in self.reader.index.types_table for name in types})

    def decode(self, number: int) -> dict[str, Any]:
        """Record `number` as a dict: kind, ids, time, and its decoded message (`data`)."""
        kind, entry = self.entry(number)
        value: dict[str, Any] = {"kind": kind}
        for key in ("trajectory_id", "index", "format_version", "dims"):
            if key in entry:
                value[key] = entry[key]
        if "timestamp" in entry:
            value["timestamp"] = entry["timestamp"]
            value["unix_ns"] = ticks_to_unix_ns(entry["timestamp"])
        if "member" in entry and "payload" in entry:  # an archive holding payloads
            value["member_kept_raw"] = True
        if kind == "damaged":
            value["reason"] = entry.get("reason")
            value["member_size"] = len(entry.get("member") or b"")
        elif kind == "unknown":
            value["payload"] = entry_payload(entry)
        else:
            value["data"] = decode_record(kind, entry)
        return value

    # -- poses -----------------------------------------------------------------------------

    def pose_graph(self) -> PoseGraph:
        """The decoded pose graph (empty when the file has none), cached."""
        if self._graph is None:
            numbers = self.numbers_of(POSE_GRAPH)
            self._graph = PoseGraph.empty()
            if len(numbers):
                try:
                    self._graph = PoseGraph.parse(*self.body(int(numbers[0])))
                except FormatError as error:  # a damaged pose graph: read the rest anyway
                    self.problems.append(f"record {int(numbers[0])} (pose graph): {error}")
        return self._graph

    def local_poses(self) -> dict[int, Poses]:
        """Each trajectory's unoptimised node poses, from the node records."""
        rows: dict[int, list[tuple[Any, ...]]] = {}
        for number in self.numbers_of(NODE).tolist():
            try:
                tid, index, ticks, pose = node_local(*self.body(number))
            except FormatError as error:
                self.problems.append(f"record {number} (node): {error}")
                continue
            rows.setdefault(tid, []).append((index, ticks, *pose))
        return local_poses(rows)

    def trajectories(self) -> dict[int, Poses]:
        """Node poses per trajectory id: optimised (pose graph), or local where the pose graph
        holds no node of that trajectory."""
        found = {tid: poses for tid, poses in self.pose_graph().nodes.items() if len(poses)}
        missing = set(np.unique(self.trajectory_ids[self.numbers_of(NODE)]).tolist()) - set(found)
        if missing:
            local = self.local_poses()
            found.update({tid: local[tid] for tid in sorted(missing) if tid in local})
        return dict(sorted(found.items()))

    def trajectory(self, trajectory_id: int) -> Poses:
        trajectories = self.trajectories()
        if trajectory_id not in trajectories:
            raise UsageError(
                f"no trajectory {trajectory_id} (trajectories: "
                f"{', '.join(map(str, trajectories)) or 'none'})"
            )
        return trajectories[trajectory_id]

    def trajectory_ids_present(self) -> list[int]:
        """Every trajectory id the records or the pose graph name."""
        graph = self.pose_graph()
        found = set(self.trajectory_ids.tolist()) - {NONE_ID}
        return sorted(found | set(graph.nodes) | set(graph.submaps))

    def check_trajectories(self, ids: Iterable[int] | None) -> None:
        """`EmptySelectionError` naming the ids of `ids` no trajectory has (a `--trajectory`
        that would select nothing, silently)."""
        present = self.trajectory_ids_present()
        absent = sorted(set(ids or ()) - set(present))
        if absent:
            raise EmptySelectionError(
                f"--trajectory {' '.join(map(str, absent))} selects nothing: trajectories are "
                f"{', '.join(map(str, present)) or 'none'}"
            )

    # -- tables ----------------------------------------------------------------------------

    def table_kinds(self) -> list[str]:
        from .tables import TABLES

        return [kind for kind in TABLES if kind in self.kinds() or kind in TABLES_ALWAYS]

    def rows(self, kind: str, selection: Selection | None = None) -> Iterator[dict[str, Payload]]:
        from .tables import iter_rows

        return iter_rows(self, kind, selection)

    def table_columns(
        self,
        kinds: list[str],
        selection: Selection | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> Iterator[tuple[str, dict[str, Any]]]:
        """The tables of `kinds` as columns, sensor records a run at once (for
        `nanorec.outputs.arrow`'s Parquet export; see `columnar.py`): `rows`' values."""
        from .columnar import table_columns

        return table_columns(self, kinds, selection, progress)

    def mcap_messages(self, selection: Selection | None = None) -> Iterator[McapRecord]:
        """Foxglove messages for MCAP export (see `mcap.py`)."""
        from .mcap import mcap_messages

        return mcap_messages(self, selection)

    def standard_messages(self, selection: Selection | None = None) -> Iterator[StandardMessage]:
        """Node poses and the map as standard messages, for writers of other formats (a ROS 2
        bag; `nanorec.standard`, see `standard.py`)."""
        from .standard import standard_messages

        return standard_messages(self, selection)

    # -- summary ---------------------------------------------------------------------------

    def dimensions(self) -> str | None:
        """ "2D", "3D" (or "2D+3D") from the submaps, else from the first node (3D nodes carry
        high/low resolution clouds), else from the builder options when they name one."""
        found = {int(d) for d in self._submap_dims()}
        nodes = self.numbers_of(NODE)
        if not found and len(nodes):
            with contextlib.suppress(FormatError):
                dims = node_dims(*self.body(int(nodes[0])))
                found = set() if dims is None else {dims}
        if not found:
            from .tables import options_dims

            found = options_dims(self)
            found = found if len(found) == 1 else set()
        names = {2: "2D", 3: "3D"}
        return "+".join(names[d] for d in sorted(found)) or None

    def _submap_dims(self) -> set[int]:
        dims: set[int] = set()
        for number in self.numbers_of(SUBMAP).tolist():
            _, entry = self.entry(number)
            if "dims" in entry:
                dims.add(2 if entry["dims"] == 2 else 3)
            if len(dims) == 2:
                break
        return dims

    @cached_property
    def viewer(self) -> PbstreamView:
        """What `nanorec view` draws of the state (`view.py`), cached per recording."""
        from .view import PbstreamView

        return PbstreamView(self)

    def view_overview(self) -> dict[str, Any]:
        """The map, trajectories, submaps and constraints, and their bounds."""
        return self.viewer.overview

    def view_scene(self, number: int) -> dict[str, Any]:
        """The nodes reached at record `number`, the current one followed."""
        return self.viewer.scene(number)

    def summary(self) -> dict[str, Any]:
        summary = super().summary()
        index = self.reader.index
        kind_of = np.array([""] * len(self), dtype=object)
        for kind in self.kinds():
            kind_of[index.has_type(kind)] = kind
        per_trajectory: dict[int, dict[str, Any]] = {}
        for tid in sorted(set(self.trajectory_ids.tolist()) - {NONE_ID}):
            mine = self.trajectory_ids == tid
            nodes = mine & (kind_of == NODE)
            times = self.ticks[nodes & self.timed]
            row: dict[str, Any] = {
                "nodes": int(nodes.sum()),
                "submaps": int((mine & (kind_of == SUBMAP)).sum()),
            }
            if len(times):
                first, last = int(times.min()), int(times.max())
                row.update(start=iso(first), end=iso(last), duration=(last - first) / 1e7)
            per_trajectory[tid] = row
        graph = self.pose_graph()
        for tid, poses in graph.nodes.items():
            entry = per_trajectory.setdefault(tid, {"nodes": 0, "submaps": 0})
            entry["pose_graph_nodes"] = len(poses)
            entry["pose_graph_submaps"] = len(graph.submaps[tid])
        tags = Counter(graph.constraints["tag"].tolist())
        timed = self.ticks[self.timed]
        summary.update(
            source=self.summary_name(),
            format_version=self.format_version,
            dimensions=self.dimensions(),
            trajectories={str(k): v for k, v in per_trajectory.items()},
            time_span=None
            if not len(timed)
            else {"start": iso(int(timed.min())), "end": iso(int(timed.max()))},
            constraints={
                "intra": tags.get(0, 0),
                "inter": tags.get(1, 0),
                "total": len(graph.constraints),
            },
            sensor_data={kind: int(index.has_type(kind).sum()) for kind in SENSOR_KINDS},
            landmarks=len(graph.landmarks),
            raw_members=int(self.meta.get("raw_members", 0)),
            tail_bytes=int(self.meta.get("tail_size", 0)),
            cut=self.meta.get("cut"),
            damaged=len(self.meta.get("damaged") or []),
            missing=self.missing(per_trajectory),
            problems=list(self.problems),
        )
        return summary

    def missing(self, per_trajectory: dict[int, dict[str, Any]]) -> list[str]:
        """What the fixed record order (spec §4) says is absent: a file cut exactly at a
        record boundary loses records without any framing error."""
        found = set(self.kinds())
        notes = [
            f"no {kind} record"
            for kind in (POSE_GRAPH, "all_trajectory_builder_options")
            if kind not in found and self.format_version != "legacy"
        ]
        for tid, row in per_trajectory.items():
            for what in ("nodes", "submaps"):
                listed = row.get(f"pose_graph_{what}")
                if listed is not None and row[what] < listed:
                    notes.append(
                        f"trajectory {tid}: {row[what]} {what} records for {listed} in the "
                        "pose graph"
                    )
        return notes


#: Tables offered whatever record kinds the file has (they come from the pose graph).
TABLES_ALWAYS = ("trajectory", "submap_poses", "constraint", "landmark_poses")

__all__ = ["PbstreamRecording", "iso"]
