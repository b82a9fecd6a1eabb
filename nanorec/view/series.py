"""A numeric field of one kind over time, min/max decimated to the plot's pixel width.

Why min/max: a plot W pixels wide shows at most W columns, and a column's min and max are
what the eye sees of it (a spike survives, unlike with averaging or striding). The rows are
streamed through fixed-size buffers into W time buckets, so the server holds O(W) whatever
the recording's length. The messages are read in W runs of consecutive numbers, each up to
`ROWS // W` rows (then to the end of the message being read): a kind with more rows than
that is sampled, the first rows of each run (`"sampled": true` says so), which bounds a
request's cost on a 1 GB archive.
"""

from __future__ import annotations

import itertools
import numbers
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np
from numpy.typing import NDArray

from nanorec.contract import Recording
from nanorec.errors import EmptySelectionError, UsageError
from nanorec.selection import Selection

#: Widest plot answered (pixels).
MAX_WIDTH = 8192
#: Rows a series reads at most (about: a message's rows are read whole, so at least one
#: message a bucket). On a 1 GB CARLA archive (~140 µs a frame) a plot 700 pixels wide of a
#: frame's field costs 0.7 s CPU, of every actor's position (one frame a bucket) 1.5 s.
ROWS = 5000
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


def _check_kind(recording: Recording, kind: str) -> None:
    kinds = recording.table_kinds()
    if kind not in kinds:
        raise UsageError(f"no kind {kind!r} (kinds: {', '.join(kinds) or 'none'})")


def numeric_fields(recording: Recording, kind: str) -> list[str]:
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


def series(recording: Recording, kind: str, field: str, width: int) -> dict[str, Any]:
    """`field` of `kind`'s rows over the whole recording in `width` time buckets: per bucket
    the min, max (None when empty) and count of its numbers; times in seconds from the start.
    `UsageError` for an unknown kind or one whose rows have no time."""
    _check_kind(recording, kind)
    first = next(iter(recording.rows(kind)), None)
    if first is not None and _number(first.get("time")) is None:
        raise UsageError(f"the rows of {kind!r} have no time: not a series")
    span = max(float(recording.duration), 1e-9)
    low = np.full(width, np.inf)
    high = np.full(width, -np.inf)
    count = np.zeros(width, np.int64)
    runs = _Runs(recording, kind, width)
    seen = 0
    for times, values in _chunks(runs.rows(), field):
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
        "sampled": runs.cut,
    }


class _Runs:
    """The rows of `kind` read in `width` runs of consecutive message numbers, each cut after
    `ROWS // width` rows at the end of a message (`cut` says whether one was)."""

    def __init__(self, recording: Recording, kind: str, width: int) -> None:
        self.recording, self.kind = recording, kind
        self.edges = np.unique(np.linspace(0, len(recording), width + 1).astype(np.int64))
        self.cap = max(1, ROWS // width)
        self.cut = False

    def rows(self) -> Iterator[dict[str, Any]]:
        for lo, hi in zip(self.edges[:-1].tolist(), self.edges[1:].tolist(), strict=True):
            taken, last = 0, None
            try:
                for row in self.recording.rows(self.kind, Selection(first=lo, stop=hi)):
                    when = row.get("time")
                    if taken >= self.cap and when != last:  # the next message: stop
                        self.cut = True
                        break
                    yield row
                    taken, last = taken + 1, when
            except EmptySelectionError:  # a format saying no row of the kind in this run
                continue


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
