"""rosbag2's sqlite3 storage (`.db3`) as a `StorageFile`: tables read with our own SQLite
reader (`sqlite_btree`), messages split from the rest of the file, and joined back.

The skeleton is a small piece table followed by the file with every message blob's bytes
cut out (from leaf cells and overflow pages; record headers, which state the blob lengths,
stay). Why a table and not a parseable skeleton: blob pieces are not in message order in
the file (cells fill a page from its end, an overflow chain may sit before or after its
leaf page, a split page moves cells), a damaged file may have pieces anywhere, and the
join must not depend on understanding the file. The table and the join: `db3_skeleton.py`.
"""

from __future__ import annotations

import functools
import itertools
import mmap
import struct
from array import array
from collections.abc import Iterator
from typing import IO

from nanorec.contract import Region
from nanorec.errors import FormatError, NanorecError

from .db3_build import PieceCounts, write_skeleton
from .db3_pages import ROSBAG2, db3_batches
from .db3_skeleton import build_skeleton
from .sqlite_btree import (
    TABLE_LEAF,
    Pager,
    record_header,
    schema,
    serial_size,
    varint,
)
from .sqlite_tree import interior_keys, leaf_pages
from .sqlite_wal import wal_overlay
from .storage import Batch, Damage, Definition, StoredMessage, Topic

_U32 = struct.Struct(">I")
_INTS = frozenset((1, 2, 3, 4, 5, 6, 8, 9))
_BAD = (IndexError, ValueError, struct.error)  # a structure that runs off its page
_SIZE = (0, 1, 2, 3, 4, 6, 8, 8, 0, 0)  # bytes of an integer of serial type 0-9
_int = functools.partial(int.from_bytes, byteorder="big", signed=True)
_TOPIC_TEXT = (
    "name",
    "type",
    "serialization_format",
    "offered_qos_profiles",
    "type_description_hash",
)
Row = tuple[int, int, int, list[tuple[int, int]]]  # rowid, topic, timestamp, pieces


class Db3File:
    """One `.db3` file's bytes, opened. `messages()` walks the `messages` table b-tree in
    rowid order; when the tree cannot be walked whole (a crash, a damaged page) every page
    that looks like a leaf of `messages` is read instead."""

    storage = "sqlite3"

    def __init__(self, buf: bytes | mmap.mmap | memoryview, main_size: int | None = None) -> None:
        self.buf = buf
        self.view = memoryview(buf).cast("B") if isinstance(buf, memoryview) else memoryview(buf)
        self.damage = Damage()
        overlay = None
        if main_size is not None:  # `buf` is the file then its WAL
            overlay = wal_overlay(self.view, main_size, self.damage)
        self.pager = p = Pager(self.view if overlay else self.view[:main_size], overlay)
        self.page_size = p.size
        h = p.header
        tail = 0 if overlay else len(p.view) - h.pages * p.size
        if overlay and p.missing():
            why = f"{p.missing()} of its {h.declared_pages} pages in neither the file nor its WAL"
            self.damage.cut = Region(overlay.main_size, 0, why)
        elif tail or h.declared_pages > h.pages:
            why = (
                f"file ends inside page {h.pages + 1}"
                if tail
                else f"file ends after page {h.pages}"
            )
            self.damage.cut = Region(h.pages * p.size, tail, f"{why} of {h.declared_pages}")
        self.tables: dict[str, tuple[int, list[tuple[str, bool]]]] = {}
        try:
            self.tables = schema(p)
        except (NanorecError, *_BAD) as exc:
            self.damage.notes.append(f"sqlite_master unreadable: {exc}")
        self.topics: list[Topic] = []
        for r in self._rows("topics"):
            key = r.get("id")
            if isinstance(key, int):
                text = [str(r.get(c, "")) for c in _TOPIC_TEXT]
                self.topics.append(Topic(key, *text))
        self.topics.sort(key=lambda t: t.key)
        self.definitions = [
            Definition(
                str(r.get("topic_type", "")),
                str(r.get("encoding", "")),
                str(r.get("encoded_message_definition", "")),
            )
            for r in self._rows("message_definitions")
        ]
        meta = self._rows("metadata")
        last = meta[-1].get("metadata") if meta else None
        self.stored_metadata = last if isinstance(last, str) else None
        rows = self._rows("schema")
        distro = rows[-1].get("ros_distro") if rows else None
        self.ros_distro = distro if isinstance(distro, str) else None
        version = rows[-1].get("schema_version") if rows else None
        if isinstance(version, int):
            self.schema_version = version
        else:
            cols = self.tables.get("topics", (0, []))[1]
            self.schema_version = 2 if any(c == "offered_qos_profiles" for c, _ in cols) else 1
        # 8 bytes a number, not a Python int's 36: a bag holds millions of messages
        self._counts = PieceCounts()  # pieces a message
        self._pos = array("q")
        self._len = array("H")  # a piece lies on one page (of at most 64 KiB)
        self._claimed: set[int] = set()  # leaf and overflow pages whose blob bytes are cut
        self._dropped: dict[int, list[int]] = {}  # leaf page -> rowids of rows not messages
        self._read = False
        self._spent = False  # the pieces sorted by `write_skeleton`

    def _rows(self, table: str) -> list[dict[str, object]]:
        """The rows of a small table as column -> value, in rowid order ([] when absent)."""
        if table not in self.tables:
            return []
        root, cols = self.tables[table]
        out: list[dict[str, object]] = []
        try:
            for rowid, values in self.pager.rows(root):
                row = {
                    name: (rowid if alias else v)
                    for (name, alias), v in zip(cols, values, strict=False)
                }
                out.append(row)
        except (NanorecError, *_BAD) as exc:
            self.damage.notes.append(f"table {table}: {exc}")
        return out

    def messages(self) -> Iterator[StoredMessage]:
        """Every complete row of `messages`: rowid order when the b-tree is whole, else the
        rows of the tree's readable part and of stray leaf pages, deduplicated and sorted."""
        plan = self._plan()
        if plan is None:
            return
        layout, leaves, visited, whole = plan
        if whole:
            for n in leaves:
                for row in self._leaf(n, layout, strict=True):
                    yield self._emit(row)
            self._report_dropped()
            return
        yield from self._recovered(layout, leaves, visited)

    def batches(self) -> Iterator[Batch]:
        """`messages()` as batches (`db3_pages.db3_batches`: a whole tree's usual pages read
        with numpy)."""
        return db3_batches(self)

    def _plan(
        self,
    ) -> tuple[tuple[int, int, int, int, int], list[int], set[int], bool] | None:
        """What `messages()` reads: the layout of `messages`, its leaf pages, the pages the
        walk visited, and whether the tree is whole (None: no message can be read)."""
        if self._read:
            raise FormatError("messages() of a .db3 file can be read once")
        self._read = True
        p = self.pager
        root, cols = self.tables.get("messages", (0, []))
        layout = _layout(cols) if root else ROSBAG2  # no schema: rosbag2's columns
        if layout is None:
            self.damage.notes.append("table messages has no topic_id, timestamp, data columns")
            return None
        visited: set[int] = set()
        leaves, problems = leaf_pages(p, root, visited) if root else ([], [])
        for n, why in problems:
            self._damaged(n, why)
        # Pages past the committed size: a writer died inside a transaction, its rows are
        # on disk (spilled from its cache) though the committed tree does not reach them.
        spilled = p.header.pages > p.header.declared_pages
        if spilled:
            self.damage.notes.append(
                f"{p.header.pages - p.header.declared_pages} pages past the committed end "
                "(a writer killed inside a transaction): their rows are read too"
            )
        partial = self.damage.cut is not None and self.damage.cut.length > 0
        return layout, leaves, visited, bool(root and not problems and not spilled and not partial)

    def _recovered(
        self, layout: tuple[int, int, int, int, int], leaves: list[int], visited: set[int]
    ) -> Iterator[StoredMessage]:
        """The rows of a crashed or damaged file (see `messages`)."""
        p = self.pager
        # A crashed or damaged file: the readable part of the tree, then stray leaf pages.
        try:
            skip = p.freelist()
        except (NanorecError, *_BAD):
            skip = set()
        for name, (other, _) in self.tables.items():
            if name != "messages" and other:
                leaf_pages(p, other, skip)
        seen: dict[int, Row] = {}
        stray = [
            n
            for n in range(2, p.header.pages + 1)
            if n not in visited and n not in skip and p.has(n)
        ]
        for n in leaves + stray:
            if n in leaves or p.view[p.offset(n)] == TABLE_LEAF:
                for row in self._leaf(n, layout, strict=n in leaves):
                    seen.setdefault(row[0], row)
        kept = 0
        for row in self._partial_leaf(layout):
            kept += seen.setdefault(row[0], row) is row
        if self.damage.cut is not None:
            self._loss(seen, kept, max(interior_keys(p, visited), default=0))
        self._report_dropped()
        for rowid in sorted(seen):
            yield self._emit(seen[rowid])

    def _report_dropped(self) -> None:
        """Rows of `messages` that are no message (a NULL, or no integer, topic_id or
        timestamp; a NULL, or no blob, data: rosbag2 declares all three NOT NULL): lost
        messages, each page holding some a loss, and a note of how many and which."""
        if not self._dropped:
            return
        why = "a NULL or mistyped topic_id, timestamp or data (declared NOT NULL)"
        rowids = sorted(r for rows in self._dropped.values() for r in rows)
        shown = ", ".join(map(str, rowids[:10])) + (", ..." if len(rowids) > 10 else "")
        self.damage.notes.append(f"{len(rowids)} rows of messages dropped, {why}: rowids {shown}")
        for n, rows in sorted(self._dropped.items()):
            start = self.pager.offset(n)
            self.damage.losses.append(
                Region(start, self.pager.size, f"page {n}: {len(rows)} rows dropped, {why}")
            )
        self.damage.lost_messages += len(rowids)

    def _partial_leaf(self, layout: tuple[int, int, int, int, int]) -> list[Row]:
        """The rows of the page the file ends inside whose cells are whole on disk (why: a
        leaf's cells fill it from its end, so the rows written last, nearest its header,
        survive a cut through its middle; SQLite, which reads a short page as zeros past
        the end, still finds them). [] when the page is no leaf of `messages`."""
        p = self.pager
        n = p.header.pages + 1
        base = p.offset(n)
        have = len(p.view) - base
        if n == 1 or have < 8 or p.overlay or p.view[base] != TABLE_LEAF:
            return []
        page = bytes(p.view[base:]) + bytes(p.size - have)
        try:
            _, cells = p.cells(n, page, (TABLE_LEAF,))
        except NanorecError:
            return []
        if 8 + 2 * len(cells) > have:
            return []  # the cell pointers are cut: which bytes are cells cannot be told
        rows: list[Row] = []
        claimed: set[int] = set()
        for c in cells:
            try:
                size, i = varint(page, c)
                _, i = varint(page, i)
                local = p.local_size(size)
                if c >= have or i + local + (4 if local < size else 0) > have:
                    continue  # cut: lost, never read from the zeros
                row = self._cell(page, base, c, layout, claimed)
            except (NanorecError, *_BAD):
                continue
            if row is None:
                return []  # another table's page
            rows.append(row)
        if claimed & self._claimed:
            return []
        self._claimed |= claimed
        return rows

    def _loss(self, seen: dict[int, Row], kept: int, named: int) -> None:
        """The cut as a loss: the rows read from its partial page, and the rowids missing
        below the largest one read or `named` by an interior page of the tree (rosbag2
        numbers rows 1, 2, 3... and deletes none, so each is a message lost; rows past the
        largest are lost too, uncounted)."""
        cut = self.damage.cut
        assert cut is not None
        p = self.pager
        present = len(p.view) - cut.offset
        missing = max(0, max(named, max(seen, default=0)) - len(seen))
        lost = f"at least {missing}" if missing else "an unknown number of"
        reason = (
            f"SQLite file cut ({cut.reason}): {kept} rows read from the page it ends inside, "
            f"{lost} messages lost ({missing} rowids missing below the largest one known)"
        )
        self.damage.losses.append(Region(cut.offset, cut.length, reason))
        self.damage.lost_messages += missing
        self.damage.lost_bytes += max(p.header.declared_pages, p.header.pages + 1) * p.size - (
            cut.offset + present
        )

    def _damaged(self, n: int, why: str) -> None:
        start = self.pager.offset(n)
        length = max(0, min(self.pager.size, len(self.view) - start))
        self.damage.damaged.append(Region(start, length, why))

    def _emit(self, row: Row) -> StoredMessage:
        _, topic, stamp, pieces = row
        self._counts.append(len(pieces))
        for off, k in pieces:
            self._pos.append(off)
            self._len.append(k)
        v = self.view
        if len(pieces) == 1:
            off, k = pieces[0]
            return StoredMessage(topic, stamp, v[off : off + k])
        return StoredMessage(topic, stamp, b"".join(v[o : o + k] for o, k in pieces))

    def _leaf(self, n: int, layout: tuple[int, int, int, int, int], strict: bool) -> list[Row]:
        """The message rows of leaf page `n` ([] and a damaged region when it cannot be read
        as one; `strict` False: a page with a cell that is no message row is no message page)."""
        p = self.pager
        if n in self._claimed:
            self._damaged(n, "page used twice")
            return []
        try:
            page = p.page(n)
            _, cells = p.cells(n, page, (TABLE_LEAF,))
        except NanorecError as exc:
            if strict:
                self._damaged(n, exc.message)
            return []
        base = p.offset(n)
        rows: list[Row] = []
        spans: list[tuple[int, int]] = []
        claimed: set[int] = set()
        for c in cells:
            try:
                row = self._cell(page, base, c, layout, claimed)
            except (NanorecError, *_BAD) as exc:
                row = None
                self.damage.notes.append(f"page {n} cell at {c}: {exc}")
            else:
                if row is None and strict:  # a whole record, but no message
                    self._dropped.setdefault(n, []).append(_rowid(page, c))
            if row is None:
                if not strict:
                    return []
                continue
            rows.append(row)
            spans.extend(x for x in row[3][:1] if base <= x[0] < base + p.size)
        spans.sort()
        if (
            any(a[0] + a[1] > b[0] for a, b in itertools.pairwise(spans))
            or n in claimed
            or claimed & self._claimed
        ):
            self._damaged(n, "cells overlap")
            return []
        self._claimed |= claimed
        self._claimed.add(n)
        return rows

    def _cell(
        self,
        page: bytes,
        base: int,
        c: int,
        layout: tuple[int, int, int, int, int],
        claimed: set[int],
    ) -> Row | None:
        """One cell as a message row, or None when its record is not (int, int, int, blob)."""
        p = self.pager
        alias, ncols, i_topic, i_stamp, i_data = layout
        size, i = _varint2(page, c)
        rowid, i = _varint2(page, i)
        local = size if size <= p.max_local else p.local_size(size)
        if i + local + (4 if local < size else 0) > p.usable:
            raise FormatError("cell runs off its page", offset=base + c)
        if layout == ROSBAG2 and page[i] < 0x80 and page[i + 1] == 0:  # the usual header
            hlen, t_topic, t_stamp = page[i], page[i + 2], page[i + 3]
            t_data, j = _varint2(page, i + 4)
            if j != i + hlen or hlen > local or t_topic not in _INTS or t_stamp not in _INTS:
                return None
            at = hlen + _SIZE[t_topic]
            offs = [0, hlen, at, at + _SIZE[t_stamp]]
            types = [0, t_topic, t_stamp, t_data]
            at = offs[3] + serial_size(t_data)
        else:
            types, offs, at = record_header(page, i, local)
        if len(types) != ncols or at != size or (alias >= 0 and types[alias] != 0):
            return None
        t_topic, t_stamp, t_data = types[i_topic], types[i_stamp], types[i_data]
        if t_topic not in _INTS or t_stamp not in _INTS or t_data < 12 or t_data & 1:
            return None
        o_topic, o_stamp = i + offs[i_topic], i + offs[i_stamp]
        if max(o_topic + _SIZE[t_topic], o_stamp + _SIZE[t_stamp]) > i + local:
            return None
        topic = t_topic - 8 if t_topic >= 8 else _int(page[o_topic : o_topic + _SIZE[t_topic]])
        stamp = t_stamp - 8 if t_stamp >= 8 else _int(page[o_stamp : o_stamp + _SIZE[t_stamp]])
        start, end = offs[i_data], offs[i_data] + serial_size(t_data)
        pieces: list[tuple[int, int]] = []
        if start < local:
            pieces.append((base + i + start, min(end, local) - start))
        if end > local:
            first = _U32.unpack_from(page, i + local)[0]
            at = local
            for _, off, k in p.overflow(first, size - local, claimed):
                lo, hi = max(at, start), min(at + k, end)
                if lo < hi:
                    pieces.append((off + lo - at, hi - lo))
                at += k
        return rowid, topic, stamp, pieces

    def skeleton(self) -> bytes | bytearray:
        """The piece table and the file without its messages' data (reads the messages
        first when `messages()` was not read through)."""
        if not self._read:
            for _ in self.messages():
                pass
        counts = self._counts.values()
        return build_skeleton(self.view, counts, self._pos, self._len)

    def write_skeleton(self, out: IO[bytes]) -> None:
        """`skeleton()` written to `out`, in bounded memory (`db3_build`); the pieces read
        are spent by it, so it is the last thing asked of the file."""
        if not self._read:
            for _ in self.messages():
                pass
        if self._spent:
            raise FormatError("the skeleton of a .db3 file can be written once")
        self._spent = True
        self._claimed = set()  # (a page number a page: ~50 MB for 1 GB of small messages)
        write_skeleton(self.view, self._counts, self._pos, self._len, out)


def _rowid(page: bytes, c: int) -> int:
    """The rowid of the cell at `c` (-1 when it cannot be read)."""
    try:
        return _varint2(page, _varint2(page, c)[1])[0]
    except _BAD:
        return -1


def _varint2(b: bytes, i: int) -> tuple[int, int]:
    """`varint`, the one- and two-byte cases (sizes and rowids of most cells) inline."""
    x = b[i]
    if x < 0x80:
        return x, i + 1
    y = b[i + 1]
    return (((x & 0x7F) << 7) | y, i + 2) if y < 0x80 else varint(b, i)


def _layout(cols: list[tuple[str, bool]]) -> tuple[int, int, int, int, int] | None:
    """(rowid alias column or -1, columns, topic_id, timestamp, data) of `messages`."""
    names = [c for c, _ in cols]
    if not all(x in names for x in ("topic_id", "timestamp", "data")):
        return None
    alias = next((i for i, (_, a) in enumerate(cols) if a), -1)
    return alias, len(cols), names.index("topic_id"), names.index("timestamp"), names.index("data")


def open_db3(buf: bytes | mmap.mmap | memoryview, main_size: int | None = None) -> Db3File:
    """Open a `.db3` file's bytes (FormatError/TruncatedError when it is no SQLite file);
    `main_size`: `buf` is the file's `main_size` bytes then its WAL, read as SQLite would."""
    try:
        return Db3File(buf, main_size)
    except _BAD as exc:
        raise FormatError(f"malformed SQLite file: {exc}") from exc
