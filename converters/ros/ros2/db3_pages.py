"""The message rows of many `.db3` leaf pages at once, read with numpy.

Why: `Db3File._cell` reads a row with a dozen Python calls; a bag of small messages has
~40 rows a page and millions of rows. Here a batch of leaf pages is read as columns (cell
pointers, the varints of each record's header, the two integers) in a few numpy passes.
Only the rows rosbag2 writes are read so: a `messages` row `(id, topic_id, timestamp,
data)` with a one-byte header, integer topic and timestamp, a non-empty blob all on its
page. A page with anything else (an overflowing blob, another header, a damaged cell,
overlapping cells) is answered as unread, for `Db3File`'s own reader, which says why.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Final

import numpy as np
from numpy.typing import NDArray

from .sqlite_btree import TABLE_LEAF, Pager
from .storage import Batch, batched

if TYPE_CHECKING:
    from .db3 import Db3File

#: The columns of rosbag2's `messages` table: rowid alias, columns, topic_id, timestamp, data
#: (the only layout read here; `Db3File` reads any other).
ROSBAG2: Final = (0, 4, 1, 2, 3)
#: Leaf pages read at once (~1 MiB of 4 KiB pages).
_PAGES: Final = 256

#: bytes of an integer of each serial type byte 0-255 (only 1-6, 8 and 9 are integers here;
#: any other byte, a damaged header's, reads 0 and its row is refused by `_INTS`)
_SIZE: Final = np.zeros(256, np.int64)
_SIZE[:8] = (0, 1, 2, 3, 4, 6, 8, 8)
_INTS: Final = np.array([t in (1, 2, 3, 4, 5, 6, 8, 9) for t in range(256)])


def _varints(
    data: NDArray[np.uint8], at: NDArray[np.int64]
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """The SQLite varints at `at`: values and where each ends."""
    last = len(data) - 1
    value = np.zeros(len(at), np.int64)
    end = at + 9
    done = np.zeros(len(at), bool)
    for k in range(9):
        byte = data[np.minimum(at + k, last)].astype(np.int64)
        if k < 8:
            value = np.where(done, value, (value << 7) | (byte & 0x7F))
            stop = ~done & (byte < 0x80)
        else:
            value = np.where(done, value, (value << 8) | byte)
            stop = ~done
        end[stop] = at[stop] + k + 1
        done |= stop
        if done.all():
            break
    return value, end


def _integers(data: NDArray[np.uint8], at: NDArray[np.int64], kinds: Any) -> NDArray[np.int64]:
    """Big-endian signed integers of serial types `kinds` (1-6, 8, 9) at `at`."""
    width = _SIZE[kinds]
    index = np.minimum(at[:, None] + np.arange(8), len(data) - 1)
    raw = np.ascontiguousarray(data[index]).view(">i8").reshape(-1).astype(np.int64)
    shift = 64 - 8 * np.maximum(width, 1)
    value: NDArray[np.int64] = np.where(width > 0, raw >> shift, kinds - 8)
    return value


def read_leaves(
    pager: Pager, data: NDArray[np.uint8], pages: list[int]
) -> tuple[NDArray[np.bool_], NDArray[np.int64], dict[str, NDArray[np.int64]]]:
    """Pages `pages` (leaf pages of rosbag2's `messages`, not page 1) read at once: whether
    each was read, the rows of each (0 for a page not read) and the rows of those read, in
    page then cell order: `topic`, `time`, `start` (offset of the data in `data`), `length`."""
    usable = pager.usable
    offsets = np.array([pager.offset(n) for n in pages], np.int64)
    last = len(data) - 1
    good = data[offsets] == TABLE_LEAF
    cells = data[offsets + 3].astype(np.int64) << 8 | data[offsets + 4]
    good &= 8 + 2 * cells <= usable
    cells[~good] = 0
    page_of = np.repeat(np.arange(len(pages)), cells)
    first = np.cumsum(cells) - cells
    pointer = offsets[page_of] + 8 + 2 * (np.arange(len(page_of)) - first[page_of])
    cell = data[pointer].astype(np.int64) << 8 | data[pointer + 1]
    bad = (cell < 8 + 2 * cells[page_of]) | (cell >= usable)
    cell = offsets[page_of] + np.minimum(cell, usable - 1)
    size, at = _varints(data, cell)
    _, at = _varints(data, at)  # the rowid
    bad |= (size > pager.max_local) | (at - offsets[page_of] + size > usable)
    at = np.minimum(at, last - 4)
    header = data[at].astype(np.int64)
    topic_kind, time_kind = data[at + 2].astype(np.int64), data[at + 3].astype(np.int64)
    data_kind, header_end = _varints(data, at + 4)
    bad |= (header >= 0x80) | (data[at + 1] != 0) | (header_end != at + header)
    bad |= ~_INTS[topic_kind] | ~_INTS[time_kind] | (data_kind < 14) | (data_kind & 1 == 1)
    start = header + _SIZE[topic_kind] + _SIZE[time_kind]
    length = (data_kind - 12) >> 1
    bad |= start + length != size
    start += at
    # data stretches of one page may not overlap (pages do not: each lies on its own)
    order = np.argsort(start, kind="stable")
    ends = (start + length)[order]
    clash = np.zeros(len(start) + 1, bool)
    clash[1:-1] = ends[:-1] > start[order][1:]
    overlap = np.zeros(len(start), bool)
    overlap[order] = clash[:-1] | clash[1:]
    bad |= overlap
    good &= np.bincount(page_of[bad], minlength=len(pages)) == 0
    rows = np.where(good, cells, 0)
    keep = good[page_of]
    at = at[keep]
    columns = {
        "topic": _integers(data, at + header[keep], topic_kind[keep]),
        "time": _integers(data, at + header[keep] + _SIZE[topic_kind[keep]], time_kind[keep]),
        "start": start[keep],
        "length": length[keep],
    }
    return good, rows, columns


def db3_batches(file: Db3File) -> Iterator[Batch]:
    """`file.messages()` as batches: a whole b-tree's pages of rosbag2's usual rows read
    with `read_leaves`; any other page, and a crashed or damaged file, by `Db3File`'s own
    reader, gathered."""
    plan = file._plan()
    if plan is None:
        return
    layout, leaves, visited, whole = plan
    if not whole or layout != ROSBAG2:
        yield from batched(
            file._recovered(layout, leaves, visited)
            if not whole
            else (file._emit(row) for n in leaves for row in file._leaf(n, layout, True))
        )
        if whole:
            file._report_dropped()
        return
    data = np.frombuffer(file.pager.view, np.uint8)
    for at in range(0, len(leaves), _PAGES):
        pages = leaves[at : at + _PAGES]
        if 1 in pages or file._claimed.intersection(pages):
            yield from batched(file._emit(r) for n in pages for r in file._leaf(n, layout, True))
            continue
        good, rows, columns = read_leaves(file.pager, data, pages)
        done = 0  # rows of `columns` given
        for ok, run in itertools.groupby(range(len(pages)), key=lambda i: bool(good[i])):
            numbers = list(run)
            if not ok:
                slow = (r for i in numbers for r in file._leaf(pages[i], layout, True))
                yield from batched(file._emit(r) for r in slow)
                continue
            count = int(rows[numbers].sum())
            part = {k: v[done : done + count] for k, v in columns.items()}
            done += count
            file._claimed.update(pages[i] for i in numbers)
            file._counts.add_ones(count)
            file._pos.frombytes(part["start"].astype("=i8").tobytes())
            file._len.frombytes(part["length"].astype("=u2").tobytes())
            yield Batch(part["topic"], part["time"], part["start"], part["length"], data)
    file._report_dropped()
