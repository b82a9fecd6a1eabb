"""`BagRecording.table_columns`: a bag's topics as columns for `nanorec.outputs.arrow`, in runs.

As for ROS 2 (`ros2/columnar.py`): the archive is read once for all the topics asked for,
in runs (`table_runs.runs`); the messages of a connection whose type is a column per field
(`run_columns.leaves`, ROS1's packed layout: `ROS1`) are decoded a run at once, any other
connection, or a run the fast path declines, message by message as `rows` does. A topic's
connections may differ in type: each run of a topic is decoded at once only when all its
messages share a connection that can be. A topic of tf messages is a row per transform
(`run_items`), decoded at once the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Final

import numpy as np

from nanorec.errors import UsageError
from nanorec.outputs.arrow import Progress
from nanorec.selection import Selection

from ..common.run_columns import Leaf, Wire, decode_run, leaves
from ..common.run_items import array_field, decode_items, item_leaves
from ..common.table_runs import ITEM, STAMPS, Columns, Ints, by_rows, runs, stamped
from .datas import datas
from .msgdef import SCALARS, Field

if TYPE_CHECKING:
    from .recording import BagRecording

#: ROS1's serialization: packed, strings without NUL, nothing after the message.
ROS1: Final = Wire(
    header=0,
    aligned=False,
    nul=False,
    padding=0,
    scalars={name: np.dtype(code).str for name, (_, code) in SCALARS.items()},
)
#: Bytes of other topics' messages between two of a run above which they are read apart.
_SKIP: Final = 1 << 16
#: time and duration as the decoder gives them: {"secs", "nsecs"}.
_TIMES: Final = {
    "time": (Field("uint32", "secs", None), Field("uint32", "nsecs", None)),
    "duration": (Field("int32", "secs", None), Field("int32", "nsecs", None)),
}


def table_columns(
    rec: BagRecording,
    kinds: list[str],
    selection: Selection | None = None,
    progress: Progress | None = None,
) -> Iterator[tuple[str, Columns]]:
    """`(topic, columns)` for each topic of `kinds` with messages in each run;
    `progress(done, total)` in messages."""
    for kind in kinds:
        if kind not in rec.topics:
            raise UsageError(f"no topic {kind!r} (topics: {', '.join(rec.topics) or 'none'})")
    numbers = (selection or Selection()).numbers(rec.reader.index)
    if not len(numbers) or not kinds:
        return
    conn = rec.meta.conn
    numbers = numbers[rec.meta.conns_of(set(kinds))[numbers]]
    ids = {kind: _ids(rec, kind) for kind in kinds}
    fields = {kind: items_field(rec, kind) for kind in kinds}
    plans = {c: _plan(rec, c, fields[kind]) for kind in kinds for c in ids[kind].tolist()}
    fast = np.array([c for c, plan in plans.items() if plan is not None], np.int64)
    done = 0
    lengths = rec.reader.index.length[numbers].astype(np.int64)
    for run in runs(lengths, conn[numbers].astype(np.int64), numbers):
        conns = conn[run]
        quick = run[np.isin(conns, fast)]  # the messages of connections decoded at once
        found = _datas(rec, quick) if len(quick) else None
        for kind in kinds:
            part = run[np.isin(conns, ids[kind])]
            if not len(part):
                continue
            field = fields[kind]
            columns = None if found is None else _decoded(rec, plans, part, quick, found, field)
            if columns is None:
                yield from ((kind, rows) for rows in by_rows(rec, part, field))
            elif len(columns["number"]):
                yield kind, columns
        done += len(run)
        if progress is not None:
            progress(done, len(numbers))


def _ids(rec: BagRecording, topic: str) -> Ints:
    return np.array([c.id for c in rec.meta.connections.values() if c.topic == topic], np.int64)


def items_field(rec: BagRecording, topic: str) -> str | None:
    """The array whose elements are the rows of `topic` (`run_items.array_field`: tf), the
    same field of every connection of the topic; else None (a row a message)."""
    found = set()
    for conn in _ids(rec, topic).tolist():
        decoder = rec.decoder(conn)
        if decoder is None:
            return None
        found.add(array_field(_fields_of(decoder.types), decoder.type_name))
    return found.pop() if len(found) == 1 else None


def _fields_of(
    types: dict[str, list[Field]],
) -> Callable[[str], tuple[Field, ...] | list[Field] | None]:
    """A type's fields, time and duration as the decoder gives them."""
    return lambda name: _TIMES.get(name) or types.get(name)


def _plan(rec: BagRecording, conn: int, items: str | None = None) -> list[Leaf] | None:
    """The columns of connection `conn`'s messages (of the elements of array `items`) when
    its runs can be decoded at once."""
    decoder = rec.decoder(conn)
    if decoder is None:
        return None
    fields_of = _fields_of(decoder.types)
    if items is not None:
        return item_leaves(fields_of, decoder.type_name, ROS1)
    found = leaves(fields_of, decoder.type_name, ROS1)
    if found is None or any(leaf.name in STAMPS for leaf in found):
        return None
    return found


def _decoded(
    rec: BagRecording,
    plans: dict[int, list[Leaf] | None],
    part: Ints,
    quick: Ints,
    found: tuple[bytes, Ints, Ints],
    items: str | None,
) -> Columns | None:
    """The columns of messages `part`, all of one connection with a plan, decoded at once
    from the payloads `found` of messages `quick` (None: they go message by message); a
    row per element of array `items` when it is given."""
    conns = np.unique(rec.meta.conn[part])
    plan = plans.get(int(conns[0])) if len(conns) == 1 else None
    if plan is None:
        return None
    buffer, starts, lengths = found
    at = np.searchsorted(quick, part)  # `part` is within `quick`: its connection has a plan
    if items is None:
        fields = decode_run(plan, ROS1, buffer, starts[at], lengths[at])
        return None if fields is None else stamped(rec, part, rec.meta.time[part], fields)
    decoded = decode_items(plan, ROS1, buffer, starts[at], lengths[at])
    if decoded is None:
        return None
    counts, fields = decoded
    rows = np.repeat(part, counts)
    place = np.arange(len(rows)) - np.repeat(np.cumsum(counts) - counts, counts)
    return stamped(rec, rows, rec.meta.time[rows], {ITEM: place, **fields})


def _datas(rec: BagRecording, run: Ints) -> tuple[bytes, Ints, Ints] | None:
    """The payloads of messages `run`: one buffer, each one's start and length in it. A
    stretch is read at once (one read and CRC pass), the messages of other topics in it
    included unless they hold more than `_SKIP` bytes; None when one is not laid out as a
    bag message (the per-message path says what it is)."""
    lengths = rec.reader.index.length
    stored = lengths[int(run[0]) : int(run[-1]) + 1].astype(np.int64)
    before = np.cumsum(stored) - stored  # bytes of the span before each message
    at = run - run[0]
    between = before[at[1:]] - before[at[:-1]] - stored[at[:-1]]
    buffers: list[bytes] = []
    starts: list[Ints] = []
    ends: list[Ints] = []
    base = 0
    for stretch in np.split(run, np.flatnonzero(between > _SKIP) + 1):
        first, stop = int(stretch[0]), int(stretch[-1]) + 1
        if stop - first == 1:  # one message: its block as a message read keeps it
            buffer, begins = rec.reader.raw(first), np.zeros(1, np.int64)
        else:
            buffer, begins = rec.reader.raw_run(first, stop)
        at = begins[stretch - first] + base
        buffers.append(buffer)
        starts.append(at)
        ends.append(at + lengths[stretch].astype(np.int64))
        base += len(buffer)
    joined = buffers[0] if len(buffers) == 1 else b"".join(buffers)
    return datas(joined, np.concatenate(starts), np.concatenate(ends))


__all__ = ["ROS1", "items_field", "table_columns"]
