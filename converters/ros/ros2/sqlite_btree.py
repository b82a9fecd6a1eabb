"""Just enough of the SQLite file format (https://www.sqlite.org/fileformat2.html) to read
rosbag2 `.db3` files without the sqlite3 library.

Why our own reader: the archive keeps each message's data once and the rest of the file as
a skeleton, so we must know the exact byte ranges of every blob (in its leaf cell and in its
overflow pages), which no SQL interface tells. It also lets a crashed file (cut, half
written) be read page by page, where sqlite3 would refuse the whole database.

Everything here distrusts the file: page numbers are checked against the pages present,
overflow chains and b-tree walks remember the pages they visited (no cycles), and declared
lengths are checked against the file size before anything is allocated.
"""

from __future__ import annotations

import mmap
import struct
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace

from nanorec.errors import FormatError, TruncatedError

MAGIC = b"SQLite format 3\x00"
TABLE_INTERIOR, TABLE_LEAF, INDEX_INTERIOR, INDEX_LEAF = 0x05, 0x0D, 0x02, 0x0A
MAX_DEPTH = 40  # a b-tree of 4 KiB pages this deep would hold far more than 2**64 rows

_U16 = struct.Struct(">H")
_U32 = struct.Struct(">I")
#: Bytes of a record value for serial types 0..11 (10 and 11 are reserved, so invalid).
_FIXED = (0, 1, 2, 3, 4, 6, 8, 8, 0, 0, -1, -1)

Buffer = bytes | bytearray | memoryview | mmap.mmap


def varint(b: bytes, i: int) -> tuple[int, int]:
    """The SQLite varint at `b[i]` (1-9 bytes, big-endian, 7 bits a byte, the 9th all 8)."""
    x = b[i]
    if x < 0x80:
        return x, i + 1
    v = x & 0x7F
    for j in range(i + 1, i + 8):
        x = b[j]
        v = (v << 7) | (x & 0x7F)
        if x < 0x80:
            return v, j + 1
    return (v << 8) | b[i + 8], i + 9


def serial_size(t: int) -> int:
    """Bytes a record value of serial type `t` takes (blobs even >= 12, texts odd >= 13)."""
    if t >= 12:
        return (t - 12) >> 1
    size = _FIXED[t]
    if size < 0:
        raise FormatError(f"reserved record serial type {t}")
    return size


def int_value(b: bytes | memoryview, t: int) -> int:
    """An integer value of serial type 1-6, 8 or 9 (the bytes from the value's start)."""
    if t == 8 or t == 9:
        return t - 8
    return int.from_bytes(b[: _FIXED[t]], "big", signed=True)


@dataclass(frozen=True)
class Header:
    page_size: int
    usable: int  # page size less the reserved bytes at each page's end
    pages: int  # full pages present in the file
    declared_pages: int  # the header's database size, or `pages` when it is stale
    freelist_trunk: int
    freelist_count: int
    encoding: str  # Python codec of TEXT values


def read_header(buf: Buffer) -> Header:
    if len(buf) < 100:
        raise TruncatedError("SQLite header cut short", offset=len(buf))
    head = bytes(buf[:100])
    if head[:16] != MAGIC:
        raise FormatError("not an SQLite 3 database (magic)", offset=0)
    page_size = _U16.unpack_from(head, 16)[0]
    page_size = 65536 if page_size == 1 else page_size
    if page_size < 512 or page_size & (page_size - 1):
        raise FormatError(f"SQLite page size {page_size} is not a power of two", offset=16)
    usable = page_size - head[20]
    if usable < 480:
        raise FormatError(f"SQLite usable page size {usable} < 480", offset=20)
    pages = len(buf) // page_size
    declared = _U32.unpack_from(head, 28)[0]
    if declared == 0 or head[24:28] != head[92:96]:
        declared = pages
    encoding = {1: "utf-8", 2: "utf-16-le", 3: "utf-16-be"}.get(_U32.unpack_from(head, 56)[0])
    if encoding is None:
        raise FormatError("unknown SQLite text encoding", offset=56)
    trunk, count = struct.unpack_from(">II", head, 32)
    return Header(page_size, usable, pages, declared, trunk, count, encoding)


@dataclass(frozen=True)
class Overlay:
    """Pages found elsewhere in the buffer than at (n - 1) * page size: the committed frames
    of a WAL appended after the database file's `main_size` bytes (see `sqlite_wal.py`)."""

    main_size: int
    pages: Mapping[int, int]  # page number -> offset of its bytes in the buffer
    db_pages: int  # the database's size in pages after the WAL's last commit


class Pager:
    """The file's pages, by number (1-based, as SQLite counts them); with an `overlay`, as
    SQLite sees them after replaying a WAL."""

    def __init__(self, buf: Buffer, overlay: Overlay | None = None) -> None:
        self.buf = buf
        self.view = memoryview(buf)
        self.overlay = overlay
        if overlay is None:
            self.header = h = read_header(buf)
        else:
            first = overlay.pages.get(1, 0)
            h = read_header(self.view[first : first + 100])
            # pages: the last one present (in the file or the WAL) of the committed size;
            # one missing before it (the file cut, the WAL holding later pages) is not `has`
            present = max(overlay.main_size // h.page_size, max(overlay.pages, default=0))
            n = min(overlay.db_pages, present)
            self.header = h = replace(h, pages=n, declared_pages=max(overlay.db_pages, n))
        self.size, self.usable = h.page_size, h.usable
        self.max_local = h.usable - 35
        self.min_local = (h.usable - 12) * 32 // 255 - 23

    def has(self, n: int) -> bool:
        """Whether page `n` is present whole (with an overlay: in the WAL or the file)."""
        if n < 1 or n > self.header.pages:
            return False
        overlay = self.overlay
        return overlay is None or n in overlay.pages or n * self.size <= overlay.main_size

    def missing(self) -> int:
        """How many of the database's committed pages are not present (`has`)."""
        h, overlay = self.header, self.overlay
        if overlay is None:
            return h.declared_pages - h.pages
        in_file = min(overlay.main_size // self.size, h.pages)
        in_wal = sum(1 for n in overlay.pages if in_file < n <= h.pages)
        return h.declared_pages - in_file - in_wal

    def offset(self, n: int) -> int:
        if self.overlay is not None:
            return self.overlay.pages.get(n, (n - 1) * self.size)
        return (n - 1) * self.size

    def page(self, n: int) -> bytes:
        """Page `n`'s bytes; TruncatedError when the file ends before it."""
        if not self.has(n):
            if n >= 1 and n <= self.header.declared_pages:
                raise TruncatedError(f"page {n} is past the end of the file", offset=len(self.buf))
            raise FormatError(f"page number {n} outside the file")
        start = self.offset(n)
        return bytes(self.buf[start : start + self.size])

    def cells(self, n: int, page: bytes, kinds: tuple[int, ...]) -> tuple[int, list[int]]:
        """Kind and cell offsets of b-tree page `n`; FormatError when it is no such page."""
        h = 100 if n == 1 else 0
        kind = page[h]
        if kind not in kinds:
            raise FormatError(
                f"page {n} is not a b-tree page of kind {kinds}", offset=self.offset(n) + h
            )
        count = _U16.unpack_from(page, h + 3)[0]
        start = h + (12 if kind in (TABLE_INTERIOR, INDEX_INTERIOR) else 8)
        if start + 2 * count > self.usable:
            raise FormatError(f"page {n}: {count} cells do not fit", offset=self.offset(n) + h + 3)
        cells = list(struct.unpack_from(f">{count}H", page, start))
        if cells and (min(cells) < start + 2 * count or max(cells) >= self.usable):
            raise FormatError(
                f"page {n}: a cell pointer outside the page", offset=self.offset(n) + start
            )
        return kind, cells

    def local_size(self, payload: int) -> int:
        """Payload bytes a table-leaf cell keeps on its page (the rest overflows)."""
        if payload <= self.max_local:
            return payload
        k = self.min_local + (payload - self.min_local) % (self.usable - 4)
        return k if k <= self.max_local else self.min_local

    def overflow(self, first: int, remaining: int, seen: set[int]) -> list[tuple[int, int, int]]:
        """(page, file offset, length) of the content of an overflow chain carrying
        `remaining` bytes; every page is added to `seen`, a page seen before is an error."""
        out: list[tuple[int, int, int]] = []
        chunk = self.usable - 4
        if remaining > chunk * self.header.pages:
            raise FormatError(f"overflow of {remaining} bytes cannot fit in the file")
        n = first
        while remaining > 0:
            if n in seen or n < 2:
                raise FormatError(f"overflow chain loops or points at page {n}")
            if not self.has(n):
                self.page(n)  # raises: cut or out of range
            seen.add(n)
            start = self.offset(n)
            take = min(chunk, remaining)
            out.append((n, start + 4, take))
            remaining -= take
            n = _U32.unpack_from(self.buf, start)[0]
        return out

    def payload(self, n: int, page: bytes, cell: int) -> tuple[int, bytes]:
        """(rowid, whole payload) of the table-leaf cell at `cell` of page `n`."""
        size, i = varint(page, cell)
        rowid, i = varint(page, i)
        local = self.local_size(size)
        if i + local + (4 if local < size else 0) > self.usable:
            raise FormatError(f"page {n}: cell runs off the page", offset=self.offset(n) + cell)
        if local == size:
            return rowid, page[i : i + size]
        parts = [page[i : i + local]]
        first = _U32.unpack_from(page, i + local)[0]
        parts += [
            bytes(self.view[o : o + k]) for _, o, k in self.overflow(first, size - local, set())
        ]
        return rowid, b"".join(parts)

    def walk(
        self, root: int, visited: set[int], depth: int = 0
    ) -> Iterator[tuple[int, bytes, list[int]]]:
        """(page number, bytes, cell offsets) of the leaf pages of the table b-tree at `root`,
        in key order. Raises NanorecError on a page that is no table page, a cycle, a cut."""
        if root in visited or depth > MAX_DEPTH:
            raise FormatError(f"table b-tree loops at page {root}")
        visited.add(root)
        page = self.page(root)
        kind, cells = self.cells(root, page, (TABLE_INTERIOR, TABLE_LEAF))
        if kind == TABLE_LEAF:
            yield root, page, cells
            return
        h = 100 if root == 1 else 0
        for child in [_U32.unpack_from(page, c)[0] for c in cells] + [
            _U32.unpack_from(page, h + 8)[0]
        ]:
            yield from self.walk(child, visited, depth + 1)

    def rows(self, root: int) -> Iterator[tuple[int, list[object]]]:
        """(rowid, values) of every row of a (small) table, whole payloads decoded."""
        for n, page, cells in self.walk(root, set()):
            for c in cells:
                rowid, payload = self.payload(n, page, c)
                yield rowid, self.record(payload)

    def record(self, payload: bytes) -> list[object]:
        """The values of a record: None, int, float, str (file's encoding) or bytes."""
        types, offs, end = record_header(payload, 0, len(payload))
        if end < 0 or end > len(payload):
            raise FormatError("record header or values run past their record")
        out: list[object] = []
        for t, pos in zip(types, offs, strict=True):
            raw = payload[pos : pos + serial_size(t)]
            if t == 0:
                out.append(None)
            elif t == 7:
                out.append(struct.unpack(">d", raw)[0])
            elif t < 12:
                out.append(int_value(raw, t))
            elif t & 1:
                out.append(raw.decode(self.header.encoding, "replace"))
            else:
                out.append(raw)
        return out

    def freelist(self) -> set[int]:
        """Pages on the freelist (trunks and leaves), as far as the chain can be followed."""
        free: set[int] = set()
        n = self.header.freelist_trunk
        cap = self.usable // 4 - 2
        while 1 < n <= self.header.pages and n not in free:
            free.add(n)
            page = self.page(n)
            count = min(_U32.unpack_from(page, 4)[0], cap)
            free.update(x for x in struct.unpack_from(f">{count}I", page, 8) if x > 1)
            n = _U32.unpack_from(page, 0)[0]
        return free


def record_header(b: bytes, i: int, local: int) -> tuple[list[int], list[int], int]:
    """Serial types and payload offsets of the values of the record at `b[i]`, and the
    record's length (-1 when its header is longer than the `local` bytes at hand)."""
    hlen, j = varint(b, i)
    if hlen > local:
        return [], [], -1
    types: list[int] = []
    offs: list[int] = []
    at = hlen
    while j < i + hlen:
        t, j = varint(b, j)
        types.append(t)
        offs.append(at)
        at += serial_size(t)
    return types, offs, at


def columns(sql: str) -> list[tuple[str, bool]]:
    """(name, is the rowid alias) of each column of a CREATE TABLE statement, in order."""
    body = sql[sql.find("(") + 1 : sql.rfind(")")]
    parts: list[str] = []
    depth, start = 0, 0
    for i, ch in enumerate(body):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(body[start:i])
            start = i + 1
    parts.append(body[start:])
    out: list[tuple[str, bool]] = []
    for part in parts:
        words = part.split()
        if not words or words[0].upper() in ("PRIMARY", "UNIQUE", "CHECK", "FOREIGN", "CONSTRAINT"):
            continue
        name = words[0].strip('"`[]')
        spec = " ".join(w.upper() for w in words[1:3])
        out.append((name, spec == "INTEGER PRIMARY"))
    return out


def schema(pager: Pager) -> dict[str, tuple[int, list[tuple[str, bool]]]]:
    """Each table of sqlite_master (page 1): name -> (root page, columns)."""
    tables: dict[str, tuple[int, list[tuple[str, bool]]]] = {}
    for _, values in pager.rows(1):
        if len(values) >= 5 and values[0] == "table" and isinstance(values[1], str):
            root, sql = values[3], values[4]
            if isinstance(root, int) and isinstance(sql, str):
                tables[values[1]] = (root, columns(sql))
    return tables
