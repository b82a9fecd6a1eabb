"""A valid `.pbstream` holding part of a state: some trajectories, a node index range, a time
range (spec §7).

The pose graph and builder options are rebuilt by copying the raw bytes of the fields that
stay (trajectories, their nodes and submaps, constraints between kept nodes and submaps;
the options entry paired by position with each kept trajectory), so nothing is re-encoded
beyond the wrappers. Other records are copied as they are (their members reused), in the
order of §4; unknown and damaged records are left out. A stream needs its header, pose
graph and options records: they are written whatever the selection (a message range
`0:5` gives them and records 3 and 4).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from nanorec.archive.atomic import write_hashed
from nanorec.contract import ExportReport
from nanorec.errors import EmptySelectionError, UsageError
from nanorec.selection import Selection

from .convert import NONE_ID
from .export import member_of
from .records import (
    HEADER,
    NODE,
    OPTIONS,
    POSE_GRAPH,
    SENSOR_KINDS,
    SUBMAP,
    TRAJECTORY_DATA,
    V2_FIELDS,
    id_pair,
    ticks_to_unix_ns,
)
from .stream import MAGIC, SIZE, build_member
from .wire import LEN, VARINT, field_bytes, field_varint, iter_fields, key, signed32, varint

if TYPE_CHECKING:
    from .recording import PbstreamRecording


def _trajectory_id(payload: bytes, a: int, b: int) -> int:
    tid = 0
    for number, wire, value, _ in iter_fields(payload, a, b):
        if number == 3 and wire == VARINT:
            tid = signed32(value)
    return tid


def _index_of(payload: bytes, a: int, b: int, number_wanted: int) -> int:
    found = 0
    for number, wire, value, _ in iter_fields(payload, a, b):
        if number == number_wanted and wire == VARINT:
            found = signed32(value)
    return found


def filter_pose_graph(
    payload: bytes,
    start: int,
    end: int,
    keep_node: Callable[[int, int], bool],
    keep_submap: Callable[[int, int], bool],
    keep_trajectory: Callable[[int], bool],
) -> tuple[bytes, list[int]]:
    """The PoseGraph body keeping only what the predicates accept, and the positions (in the
    original) of the trajectories kept."""
    parts: list[bytes] = []
    positions: list[int] = []
    position = 0
    for number, wire, a, b in iter_fields(payload, start, end):
        raw = payload[a:b]
        if number == 2 and wire == LEN:  # constraint
            submap = node = (0, 0)
            for n, w, c, d in iter_fields(payload, a, b):
                if n == 1 and w == LEN:
                    submap = id_pair(payload, c, d)
                elif n == 2 and w == LEN:
                    node = id_pair(payload, c, d)
            if keep_submap(*submap) and keep_node(*node):
                parts.append(field_bytes(2, raw, keep_empty=True))
        elif number == 4 and wire == LEN:  # trajectory
            tid = _trajectory_id(payload, a, b)
            if keep_trajectory(tid):
                positions.append(position)
                inner: list[bytes] = []
                for n, w, c, d in iter_fields(payload, a, b):
                    piece = payload[c:d]
                    if n == 1 and w == LEN and not keep_node(tid, _index_of(payload, c, d, 7)):
                        continue
                    if n == 2 and w == LEN and not keep_submap(tid, _index_of(payload, c, d, 2)):
                        continue
                    inner.append(_field(n, w, c, d, piece))
                parts.append(field_bytes(4, b"".join(inner), keep_empty=True))
            position += 1
        else:
            parts.append(_field(number, wire, a, b, raw))
    return b"".join(parts), positions


def _field(number: int, wire: int, a: int, b: int, raw: bytes) -> bytes:
    """A field copied as it was (varints re-encoded from their value)."""
    if wire == VARINT:
        return key(number, VARINT) + varint(a)
    if wire == LEN:
        return field_bytes(number, raw, keep_empty=True)
    return key(number, wire) + raw


def filter_options(payload: bytes, start: int, end: int, positions: Sequence[int]) -> bytes:
    """The AllTrajectoryBuilderOptions body keeping the entries at `positions`."""
    wanted = set(positions)
    parts = []
    entry = 0
    for number, wire, a, b in iter_fields(payload, start, end):
        if number == 1 and wire == LEN:
            if entry in wanted:
                parts.append(field_bytes(1, payload[a:b], keep_empty=True))
            entry += 1
        else:
            parts.append(_field(number, wire, a, b, payload[a:b]))
    return b"".join(parts)


def export_subset(
    rec: PbstreamRecording,
    output: str | Path,
    *,
    selection: Selection | None = None,
    trajectories: Sequence[int] | None = None,
    nodes: tuple[int | None, int | None] | None = None,
    overwrite: bool = False,
) -> ExportReport:
    """Write a valid stream of the selected part of `rec` (see the module docstring)."""
    selection = selection or Selection()
    chosen = None if trajectories is None else {int(t) for t in trajectories}
    rec.check_trajectories(chosen)
    first, stop = nodes if nodes is not None else (None, None)
    index = rec.reader.index
    in_span = np.zeros(len(rec), bool)
    lo, hi = (
        selection.span(index)
        if selection.first is not None or selection.stop is not None
        else (0, len(rec))
    )
    in_span[lo:hi] = True
    origin_ns = round(rec.start_time * 1e6) * 1000
    start_ns = None if selection.start is None else origin_ns + round(selection.start * 1e9)
    end_ns = None if selection.end is None else origin_ns + round(selection.end * 1e9)

    def in_time(ticks: int) -> bool:
        ns = ticks_to_unix_ns(ticks)
        return (start_ns is None or ns >= start_ns) and (end_ns is None or ns <= end_ns)

    def keep_trajectory(tid: int) -> bool:
        return chosen is None or tid in chosen

    kept_nodes: set[tuple[int, int]] = set()
    kept_submaps: set[tuple[int, int]] = set()
    numbers: list[int] = []
    kinds = selection.kinds
    for kind in rec.kinds():
        mask = index.has_type(kind)
        for number in np.flatnonzero(mask & in_span).tolist():
            tid = int(rec.trajectory_ids[number])
            own = int(rec.ticks[number]) if rec.timed[number] else None
            if kind in (HEADER, POSE_GRAPH, OPTIONS):
                continue
            if kind not in V2_FIELDS or (kinds is not None and kind not in kinds):
                continue
            if tid != NONE_ID and not keep_trajectory(tid):
                continue
            if own is not None and not in_time(own):
                continue
            item = int(rec.indexes[number])
            if kind == NODE:
                if (first is not None and item < first) or (stop is not None and item >= stop):
                    continue
                kept_nodes.add((tid, item))
            elif kind == SUBMAP:
                kept_submaps.add((tid, item))
            elif kind not in (TRAJECTORY_DATA, *SENSOR_KINDS):
                continue
            numbers.append(number)
    if nodes is not None and not kept_nodes:
        spec = f"{'' if first is None else first}:{'' if stop is None else stop}"
        raise EmptySelectionError(f"--nodes {spec} selects no node record of the selection")
    numbers.sort()
    graph_numbers = rec.numbers_of(POSE_GRAPH)
    if not len(graph_numbers):
        raise UsageError("the pbstream has no pose graph: no valid subset can be written")
    graph_body, positions = filter_pose_graph(
        *rec.body(int(graph_numbers[0])),
        keep_node=lambda t, i: (t, i) in kept_nodes,
        keep_submap=lambda t, i: (t, i) in kept_submaps,
        keep_trajectory=keep_trajectory,
    )
    options_numbers = rec.numbers_of(OPTIONS)
    options_body = b""
    if len(options_numbers):
        options_body = filter_options(*rec.body(int(options_numbers[0])), positions)
    version = rec.meta.get("format_version")
    version = version if version in (1, 2) else 2
    members = [
        build_member(field_varint(1, version)),
        build_member(field_bytes(V2_FIELDS[POSE_GRAPH], graph_body, keep_empty=True)),
        build_member(field_bytes(V2_FIELDS[OPTIONS], options_body, keep_empty=True)),
    ]
    out = Path(output)

    def pieces() -> Iterator[bytes]:
        yield MAGIC
        for member in members:
            yield SIZE.pack(len(member)) + member
        for number in numbers:
            kind, entry = rec.entry(number)
            if entry.get("bare") or rec.format_version == "legacy":
                payload, a, b = rec.body(number)
                member = build_member(field_bytes(V2_FIELDS[kind], payload[a:b], keep_empty=True))
            else:
                member = member_of(entry)
            yield SIZE.pack(len(member)) + member

    size, sha = write_hashed(out, pieces(), overwrite=overwrite)
    return ExportReport(
        out,
        size,
        sha,
        3 + len(numbers),
        None,
        {
            "trajectories": sorted({t for t, _ in kept_nodes | kept_submaps}),
            "nodes": len(kept_nodes),
            "submaps": len(kept_submaps),
        },
    )


__all__ = ["export_subset", "filter_options", "filter_pose_graph"]
