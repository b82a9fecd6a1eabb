"""Read a bag's own index section, as `rosbag info` does: the bag header's `index_pos`, the
connection and chunk info records there, each chunk's header, and (for `--freq`) the index
data records after each chunk. Nothing is decompressed, so this costs little on any size;
the record headers of uncompressed chunks are walked, so that damage inside one is reported
(`BagIndex.damaged`) rather than hidden behind an intact index.

`read_index` raises `NanorecError` when the bag has no index (a crashed writer's) or the
index does not hold together; callers then scan the bag instead (`scan.py`).
"""

from __future__ import annotations

import mmap
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from nanorec.buffers import Buffer
from nanorec.errors import FormatError, NanorecError

from .connection import Connection
from .records import (
    OP_BAG_HEADER,
    OP_CHUNK,
    OP_CHUNK_INFO,
    OP_CONNECTION,
    OP_INDEX,
    VERSION_LINE,
    Fields,
    Span,
    get,
    need,
    op_of,
    parse_fields,
    span_at,
    time_ns,
    u32,
    u64,
)
from .scan import check_version
from .template import Template

_ENTRY = np.dtype([("sec", "<u4"), ("nsec", "<u4"), ("offset", "<u4")])
_PAIR = np.dtype([("conn", "<u4"), ("count", "<u4")])


@dataclass
class ChunkInfo:
    position: int
    start_ns: int
    end_ns: int
    counts: dict[int, int]
    compression: str = "none"
    size: int = 0
    stored: int = 0


@dataclass
class BagIndex:
    size: int
    connections: dict[int, Connection]
    chunks: list[ChunkInfo]
    #: Per connection, its messages' times in ns as the index lists them, chunk after chunk
    #: (read only when asked: `--freq`).
    times: dict[int, NDArray[np.int64]] = field(default_factory=dict)
    #: What is damaged inside the chunks (uncompressed ones: their records are walked).
    damaged: list[str] = field(default_factory=list)


def read_index(path: Path, *, entries: bool = False) -> BagIndex:
    with path.open("rb") as handle:
        size = path.stat().st_size
        if size < len(VERSION_LINE):
            check_version(handle.read())
        with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as buf:
            try:
                return _read(buf, size, entries)
            except NanorecError as error:
                # its traceback's frames hold numpy views of `buf`, which must close first
                failure = error.with_traceback(None)
    raise failure


def _fields(buf: Buffer, pos: int, size: int, op: int) -> tuple[Span, Fields]:
    span = span_at(buf, pos, size)
    fields = parse_fields(buf, span.header_start, span.header_end, pos)
    if op_of(fields, pos) != op:
        raise FormatError(f"expected a record of op {op:#04x}", offset=pos)
    return span, fields


def _read(buf: Buffer, size: int, entries: bool) -> BagIndex:
    check_version(buf)
    span, header = _fields(buf, len(VERSION_LINE), size, OP_BAG_HEADER)
    index_pos = u64(need(header, b"index_pos", 8, span.start))
    conn_count = u32(need(header, b"conn_count", 4, span.start))
    chunk_count = u32(need(header, b"chunk_count", 4, span.start))
    if index_pos == 0:
        raise FormatError("the bag is unindexed (its writer did not close it)", offset=span.start)
    if not span.data_end <= index_pos <= size or conn_count + chunk_count > size // 8:
        raise FormatError(f"the bag header's index position {index_pos} is outside the file")
    connections: dict[int, Connection] = {}
    pos = index_pos
    for _ in range(conn_count):
        span, fields = _fields(buf, pos, size, OP_CONNECTION)
        conn = Connection.parse(fields, bytes(buf[span.data_start : span.data_end]), pos)
        connections[conn.id] = conn
        pos = span.data_end
    chunks = []
    for _ in range(chunk_count):
        span, fields = _fields(buf, pos, size, OP_CHUNK_INFO)
        pairs = np.frombuffer(buf, _PAIR, (span.data_end - span.data_start) // 8, span.data_start)
        chunks.append(
            ChunkInfo(
                u64(need(fields, b"chunk_pos", 8, pos)),
                time_ns(need(fields, b"start_time", 8, pos)),
                time_ns(need(fields, b"end_time", 8, pos)),
                dict(zip(pairs["conn"].tolist(), pairs["count"].tolist(), strict=True)),
            )
        )
        pos = span.data_end
    times: dict[int, list[NDArray[np.int64]]] = {}
    damaged = []
    for chunk in chunks:
        span, fields = _fields(buf, chunk.position, size, OP_CHUNK)
        chunk.compression = (get(fields, b"compression") or b"").decode("ascii", "replace")
        chunk.size = u32(need(fields, b"size", 4, span.start))
        chunk.stored = span.data_end - span.data_start
        chunk_span = span
        pos = span.data_end
        offsets: list[NDArray[np.int64]] = []
        indexed = True  # the index data records after the chunk all read
        for _ in range(len(chunk.counts)):
            try:
                span, fields = _fields(buf, pos, size, OP_INDEX)
                count = u32(need(fields, b"count", 4, pos))
                if count * 12 > span.data_end - span.data_start:
                    raise FormatError(
                        "an index data record holds fewer entries than it says", offset=pos
                    )
            except NanorecError:
                if entries:  # --freq needs them: the bag is scanned instead
                    raise
                indexed = False  # the chunk's records are walked one by one
                break
            rows = np.frombuffer(buf, _ENTRY, count, span.data_start)
            offsets.append(rows["offset"].astype(np.int64))
            if entries:
                stamps = rows["sec"].astype(np.int64) * 1_000_000_000 + rows["nsec"]
                times.setdefault(u32(need(fields, b"conn", 4, pos)), []).append(stamps)
            pos = span.data_end
        if chunk.compression == "none":
            found = np.concatenate([np.zeros(0, np.int64), *offsets]) if indexed else None
            if problem := _damage(buf, chunk_span, found):
                damaged.append(problem)
    return BagIndex(
        size,
        connections,
        chunks,
        {conn: np.concatenate(parts) for conn, parts in times.items()},  # ROS's order
        damaged,
    )


def _damage(buf: Buffer, chunk: Span, offsets: NDArray[np.int64] | None = None) -> str | None:
    """The first record of an uncompressed chunk that does not parse, described; None when
    they all do. With the chunk's index `offsets` (its message records), the message
    records shaped like the first one are checked all at once with numpy (lengths, header
    bytes, each ending where the next begins); only the bytes between them are walked
    record by record, so a bag of millions of small messages is checked in milliseconds."""
    start, end = chunk.data_start, chunk.data_end
    checked = None if offsets is None else _checked_messages(buf, start, end, offsets)
    if checked is None:
        return _walk(buf, chunk, start, end)
    starts, ends = checked
    if len(starts) and bool((ends[:-1] > starts[1:]).any()):  # records overlapping: walk all
        return _walk(buf, chunk, start, end)
    gap_from = np.concatenate([[0], ends]) + start
    gap_to = np.concatenate([starts, [end - start]]) + start
    for lo, hi in zip(*(a[gap_from < gap_to].tolist() for a in (gap_from, gap_to)), strict=True):
        if problem := _walk(buf, chunk, lo, hi):
            return problem
    return None


def _walk(buf: Buffer, chunk: Span, pos: int, stop: int) -> str | None:
    """The first record in `pos:stop` of the chunk that does not parse or runs past `stop`."""
    while pos < stop:
        try:
            span = span_at(buf, pos, chunk.data_end)
            op_of(parse_fields(buf, span.header_start, span.header_end, pos), pos)
            if span.data_end > stop:
                raise FormatError("it runs over the next message record", offset=pos)
        except NanorecError as error:
            return (
                f"damaged: the record at byte {pos} in the chunk at byte {chunk.start} does "
                f"not parse ({error.message}); converting the bag keeps the messages around it"
            )
        pos = span.data_end
    return None


def _checked_messages(
    buf: Buffer, start: int, end: int, offsets: NDArray[np.int64]
) -> tuple[NDArray[np.int64], NDArray[np.int64]] | None:
    """(starts, ends) in the chunk of the message records at `offsets` whose header is the
    first one's layout with its values and whose lengths stay inside the chunk, in order;
    None when the first record is not such a message (the caller walks everything)."""
    offsets = np.unique(offsets)
    size = end - start
    if not len(offsets) or offsets[0] < 0 or offsets[-1] + 8 > size:
        return None
    try:
        span = span_at(buf, start + int(offsets[0]), end)
        fields = parse_fields(buf, span.header_start, span.header_end, span.start)
        template = Template(tuple(name for name, _ in fields))
    except (NanorecError, KeyError):
        return None
    data = np.frombuffer(buf, np.uint8, size, start)
    length = template.length
    heads_ok = _u32_at(data, offsets) == length
    usable = offsets[heads_ok & (offsets + 8 + length <= size)]
    positions, constant = template.columns()
    table = data[(usable + 4)[:, None] + positions[None, :]]
    usable = usable[(table == constant).all(axis=1)]
    ends = usable + 8 + length + _u32_at(data, usable + 4 + length)
    inside = ends <= size
    return usable[inside], ends[inside]


def _u32_at(data: NDArray[np.uint8], at: NDArray[np.int64]) -> NDArray[np.int64]:
    """The little-endian uint32 at each of `at` in `data` (every `at + 4 <= len(data)`)."""
    b = data[at[:, None] + np.arange(4)].astype(np.int64)
    value: NDArray[np.int64] = b[:, 0] | (b[:, 1] << 8) | (b[:, 2] << 16) | (b[:, 3] << 24)
    return value
