"""What `nanorec cat x.pbstream` prints: TUM lines, tables, records as the generic message
lines; a selection that leaves nothing is `EmptySelectionError`, never an empty output."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TypeVar

from nanorec.errors import EmptySelectionError, UsageError
from nanorec.selection import Selection

from .convert import NONE_ID
from .tables import TABLES, in_range

if TYPE_CHECKING:
    from .recording import PbstreamRecording


def tum_lines(
    rec: PbstreamRecording, selection: Selection, only: list[int] | None
) -> Iterator[str]:
    """`t x y z qx qy qz qw` per node pose: exact seconds (100-ns digits), full precision."""
    inside = in_range(rec, selection)
    for tid, poses in rec.trajectories().items():
        if only and tid not in only:
            continue
        stamps = poses.timestamp.tolist()
        for row, (t, q) in enumerate(
            zip(poses.translation.tolist(), poses.rotation.tolist(), strict=True)
        ):
            if not inside(stamps[row]):
                continue
            seconds, rest = divmod(stamps[row] - 621_355_968_000_000_000, 10_000_000)
            values = " ".join(repr(float(v)) for v in (*t, *q))
            yield f"{seconds}.{rest:07d} {values}"


def record_lines(
    rec: PbstreamRecording, selection: Selection, only: list[int] | None, kind: str | None
) -> Iterator[dict[str, Any]]:
    """The records selected (of `kind`; of trajectories `only` or of none) as the generic
    message lines (`nanorec.cli.inputs.message_dict`)."""
    from nanorec.cli.inputs import message_dict

    wanted = replace(selection, kinds=None if kind is None else frozenset([kind]))
    numbers = wanted.numbers(rec.reader.index).tolist()
    if only:
        ids = rec.trajectory_ids
        numbers = [n for n in numbers if ids[n] == NONE_ID or int(ids[n]) in only]
    if not numbers and not (wanted.everything and not only):
        raise EmptySelectionError(f"{_narrowed(kind, selection, only)} selects no record")
    return (message_dict(rec.message(number)) for number in numbers)


def table_rows(
    rec: PbstreamRecording, kind: str, selection: Selection, only: list[int] | None, fmt: str
) -> Iterator[dict[str, Any]]:
    """Rows of table `kind` (a record kind without a table: its records as message lines);
    `EmptySelectionError` when the selection leaves none."""
    if kind not in TABLES:
        if kind not in rec.kinds():
            raise UsageError(
                f"no table or record kind {kind!r} (tables: {', '.join(TABLES)}; "
                f"record kinds: {', '.join(rec.kinds())})"
            )
        if fmt == "csv":
            raise UsageError(f"{kind} records have no table: use NDJSON")
        return record_lines(rec, selection, only, kind)
    rows = rec.rows(kind, selection)
    if only:
        rows = (r for r in rows if r.get("trajectory_id", r.get("node_trajectory_id")) in only)
    return not_empty(rows, kind, selection, only)


T = TypeVar("T")


def not_empty(
    items: Iterator[T],
    kind: str,
    selection: Selection | None = None,
    only: list[int] | None = None,
) -> Iterator[T]:
    """`items` (its first one already read), or `EmptySelectionError` when there is none."""
    first = next(items, None)
    if first is None:
        raise EmptySelectionError(f"{_narrowed(kind, selection, only)} selects no row")
    return itertools.chain([first], items)


def _narrowed(kind: str | None, selection: Selection | None, only: list[int] | None) -> str:
    """The options that narrowed a selection, as typed (for its error)."""
    parts = [] if kind is None else [f"--type {kind}"]
    if selection is not None and selection.range_options():
        parts.append(selection.range_options())
    parts += [f"--trajectory {tid}" for tid in only or ()]
    return " ".join(parts) or "the selection"


__all__ = ["not_empty", "record_lines", "table_rows", "tum_lines"]
