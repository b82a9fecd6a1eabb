"""A numeric field of one kind over time, min/max decimated to the plot's pixel width.

Why min/max: a plot W pixels wide shows at most W columns, and a column's min and max are
what the eye sees of it (a spike survives, unlike with averaging or striding). The rows are
streamed through fixed-size buffers into W buckets, so the server holds O(W) whatever the
recording's length. A kind with more than `FULL_ROWS` messages is sampled instead: each
bucket reads its first `FULL_ROWS // W` messages of the kind (`"sampled": true` says so),
which keeps a request's cost bounded on a 1 GB archive.
"""

from __future__ import annotations

import itertools
import numbers
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np
from numpy.typing import NDArray

from nanorec.errors import UsageError
from nanorec.selection import Selection

#: Widest plot answered (pixels).
MAX_WIDTH = 8192
#: Messages of a kind read whole; past this, sampled per bucket.
FULL_ROWS = 20_000
#: Rows buffered before they are folded into the buckets.
_CHUNK = 4096
#: Rows looked at to list a kind's numeric fields.
_FIELD_ROWS = 16


def check_width(text: str | None) -> int:
    """The `width` query parameter: 1 to `MAX_WIDTH` pixels."""
    try:
        width = int(text or "")
    except ValueError:
        raise UsageError(f"width must be a whole number of pixels, not {text!r}") from None
    if not 1 <= width <= MAX_WIDTH:
        raise UsageError(f"width must be 1 to {MAX_WIDTH} pixels, not {width}")
    return width


def _number(value: Any) -> float | None:
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, np.generic) and value.dtype.kind in "iuf":
        return float(value)
    return None


def _check_kind(recording: Any, kind: str) -> None:
    kinds = recording.table_kinds()
    if kind not in kinds:
        raise UsageError(f"no kind {kind!r} (kinds: {', '.join(kinds) or 'none'})")


def numeric_fields(recording: Any, kind: str) -> list[str]:
    """The columns of `kind`'s rows holding numbers (from its first rows), in row order;
    none for a kind whose rows have no time (a pbstream's trajectory table: not a series)."""
    _check_kind(recording, kind)
    found: dict[str, None] = {}
    for row in itertools.islice(recording.rows(kind), _FIELD_ROWS):
        if _number(row.get("time")) is None:
            continue
        for name, value in row.items():
            if name not in ("number", "time") and _number(value) is not None:
                found.setdefault(name)
    return list(found)


def series(recording: Any, kind: str, field: str, width: int) -> dict[str, Any]:
    """`field` of `kind`'s rows over the whole recording in `width` time buckets: per bucket
    the min, max (None when empty) and count of its numbers; times in seconds from the start.
    `UsageError` for an unknown kind."""
    _check_kind(recording, kind)
    span = max(float(recording.duration), 1e-9)
    low = np.full(width, np.inf)
    high = np.full(width, -np.inf)
    count = np.zeros(width, np.int64)
    sampled = _kind_messages(recording, kind) > FULL_ROWS
    rows = _sampled_rows(recording, kind, width) if sampled else recording.rows(kind)
    seen = 0
    for times, values in _chunks(rows, field):
        seen += len(values)
        buckets = np.clip((times / span * width).astype(np.int64), 0, width - 1)
        np.minimum.at(low, buckets, values)
        np.maximum.at(high, buckets, values)
        np.add.at(count, buckets, 1)
    empty = count == 0
    return {
        "kind": kind,
        "field": field,
        "width": width,
        "t0": 0.0,
        "t1": span,
        "min": [None if e else float(v) for e, v in zip(empty, low, strict=True)],
        "max": [None if e else float(v) for e, v in zip(empty, high, strict=True)],
        "count": count.tolist(),
        "rows": seen,
        "sampled": bool(sampled),
    }


def _kind_messages(recording: Any, kind: str) -> int:
    """Messages of `kind` by the index (every message when the kind is a format's own table,
    not an index type)."""
    index = recording.reader.index
    known = {name for types in index.types_table for name in types}
    return int(index.has_type(kind).sum()) if kind in known else len(index)


def _sampled_rows(recording: Any, kind: str, width: int) -> Iterator[dict[str, Any]]:
    """The rows of the first `FULL_ROWS // width` messages of each time bucket."""
    index = recording.reader.index
    per_bucket = max(1, FULL_ROWS // width)
    span = max(float(recording.duration), 1e-9)
    for bucket in range(width):
        start, end = span * bucket / width, span * (bucket + 1) / width
        lo, hi = Selection(start=start, end=end).span(index)
        if hi > lo:
            yield from recording.rows(kind, Selection(first=lo, stop=min(hi, lo + per_bucket)))


def _chunks(
    rows: Iterable[dict[str, Any]], field: str
) -> Iterator[tuple[NDArray[np.float64], NDArray[np.float64]]]:
    """(times, values) of the rows whose `field` is a finite number, `_CHUNK` at a time."""
    times: list[float] = []
    values: list[float] = []
    for row in rows:
        value = _number(row.get(field))
        when = _number(row.get("time"))
        if value is None or when is None or not np.isfinite(value):
            continue
        times.append(when)
        values.append(value)
        if len(values) == _CHUNK:
            yield np.array(times), np.array(values)
            times, values = [], []
    if values:
        yield np.array(times), np.array(values)
