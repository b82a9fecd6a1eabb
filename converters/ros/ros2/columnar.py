"""`Ros2Recording.table_columns`: a bag's topics as columns for `nanorec.outputs.arrow`, in runs.

The archive is read once for all the topics asked for, in runs of at most `BATCH_ROWS`
messages and `BATCH_BYTES` stored bytes (`Datas`: one read a run, payloads located with
numpy): a topic read on its own would read the images between its poses again for each
topic, and inflate each compressed block as many times. In each run, a topic whose type is
a column per field (`run_columns.leaves`) is decoded at once; any other topic, or a run
the fast path declines, goes through `stamped_rows` as `rows` does, batched as
`nanorec.outputs.arrow.iter_batches` batches it. Both give the same values, so the table is the
same either way. A topic of tf messages is a row per transform (`run_items`), decoded at
once the same way.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Final

import numpy as np

from nanorec.errors import NanorecError, UsageError
from nanorec.outputs.arrow import Progress
from nanorec.selection import Selection

from ..common.run_columns import Leaf, Wire, decode_run, leaves
from ..common.run_items import array_field, decode_items, item_leaves
from ..common.table_runs import ITEM, STAMPS, Columns, Ints, by_rows, runs, stamped
from .cdr import DTYPES, PADDING
from .datas import Datas
from .msgdef import Field, MsgType, canonical

if TYPE_CHECKING:
    from .recording import Ros2Recording


#: ROS 2's CDR, little-endian (a big-endian run goes message by message).
CDR: Final = Wire(
    header=4,
    aligned=True,
    nul=True,
    padding=PADDING,
    scalars={name: np.dtype(code).newbyteorder("<").str for name, code in DTYPES.items()},
)


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
    fields = {kind: items_field(rec, kind) for kind in kinds}
    plans = {kind: _plan(rec, kind, fields[kind]) for kind in kinds}
    fast = np.zeros(len(index.types_table), np.bool_)
    for kind, plan in plans.items():
        if plan is not None:
            fast |= carries[kind]
    done = 0
    for run in runs(index.length[numbers].astype(np.int64), codes[numbers], numbers):
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
            field = fields[kind]
            if plan is not None:
                located = (buffer, starts[chosen], lengths[chosen])
                columns = _decoded(rec, plan, part, located, field)
            if columns is None:
                yield from ((kind, rows) for rows in by_rows(rec, part, field))
            elif len(columns["number"]):
                yield kind, columns
        done += len(run)
        if progress is not None:
            progress(done, len(numbers))


def _types(rec: Ros2Recording, topic: str) -> dict[str, MsgType] | None:
    """The definitions of `topic`'s type when it is decoded from CDR, else None."""
    type_name = rec.type_of(topic)
    if not type_name or type_name in rec.ros1_types or rec.undefined(type_name):
        return None
    try:
        return rec.decoder.types(type_name)
    except NanorecError:
        return None


def items_field(rec: Ros2Recording, topic: str) -> str | None:
    """The array whose elements are the rows of `topic` (`run_items.array_field`: tf),
    else None (a row a message)."""
    types = _types(rec, topic)
    if types is None:
        return None
    return array_field(lambda name: _fields(types, name), canonical(rec.type_of(topic) or ""))


def _plan(rec: Ros2Recording, topic: str, items: str | None = None) -> list[Leaf] | None:
    """The columns of `topic`'s type (of the elements of array `items`) when its runs can
    be decoded at once, else None."""
    types = _types(rec, topic)
    if types is None or rec.meta.compression[1].upper() == "MESSAGE":
        return None
    fields_of = lambda name: _fields(types, name)  # noqa: E731
    root = canonical(rec.type_of(topic) or "")
    if items is not None:
        return item_leaves(fields_of, root, CDR)
    found = leaves(fields_of, root, CDR)
    if found is None or any(leaf.name in STAMPS for leaf in found):
        return None
    return found


def _fields(types: dict[str, MsgType], name: str) -> tuple[Field, ...] | None:
    msg = types.get(name)
    return None if msg is None else msg.fields


def _decoded(
    rec: Ros2Recording,
    plan: list[Leaf],
    run: Ints,
    located: tuple[bytes, Ints, Ints],
    items: str | None,
) -> Columns | None:
    """The columns of messages `run`, whose data lie in `located` (buffer, starts,
    lengths), decoded at once (None: the run goes message by message); a row per element
    of array `items` when it is given."""
    if items is None:
        fields = decode_run(plan, CDR, *located)
        return None if fields is None else stamped(rec, run, rec.meta.time[run], fields)
    decoded = decode_items(plan, CDR, *located)
    if decoded is None:
        return None
    counts, fields = decoded
    rows = np.repeat(run, counts)
    place = np.arange(len(rows)) - np.repeat(np.cumsum(counts) - counts, counts)
    return stamped(rec, rows, rec.meta.time[rows], {ITEM: place, **fields})


__all__ = ["items_field", "table_columns"]
