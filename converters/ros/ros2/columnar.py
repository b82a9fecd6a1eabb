"""`Ros2Recording.table_columns`: a bag's topics as columns for `nanorec.arrow`, in runs.

The archive is read once for all the topics asked for, in runs of at most `BATCH_ROWS`
messages and `BATCH_BYTES` stored bytes (`Datas`: one read a run, payloads located with
numpy): a topic read on its own would read the images between its poses again for each
topic, and inflate each compressed block as many times. In each run, a topic whose type is
a column per field (`cdr_columns.leaves`) is decoded at once; any other topic, or a run
the fast path declines, goes through `stamped_rows` as `rows` does, batched as
`nanorec.arrow.iter_batches` batches it. Both give the same values, so the table is the
same either way.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Final

import numpy as np
from numpy.typing import NDArray

from nanorec import arrow
from nanorec.arrow import Progress
from nanorec.arrow_columns import payload_size, transpose
from nanorec.errors import NanorecError, UsageError
from nanorec.recording import stamped_rows
from nanorec.selection import Selection

from .cdr_columns import Leaf, decode_run, leaves
from .datas import Datas
from .msgdef import canonical

if TYPE_CHECKING:
    from .recording import Ros2Recording

Ints = NDArray[np.int64]
Columns = dict[str, Any]

#: The columns every row starts with (`stamped_rows`), and the one `nanorec.arrow` adds.
_STAMPS: Final = frozenset({"number", "time", "time_ns", "time_s", "recording"})


def table_columns(
    rec: Ros2Recording,
    kinds: list[str],
    selection: Selection | None = None,
    progress: Progress | None = None,
) -> Iterator[tuple[str, Columns]]:
    """`(topic, columns)` for each topic of `kinds` with messages in each run (see the
    module docstring); `progress(done, total)` in messages."""
    for kind in kinds:
        if kind not in rec.topics:
            raise UsageError(f"no topic {kind!r} (topics: {', '.join(rec.topics) or 'none'})")
    index = rec.reader.index
    codes = index.types_code
    # per topic, which of the index's type codes carry it (a message may carry several)
    carries = {
        kind: np.fromiter((kind in t for t in index.types_table), np.bool_, len(index.types_table))
        for kind in kinds
    }
    numbers = (selection or Selection()).numbers(index)
    if not len(numbers) or not kinds:
        return
    anything = np.logical_or.reduce(list(carries.values()))
    numbers = numbers[anything[codes[numbers]]]
    plans = {kind: _plan(rec, kind) for kind in kinds}
    fast = np.zeros(len(index.types_table), np.bool_)
    for kind, plan in plans.items():
        if plan is not None:
            fast |= carries[kind]
    done = 0
    for run in _runs(index.length[numbers].astype(np.int64), codes[numbers], numbers):
        quick = run[fast[codes[run]]]  # the messages of the topics decoded at once
        buffer, starts, lengths = Datas(rec.reader, quick).take(0, len(quick))
        for kind in kinds:
            plan = plans[kind]
            part = quick if plan is not None else run
            chosen = carries[kind][codes[part]]
            if not chosen.any():
                continue
            part = part[chosen]
            columns = None
            if plan is not None:
                columns = _decoded(rec, plan, part, buffer, starts[chosen], lengths[chosen])
            if columns is None:
                yield from ((kind, rows) for rows in _by_rows(rec, part))
            else:
                yield kind, columns
        done += len(run)
        if progress is not None:
            progress(done, len(numbers))


def _plan(rec: Ros2Recording, topic: str) -> list[Leaf] | None:
    """The columns of `topic`'s type when its runs can be decoded at once, else None."""
    type_name = rec.type_of(topic)
    if not type_name or type_name in rec.ros1_types or rec.undefined(type_name):
        return None
    if rec.meta.compression[1].upper() == "MESSAGE":
        return None
    try:
        found = leaves(rec.decoder.types(type_name), canonical(type_name))
    except NanorecError:
        return None
    if found is None or any(leaf.name in _STAMPS for leaf in found):
        return None
    return found


def _runs(lengths: Ints, topics: Ints, numbers: Ints) -> Iterator[Ints]:
    """`numbers` cut into runs of at most `BATCH_ROWS` messages, a run ending with the
    message that brings one topic (`topics`: a code a message) to `BATCH_BYTES` stored
    bytes, as `iter_batches` ends a batch: each topic's batches stay near the bound."""
    first = 0
    while first < len(numbers):
        stop = min(first + arrow.BATCH_ROWS, len(numbers))
        for topic in np.unique(topics[first:stop]).tolist():
            sizes = np.cumsum(np.where(topics[first:stop] == topic, lengths[first:stop], 0))
            full = int(np.searchsorted(sizes, arrow.BATCH_BYTES))  # first reaching it
            stop = min(stop, first + full + 1)
        yield numbers[first:stop]
        first = stop


def _decoded(
    rec: Ros2Recording, plan: list[Leaf], run: Ints, buffer: bytes, starts: Ints, lengths: Ints
) -> Columns | None:
    """The columns of messages `run`, whose data lie at `starts` in `buffer`, decoded at
    once (None: the run goes message by message)."""
    fields = decode_run(plan, buffer, starts, lengths)
    if fields is None:
        return None
    index = rec.reader.index
    stamps = rec.meta.time[run].astype(np.int64)
    micros = index.timestamp_us[run].astype(np.int64) - rec._origin_us
    columns: Columns = {
        "number": run,
        "time": micros.astype(np.float64) / 1e6,
        "time_ns": stamps,
        "time_s": stamps.astype(np.float64) / 1e9,
    }
    columns.update(fields)
    return columns


def _by_rows(rec: Ros2Recording, run: Ints) -> Iterator[Columns]:
    """The run's rows decoded one by one, as `iter_batches` cuts them into batches."""
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
    columns.pop("recording", None)  # `nanorec.arrow` puts the recording's own first
    return columns


__all__ = ["table_columns"]
