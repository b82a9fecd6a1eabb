"""ROS bag -> nanorec archive, and back byte for byte.

One archive message per message record, in time order (ties: file order), keyed by its
topic: `{topic: {"conn", "sec", "nsec", "data"}}` with `data` the ROS-serialized payload as
it is in the bag; the first message of each connection also holds its record as
`"connection"` (`Connection.pack`), so the messages of a killed conversion still say what
they are (`adopt.py`). The side member `rosbag.msgpack.zlib` holds what the bag's structure needs
(connections, chunk layout, header field orders, per message conn and time in ns) and
`rosbag-raw.bin` the bytes written back as they are (bag header, index section, chunks that
do not recompress identically, a crashed bag's cut tail).
"""

from __future__ import annotations

import contextlib
import itertools
import mmap
import os
import tempfile
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any, Final

import msgpack
import numpy as np
from numpy.typing import NDArray

from nanorec.archive.filehash import FileHash
from nanorec.archive.wire import MAX_INFLATE_RATIO, timestamp_entry
from nanorec.archive.writer import ArchiveWriter
from nanorec.buffers import Buffer
from nanorec.contract import ConvertReport
from nanorec.errors import OutputExistsError

from .plan import ROW, RawSegment, Scan
from .records import BagBytes
from .scan import walk

SOURCE_FORMAT: Final = "rosbag"
META_MEMBER: Final = "rosbag.msgpack.zlib"
RAW_MEMBER: Final = "rosbag-raw.bin"
META_VERSION: Final = 2
TIME_MEMBER: Final = "rosbag-time.bin"
CONN_MEMBER: Final = "rosbag-conn.bin"
TEMPLATE_MEMBER: Final = "rosbag-template.bin"
RANK_MEMBER: Final = "rosbag-rank.bin"
_BLOCK: Final = 1 << 16
_RELEASE_BYTES: Final = 16 << 20
#: Runs whose payloads average this many bytes or more are lent to the writer as pieces
#: (`ArchiveWriter.write_lent_run`): a 640x480 image is not copied; a small message is
#: joined, as one piece is cheaper to write and check than four.
_LEND_FROM: Final = 4096
#: A column member up to this size is given whole to the writer (which stores it when its
#: deflated form would look like a zip bomb); a larger one is streamed.
_WHOLE_COLUMN: Final = 32 << 20
_SAMPLE_COLUMN: Final = 4 << 20
#: A message's packed map from its sec value on: `{topic: {"conn": c, "sec": s, "nsec": n,
#: "data": d}}` with the ints and the bin length at full width (valid msgpack, one layout for
#: every message: made for a run at once with numpy); `_head` is the part before.
_TAIL: Final = np.dtype(
    [("sec", ">u4"), ("nsec_key", "S6"), ("nsec", ">u4"), ("data_key", "S6"), ("length", ">u4")]
)
_NSEC_KEY: Final = b"\xa4nsec\xce"
_DATA_KEY: Final = b"\xa4data\xc6"


def _head(conn: int, topic: str) -> bytes:
    """Up to the sec value, in the stored form: the map's count includes the `"nanorec.t"`
    entry appended after the topic's value (`ArchiveWriter.write_stored_run`)."""
    return b"\x82" + msgpack.packb(topic) + b"\x84\xa4conn" + msgpack.packb(conn) + b"\xa3sec\xce"


def convert(
    source: Path,
    output: Path,
    *,
    overwrite: bool = False,
    progress: Callable[[int], None] | None = None,
) -> ConvertReport:
    """Convert the bag `source` into a new archive `output` (see the module docstring);
    `progress(n)` gets the bytes of the bag done, last its size."""
    if output.exists() and not overwrite:
        raise OutputExistsError(f"{output} exists; pass overwrite=True to replace it")
    with contextlib.ExitStack() as stack:
        handle = stack.enter_context(source.open("rb"))
        size = os.fstat(handle.fileno()).st_size
        buf: BagBytes = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) if size else b""
        if isinstance(buf, mmap.mmap):
            stack.callback(_close, buf)

        def temporary(prefix: str) -> IO[bytes]:
            return stack.enter_context(
                tempfile.TemporaryFile(dir=output.parent, prefix=f".nanorec-{prefix}-")
            )

        spool, rows = temporary("spool"), temporary("rows")
        # hashed from the start, beside the walk: on a bag of large messages the hash takes
        # about as long as the rest of the conversion
        hashing = FileHash(source, size)
        stack.callback(hashing.close)  # (a failed conversion leaves no thread behind)
        scan = walk(buf, spool, rows, progress)
        spooled, table = _map(spool), _map(rows)
        for mapped in (spooled, table):
            if isinstance(mapped, mmap.mmap):
                stack.callback(_close, mapped)
        report = _write(buf, spooled, table, scan, source, output, overwrite, temporary, hashing)
    if progress is not None:  # a cut bag's walk stops short of its size
        progress(report.source_size)
    return report


def _map(file: IO[bytes]) -> BagBytes:
    file.flush()
    return mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) if file.tell() else b""


def _close(buf: mmap.mmap) -> None:
    with contextlib.suppress(BufferError):  # views still alive in a traceback
        buf.close()


def _write(
    buf: Buffer,
    spool: Buffer,
    table: Buffer,
    scan: Scan,
    source: Path,
    output: Path,
    overwrite: bool,
    temporary: Callable[[str], IO[bytes]],
    hashing: FileHash,
) -> ConvertReport:
    count = len(scan.entries)
    rows = np.frombuffer(table, ROW) if count else np.zeros(0, ROW)
    # the sort: the only step holding one value per message (int64 times, then the order)
    times = np.empty(count, np.int64)
    for start in range(0, count, 1 << 20):  # read the column, dropping the pages read
        times[start : start + (1 << 20)] = rows["time"][start : start + (1 << 20)]
        _release(table)
    index = np.uint32 if count < 2**32 else np.int64
    order = np.argsort(times, kind="stable").astype(index)  # ties stay in file order
    del times
    rank = np.empty(count, index)
    for start in range(0, count, _BLOCK):
        rank[order[start : start + _BLOCK]] = np.arange(start, min(start + _BLOCK, count))
    topics = {c.id: c.topic for c in scan.connections.values()}
    columns = {name: temporary(name) for name in (TIME_MEMBER, CONN_MEMBER, TEMPLATE_MEMBER)}
    with ArchiveWriter(
        output,
        overwrite=overwrite,
        source_format=SOURCE_FORMAT,
        source={
            "name": source.name,
            "size": len(buf),
            "topics": {c.topic: c.type for c in scan.connections.values()},
        },
    ) as writer:
        packer = msgpack.Packer()
        views = (memoryview(buf), memoryview(spool))
        released = 0
        settled: set[int] = set()  # connections whose record a message holds
        heads: dict[int, bytes] = {}  # by connection: the packed map up to the sec value
        kinds: dict[int, tuple[str]] = {}
        join = b"".join
        entry = timestamp_entry
        for start in range(0, count, _BLOCK):
            block = rows[order[start : start + _BLOCK]]
            columns[TIME_MEMBER].write(block["time"].astype("<i8").tobytes())
            columns[CONN_MEMBER].write(block["conn"].astype("<u4").tobytes())
            columns[TEMPLATE_MEMBER].write(block["template"].astype("<i2").tobytes())
            # runs of up to _RELEASE_BYTES of payload: bounded RSS, pages dropped after each
            ends = np.cumsum(block["length"], dtype=np.int64)
            cuts = [0]
            while cuts[-1] < len(block):
                base = int(ends[cuts[-1] - 1]) if cuts[-1] else 0
                at = int(np.searchsorted(ends, base + _RELEASE_BYTES, "right"))
                cuts.append(max(at, cuts[-1] + 1))
            for first, stop in itertools.pairwise(cuts):
                run = block[first:stop]
                conns = run["conn"].tolist()
                times = run["time"]
                tails = np.empty(len(run), _TAIL)
                tails["sec"], tails["nsec"] = np.divmod(times, 1_000_000_000)
                tails["nsec_key"] = _NSEC_KEY
                tails["data_key"] = _DATA_KEY
                tails["length"] = run["length"]
                blob = memoryview(tails.tobytes())
                unique = set(conns)
                for conn in unique.difference(heads):
                    topic = topics.get(conn, f"conn:{conn}")
                    heads[conn], kinds[conn] = _head(conn, topic), (topic,)
                    if conn not in scan.connections:
                        settled.add(conn)  # no record to announce it with
                step = _TAIL.itemsize
                offsets, lengths = run["offset"].tolist(), run["length"].tolist()
                srcs = run["src"]
                stamps = (times // 1000).tolist()
                entries = [entry(t) for t in stamps]
                lent: list[tuple[bytes | memoryview, ...]] = []
                if unique <= settled and (srcs == srcs[0]).all():  # the common case
                    view = views[int(srcs[0])]
                    # each message's pieces: head, tail, payload, timestamp entry; large
                    # payloads lent to the writer until its flush, never copied; small
                    # messages each joined, one piece to write and check
                    pieces = (
                        (heads[c], blob[k : k + step], view[o : o + n], e)
                        for c, k, o, n, e in zip(
                            conns,
                            range(0, step * len(conns), step),
                            offsets,
                            lengths,
                            entries,
                            strict=True,
                        )
                    )
                    if len(run) * _LEND_FROM <= sum(lengths):
                        lent, packed = list(pieces), []
                    else:
                        packed = list(map(join, pieces))
                else:
                    packed = []
                    at = 0
                    for conn, src, offset, length in zip(
                        conns, srcs.tolist(), offsets, lengths, strict=True
                    ):
                        data = views[src][offset : offset + length]
                        if conn not in settled:  # its first message holds its record
                            settled.add(conn)
                            sec, nsec = divmod(int(times[len(packed)]), 1_000_000_000)
                            value = {"conn": conn, "sec": sec, "nsec": nsec}
                            value["connection"] = scan.connections[conn].pack()
                            value["data"] = data
                            one = packer.pack({kinds[conn][0]: value})  # a fixmap of 1
                            packed.append(join((b"\x82", one[1:], entries[len(packed)])))
                        else:
                            packed.append(
                                join((heads[conn], blob[at : at + step], data, entries[at // step]))
                            )
                        at += step
                kind = [kinds[c] for c in conns]
                if lent:
                    writer.write_lent_run(lent, types=kind, timestamps_us=stamps)
                else:
                    writer.write_stored_run(packed, types=kind, timestamps_us=stamps)
                released += int(run["length"].sum()) + 64 * len(run)
                if released > _RELEASE_BYTES:  # bounded RSS: drop the pages read so far
                    writer.flush()
                    _release(buf, spool, table)
                    released = 0
        del views, rows
        # no payload view may outlive the loop: the maps are closed after it
        view = data = memoryview(b"")
        value = {}
        raw = temporary("raw")
        meta = _meta(buf, scan, raw)
        sha = writer.source["sha256"] = hashing.hexdigest()
        writer.add_meta(META_MEMBER, meta)
        writer.add_member(RAW_MEMBER, _blocks(raw))
        for name, file in columns.items():
            _add_column(writer, name, file)
        writer.add_member(RANK_MEMBER, _blocks_of(rank))
    return ConvertReport(
        source,
        output,
        SOURCE_FORMAT,
        count,
        len(buf),
        output.stat().st_size,
        sha,
        scan.cut,
        scan.damaged,
        details={
            "chunks": len(scan.chunk_stats),
            "kept_chunks": scan.kept_chunks,
            "unindexed": scan.unindexed,
        },
    )


def _blocks(file: IO[bytes]) -> Iterator[bytes]:
    """A temporary file's bytes from the start, 1 MiB at a time (a streamed member)."""
    file.flush()
    file.seek(0)
    while block := file.read(1 << 20):
        yield block


def _add_column(writer: ArchiveWriter, name: str, file: IO[bytes]) -> None:
    """A per-message column member. Deflated unless so redundant (one header template for
    every message) that a reader would refuse it as a zip bomb: the writer checks that for a
    member given whole; a large one is streamed, stored when its first MiBs deflate more
    than half that much."""
    file.flush()
    size = file.tell()
    if size <= _WHOLE_COLUMN:
        file.seek(0)
        writer.add_member(name, file.read())
        return
    file.seek(0)
    sample = file.read(_SAMPLE_COLUMN)
    deflated = len(zlib.compress(sample, 1))
    redundant = len(sample) > MAX_INFLATE_RATIO // 2 * deflated
    writer.add_member(name, _blocks(file), compress=None if not redundant else False)


def _blocks_of(values: NDArray[Any]) -> Iterator[bytes]:
    for start in range(0, len(values), 1 << 18):
        yield values[start : start + (1 << 18)].astype(values.dtype.newbyteorder("<")).tobytes()


def _release(*buffers: Buffer) -> None:
    for buf in buffers:
        if isinstance(buf, mmap.mmap):
            with contextlib.suppress(OSError, ValueError):
                buf.madvise(mmap.MADV_DONTNEED)


def _meta(buf: Buffer, scan: Scan, raw: IO[bytes]) -> dict[str, Any]:
    """The layout member; the bytes kept as they are go to `raw` (the raw member)."""

    read = 0

    def keep(data: Buffer, begin: int = 0, end: int | None = None) -> list[int]:
        """Append `data[begin:end]` (a block at a time, dropping the source pages read: the
        index section of a big bag is large)."""
        nonlocal read
        start = raw.tell()
        end = len(data) if end is None else end
        for block in range(begin, end, _RELEASE_BYTES):
            raw.write(data[block : min(block + _RELEASE_BYTES, end)])
            read += min(_RELEASE_BYTES, end - block)
            if read > _RELEASE_BYTES:
                _release(data)
                read = 0
        return [start, end - begin]

    segments: list[Any] = []
    for segment in [*scan.segments, RawSegment(scan.tail_start, len(buf))]:
        if isinstance(segment, RawSegment):
            if segment.end > segment.start:
                segments.append(["raw", *keep(buf, segment.start, segment.end)])
            continue
        segments.append(
            [
                "chunk",
                keep(buf, segment.head.start, segment.head.end),
                segment.compression,
                segment.mode,
                segment.first,
                np.asarray(segment.runs, dtype="<i8").tobytes(),
                [keep(record) for record in segment.inner],
            ]
        )
    return {
        "version": META_VERSION,
        "connections": [c.pack() for c in sorted(scan.connections.values(), key=lambda c: c.id)],
        "orders": scan.templates.orders(),
        "segments": segments,
        "headers": scan.entries.headers,  # by file-order entry
        "rank": "<u4" if len(scan.entries) < 2**32 else "<i8",
        "chunks": [list(c) for c in scan.chunk_stats],
        "bag_header": None if scan.bag_header is None else [list(f) for f in scan.bag_header],
        "unindexed": scan.unindexed,
        "kept_chunks": scan.kept_chunks,
        "cut": None if scan.cut is None else [scan.cut.offset, scan.cut.length, scan.cut.reason],
    }
