"""What the ROS 1 and ROS 2 columnar tables share: runs of messages, the per-message path
batched as `nanorec.outputs.arrow.iter_batches` batches it, and the time columns of a run."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from nanorec.outputs import arrow
from nanorec.outputs.arrow_columns import payload_size, transpose
from nanorec.recording import stamped_rows

Ints = NDArray[np.int64]
Columns = dict[str, Any]

#: The columns every row starts with (`stamped_rows`), and the one `nanorec.outputs.arrow` adds: a
#: message field of one of these names goes message by message, as it overrides them.
STAMPS: Final = frozenset({"number", "time", "time_ns", "time_s", "recording"})


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


def stamped(rec: Any, run: Ints, time_ns: Ints, fields: Columns) -> Columns:
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


def by_rows(rec: Any, run: Ints) -> Iterator[Columns]:
    """The rows of messages `run` decoded one by one (`stamped_rows`), cut into batches as
    `iter_batches` cuts them."""
    rows: list[dict[str, Any]] = []
    size = 0
    for row in stamped_rows(rec, run.tolist()):
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


__all__ = ["STAMPS", "by_rows", "runs", "stamped"]
