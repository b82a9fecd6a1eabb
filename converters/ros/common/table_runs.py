"""What the ROS 1 and ROS 2 columnar tables share: runs of messages, the per-message path
batched as `nanorec.outputs.arrow.iter_batches` batches it, the time columns of a run, and
the rows of a type that is one array of messages (`items`: a row per element, see
`run_items`)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Final

import numpy as np
from numpy.typing import NDArray

from nanorec.outputs import arrow
from nanorec.outputs.arrow_columns import payload_size, transpose
from nanorec.outputs.tables import flatten
from nanorec.recording import stamped_rows

if TYPE_CHECKING:  # (both use these helpers)
    from ..ros1.recording import BagRecording
    from ..ros2.recording import Ros2Recording

Ints = NDArray[np.int64]
Columns = dict[str, Any]

#: The columns every row starts with (`stamped_rows`), and the one `nanorec.outputs.arrow` adds: a
#: message field of one of these names goes message by message, as it overrides them.
STAMPS: Final = frozenset({"number", "time", "time_ns", "time_s", "recording"})
#: The column of an element's place in its message's array (`items`).
ITEM: Final = "item"


def runs(lengths: Ints, topics: Ints, numbers: Ints) -> Iterator[Ints]:
    """`numbers` cut into runs of at most `BATCH_ROWS` messages, a run ending with the
    message that brings one topic (`topics`: a code a message) to `BATCH_BYTES` stored
    bytes (`lengths`), as `iter_batches` ends a batch: each topic's batches stay near the
    bound."""
    first = 0
    while first < len(numbers):
        stop = min(first + arrow.BATCH_ROWS, len(numbers))
        for topic in np.unique(topics[first:stop]).tolist():
            sizes = np.cumsum(np.where(topics[first:stop] == topic, lengths[first:stop], 0))
            full = int(np.searchsorted(sizes, arrow.BATCH_BYTES))  # first reaching it
            stop = min(stop, first + full + 1)
        yield numbers[first:stop]
        first = stop


def stamped(
    rec: BagRecording | Ros2Recording, run: Ints, time_ns: Ints, fields: Columns
) -> Columns:
    """`stamped_rows`' first columns of messages `run` (receive times `time_ns`), then
    `fields`: the same values, computed at once."""
    micros = rec.reader.index.timestamp_us[run].astype(np.int64) - rec._origin_us
    ns = time_ns.astype(np.int64)
    columns: Columns = {
        "number": run,
        "time": micros.astype(np.float64) / 1e6,
        "time_ns": ns,
        "time_s": ns.astype(np.float64) / 1e9,
    }
    columns.update(fields)
    return columns


def items(rows: Iterator[dict[str, Any]], field: str) -> Iterator[dict[str, Any]]:
    """The per-message rows of an array type taken apart: a row per element of `field`
    (the stamps, `item`, the element flattened); a message with none gives no row, a row
    without the array (not decoded as its type) stays as it is."""
    for row in rows:
        elements = row.get(field)
        if not isinstance(elements, list) or not all(type(e) is dict for e in elements):
            yield row
            continue
        base = {key: value for key, value in row.items() if key != field}
        for place, element in enumerate(elements):
            yield {**base, ITEM: place, **flatten(element)}


def by_rows(
    rec: BagRecording | Ros2Recording, run: Ints, field: str | None = None
) -> Iterator[Columns]:
    """The rows of messages `run` decoded one by one (`stamped_rows`; a row per element of
    array `field`, `items`), cut into batches as `iter_batches` cuts them."""
    rows: list[dict[str, Any]] = []
    size = 0
    found = stamped_rows(rec, run.tolist())
    for row in found if field is None else items(found, field):
        rows.append(row)
        size += payload_size(row)
        if len(rows) >= arrow.BATCH_ROWS or size >= arrow.BATCH_BYTES:
            yield _columns(rows)
            rows, size = [], 0
    if rows:
        yield _columns(rows)


def _columns(rows: list[dict[str, Any]]) -> Columns:
    columns: Columns = transpose(rows)
    columns.pop("recording", None)  # `nanorec.outputs.arrow` puts the recording's own first
    return columns


__all__ = ["ITEM", "STAMPS", "by_rows", "items", "runs", "stamped"]
