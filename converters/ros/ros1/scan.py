"""Walk a bag's records once: where every message is, what each chunk needs to be rebuilt.

The walk never trusts the index section (a crashed bag has none, a damaged one may lie): it
reads the records from the version line on. Every message record inside a chunk becomes an
entry (connection, time, where its payload is); every byte that is not rebuilt from
messages is kept as a range of the source (`RawSegment`). A cut record ends the walk: the
bytes from there on are the `tail`.

Uncompressed chunk data is referenced in the source itself; decompressed data goes to a
spool file, so memory stays bounded on bags larger than RAM.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import struct
from collections.abc import Callable, Iterator
from typing import IO, Final

import numpy as np

from nanorec.buffers import Buffer
from nanorec.contract import Region
from nanorec.errors import (
    BadMagicError,
    FormatError,
    NanorecError,
    TruncatedError,
    UnsupportedError,
)

from . import compression
from .connection import Connection
from .plan import FROM_SOURCE, FROM_SPOOL, ChunkPlan, Entries, RawSegment, Scan
from .records import (
    OP_BAG_HEADER,
    OP_CHUNK,
    OP_CONNECTION,
    OP_MESSAGE,
    VERSION_LINE,
    BagBytes,
    Fields,
    Span,
    get,
    need,
    next_record,
    op_of,
    parse_fields,
    span_at,
    u32,
)
from .template import Template, Templates

_RELEASE_BYTES: Final = 16 << 20
#: Message records whose headers are checked at once.
_BATCH: Final = 4096
_U32: Final = struct.Struct("<I")


def check_version(buf: Buffer) -> None:
    head = bytes(buf[: len(VERSION_LINE)])
    if head == VERSION_LINE:
        return
    if head.startswith(b"#ROSBAG V"):
        line = bytes(buf[:32]).split(b"\n")[0].decode("ascii", "replace")
        raise UnsupportedError(
            f"{line!r}: only bag format 2.0 is supported (ROS rewrites an older bag as 2.0: "
            "`rosbag filter old.bag new.bag True`)",
            offset=0,
        )
    if len(head) < len(VERSION_LINE) and VERSION_LINE.startswith(head):
        raise TruncatedError("the file ends inside the version line", offset=len(head))
    raise BadMagicError("not a ROS bag: no '#ROSBAG V2.0' line", offset=0)


class _Walker:
    def __init__(
        self,
        buf: BagBytes,
        spool: IO[bytes],
        rows: IO[bytes],
        progress: Callable[[int], None] | None,
    ) -> None:
        self.buf = buf
        self.size = len(buf)
        self.spool = spool
        self.spool_size = 0
        self.progress = progress
        self.entries = Entries(rows)
        self.templates = Templates()
        self.connections: dict[int, Connection] = {}
        self.segments: list[RawSegment | ChunkPlan] = []
        self.damaged: list[Region] = []
        self.kept = 0
        self.chunk_stats: list[tuple[str, int, int]] = []
        self.bag_header: Fields | None = None
        self.released = 0

    def raw(self, start: int, end: int) -> None:
        last = self.segments[-1] if self.segments else None
        if isinstance(last, RawSegment) and last.end == start:
            last.end = end
        else:
            self.segments.append(RawSegment(start, end))

    def walk(self) -> Scan:
        check_version(self.buf)
        self.raw(0, len(VERSION_LINE))
        pos = len(VERSION_LINE)
        cut: Region | None = None
        while pos < self.size:
            try:
                span = span_at(self.buf, pos, self.size)
                fields = parse_fields(self.buf, span.header_start, span.header_end, pos)
                op = op_of(fields, pos)
                open_chunk = op == OP_CHUNK and span.data_end == span.data_start
            except TruncatedError as error:
                open_chunk = op_is_chunk(self.buf, pos)
                if not open_chunk:
                    cut = Region(pos, self.size - pos, f"cut: {error.message}")
                    break
            except FormatError as error:
                cut = Region(pos, self.size - pos, f"damaged: {error.message}")
                break
            if open_chunk:  # being written when the writer stopped, or cut: the last one
                stop, reason = self.cut_chunk(pos)
                if stop < self.size:
                    cut = Region(stop, self.size - stop, reason)
                pos = self.size if cut is None else stop
                break
            if op == OP_CHUNK:
                self.chunk(span, fields)
            else:
                if op == OP_BAG_HEADER and self.bag_header is None:
                    self.bag_header = fields
                elif op == OP_CONNECTION:
                    self.connection(fields, bytes(self.buf[span.data_start : span.data_end]), pos)
                self.raw(pos, span.data_end)
            pos = span.data_end
            if pos - self.released > _RELEASE_BYTES:  # bounded RSS on bags larger than RAM
                self.released = pos
                _drop(self.buf)
            if self.progress is not None:
                self.progress(pos)
        return Scan(
            self.segments,
            self.entries,
            self.templates,
            self.connections,
            self.bag_header,
            pos if cut is None else cut.offset,
            cut,
            self.damaged,
            self.kept,
            self.chunk_stats,
            unindexed=self.bag_header is None or _index_pos(self.bag_header) == 0,
        )

    def connection(self, fields: Fields, data: bytes, where: int) -> None:
        try:
            conn = Connection.parse(fields, data, where)
        except NanorecError as error:
            self.damaged.append(Region(where, 0, f"unreadable connection record: {error}"))
            return
        self.connections.setdefault(conn.id, conn)

    def chunk(self, span: Span, fields: Fields) -> None:
        where = span.start
        kind = need(fields, b"compression", None, where).decode("ascii", "replace")
        size = u32(need(fields, b"size", 4, where))
        stored = bytes(self.buf[span.data_start : span.data_end]) if kind != "none" else b""
        self.chunk_stats.append((kind, size, span.data_end - span.data_start))
        plan = ChunkPlan(
            RawSegment(span.start, span.data_start), kind, "rebuild", len(self.entries)
        )
        damage: list[Region] = []
        base = 0
        try:
            if kind == "none":
                self.records(
                    self.buf, span.data_start, span.data_end, plan, FROM_SOURCE, 0, damage=damage
                )
            else:
                base = self.spool_size
                self.spool_size += compression.decompress_into(
                    kind, stored, size, where, self.spool
                )
                self.spooled(base, plan, damage)
            if damage:  # its messages stay entries; the chunk goes back as stored
                self.damaged += _in_chunk(damage, where, kind, base)
                self.raw(span.start, span.data_end)
                return
            if kind != "none" and not compression.matches(kind, self.pieces(base), stored):
                self.kept += 1  # messages stay entries; the chunk goes back as stored
                self.raw(span.start, span.data_end)
                return
        except (FormatError, TruncatedError, UnsupportedError) as error:
            if isinstance(error, UnsupportedError) and "install" in error.message:
                raise
            self.damaged.append(
                Region(where, span.data_end - where, f"chunk kept as stored bytes: {error.message}")
            )
            self.raw(span.start, span.data_end)
            return
        self.segments.append(plan)

    def spooled(self, base: int, plan: ChunkPlan, damage: list[Region] | None) -> None:
        """Read the records decompressed to the spool from `base` on, through a map of it
        (so that a large chunk is never held in memory)."""
        if self.spool_size == base:
            return
        self.spool.flush()
        with mmap.mmap(self.spool.fileno(), 0, access=mmap.ACCESS_READ) as view:
            tolerant = damage is None
            self.records(view, base, self.spool_size, plan, FROM_SPOOL, 0, tolerant, damage)
            _drop(view)

    def pieces(self, base: int) -> Iterator[bytes]:
        """The spool from `base` on, a piece at a time (read, not mapped: no pages kept)."""
        self.spool.flush()
        for at in range(base, self.spool_size, compression.PIECE):
            yield os.pread(self.spool.fileno(), min(compression.PIECE, self.spool_size - at), at)

    def records(
        self,
        data: BagBytes,
        pos: int,
        end: int,
        plan: ChunkPlan,
        src: int,
        spool_base: int,
        tolerant: bool = False,
        damage: list[Region] | None = None,
    ) -> int:
        """Read the records of a chunk's data `data[pos:end]`. `spool_base` shifts positions
        into the spool (FROM_SPOOL). `tolerant`: stop at the first cut or unreadable record
        and return its position. Else an unreadable record goes to `damage` (its position in
        `data`) and the walk goes on at the next plausible record."""
        entries = self.entries
        templates = self.templates
        while pos < end:
            last = templates.last
            if last is not None:  # the records whose header is the last learnt order
                pos = self.matching(data, pos, end, plan, src, spool_base, last)
                if pos >= end:
                    break
            # one record the slow way: another header, another op, or damage
            try:
                span = span_at(data, pos, end)
                header = bytes(data[span.header_start : span.header_end])
                fields = parse_fields(header, 0, len(header), pos)
                op = op_of(fields, pos)
                if op == OP_MESSAGE:
                    template, conn, time = templates.learn(fields, header, pos)
            except NanorecError as error:
                if tolerant:
                    return pos
                if damage is None:
                    raise
                resync = next_record(data, pos, end)
                damage.append(Region(pos, resync - pos, error.message))
                pos = resync
                continue
            if op != OP_MESSAGE:
                if op == OP_CONNECTION:
                    self.connection(fields, bytes(data[span.data_start : span.data_end]), pos)
                plan.add_inner(bytes(data[span.start : span.data_end]))
                pos = span.data_end
                continue
            if template < 0:
                entries.headers[len(entries)] = header
            plan.add_message()
            entries.conn.append(conn)
            entries.time.append(time)
            entries.src.append(src)
            entries.offset.append(spool_base + span.data_start)
            entries.length.append(span.data_end - span.data_start)
            entries.template.append(template)
            if entries.full():
                entries.flush()
                _drop(data)  # bounded RSS through a large chunk
            pos = span.data_end
        return pos

    def matching(
        self,
        data: BagBytes,
        pos: int,
        end: int,
        plan: ChunkPlan,
        src: int,
        spool_base: int,
        template: Template,
    ) -> int:
        """Take the whole message records from `pos` on whose header is `template` with its
        values (checked for a batch at once with numpy); returns where the first other
        record starts."""
        unpack = _U32.unpack_from
        length = template.length
        number = self.templates.last_id
        columns = template.columns()
        while True:
            starts: list[int] = []
            ends: list[int] = []
            heads: list[bytes] = []
            at = pos
            while at + 4 <= end and len(starts) < _BATCH:
                if unpack(data, at)[0] != length:
                    break
                data_at = at + 4 + length
                if data_at + 4 > end:
                    break
                stop = data_at + 4 + unpack(data, data_at)[0]
                if stop > end:
                    break
                starts.append(at)
                ends.append(stop)
                heads.append(data[at + 4 : data_at])
                at = stop
            count = len(starts)
            if not count:
                return pos
            found = template.read_all(b"".join(heads), count, columns)
            taken = len(found[0])
            if taken:
                first = np.asarray(starts[:taken], np.int64) + (8 + length)
                self.entries.extend(
                    found[0],
                    found[1],
                    np.full(taken, src, np.int8),
                    first + spool_base,
                    np.asarray(ends[:taken], np.int64) - first,
                    np.full(taken, number, np.int16),
                )
                plan.add_messages(taken)
                if self.entries.full():
                    self.entries.flush()
                    _drop(data)  # bounded RSS through a large chunk
            if taken < count:
                return starts[taken]
            pos = at
            if count < _BATCH:
                return pos

    def cut_chunk(self, pos: int) -> tuple[int, str]:
        """A chunk whose data runs past the end (or an open one, data length 0): convert
        the records that are complete. Returns where the cut tail starts, and why."""
        header_len = _U32.unpack_from(self.buf, pos)[0]
        head_end = pos + 4 + header_len + 4
        if head_end > self.size:
            return pos, "cut: a chunk header is cut"
        fields = parse_fields(self.buf, pos + 4, pos + 4 + header_len, pos)
        kind = (get(fields, b"compression") or b"?").decode("ascii", "replace")
        size_field = get(fields, b"size")
        size = u32(size_field) if size_field is not None and len(size_field) == 4 else 0
        plan = ChunkPlan(RawSegment(pos, head_end), kind, "open", len(self.entries))
        if kind == "none":
            stop = self.records(self.buf, head_end, self.size, plan, FROM_SOURCE, 0, tolerant=True)
            self.segments.append(plan)
            return stop, "cut: the last record of an unfinished chunk"
        # compressed: convert what decompresses; the chunk's bytes are kept as they are
        first = len(self.entries)
        base = self.spool_size
        stored = bytes(self.buf[head_end:])
        self.spool_size += compression.decompress_into(
            kind, stored, size, pos, self.spool, whole=False
        )
        self.spooled(base, ChunkPlan(plan.head, kind, "open"), None)
        found = len(self.entries) - first
        return pos, f"an unfinished {kind} chunk ({found} messages decompressed from it)"


def _drop(buf: Buffer) -> None:
    """Let the kernel drop the pages of a map read so far (they count as resident)."""
    if isinstance(buf, mmap.mmap):
        with contextlib.suppress(OSError, ValueError):
            buf.madvise(mmap.MADV_DONTNEED)


def _in_chunk(damage: list[Region], chunk: int, kind: str, base: int) -> list[Region]:
    """Damaged stretches of a chunk's records as file regions (a compressed chunk's: the
    whole chunk, naming the position in its data)."""
    if kind == "none":
        return [
            Region(
                r.offset,
                r.length,
                f"a record in the chunk at byte {chunk} does not parse, "
                f"{r.length} bytes skipped: {r.reason}",
            )
            for r in damage
        ]
    return [
        Region(
            chunk,
            0,
            f"the record at byte {r.offset - base} of the {kind} chunk's data does not parse, "
            f"{r.length} bytes skipped: {r.reason}",
        )
        for r in damage
    ]


def op_is_chunk(buf: Buffer, pos: int) -> bool:
    """Whether the cut record at `pos` is a chunk (its header, at least, is whole)."""
    if pos + 4 > len(buf):
        return False
    header_len = _U32.unpack_from(buf, pos)[0]
    if header_len > 4096 or pos + 4 + header_len > len(buf):
        return False
    try:
        fields = parse_fields(buf, pos + 4, pos + 4 + header_len, pos)
        return op_of(fields, pos) == OP_CHUNK
    except FormatError:
        return False


def _index_pos(fields: Fields) -> int:
    for name, value in fields:
        if name == b"index_pos" and len(value) == 8:
            return int.from_bytes(value, "little")
    return 0


def walk(
    buf: BagBytes,
    spool: IO[bytes],
    rows: IO[bytes],
    progress: Callable[[int], None] | None = None,
) -> Scan:
    """Walk the bag in `buf` (an mmap or bytes); decompressed chunk data goes to `spool`,
    the message entries (`ROW`) to `rows`."""
    scan = _Walker(buf, spool, rows, progress).walk()
    scan.entries.flush()
    return scan
