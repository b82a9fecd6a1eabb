"""ROS bag -> nanorec archive, and back byte for byte.

One archive message per message record, in time order (ties: file order), keyed by its
topic: `{topic: {"conn", "sec", "nsec", "data"}}` with `data` the ROS-serialized payload as
it is in the bag. The side member `rosbag.msgpack.zlib` holds what the bag's structure needs
(connections, chunk layout, header field orders, per message conn and time in ns) and
`rosbag-raw.bin` the bytes written back as they are (bag header, index section, chunks that
do not recompress identically, a crashed bag's cut tail).
"""

from __future__ import annotations

import contextlib
import hashlib
import mmap
import os
import tempfile
import threading
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import msgpack
import numpy as np

from nanorec.contract import Region
from nanorec.errors import OutputExistsError
from nanorec.writer import ArchiveWriter

from .scan import RawSegment, Scan, walk

SOURCE_FORMAT: Final = "rosbag"
META_MEMBER: Final = "rosbag.msgpack.zlib"
RAW_MEMBER: Final = "rosbag-raw.bin"
META_VERSION: Final = 1
_RELEASE_BYTES: Final = 16 << 20


@dataclass
class Converted:
    source: Path
    output: Path
    messages: int
    source_size: int
    archive_size: int
    sha256: str
    cut: Region | None
    damaged: list[Region] = field(default_factory=list)
    kept_chunks: int = 0
    chunks: int = 0
    unindexed: bool = False


def convert(
    source: Path,
    output: Path,
    *,
    overwrite: bool = False,
    progress: Callable[[int], None] | None = None,
) -> Converted:
    """Convert the bag `source` into a new archive `output` (see the module docstring)."""
    if output.exists() and not overwrite:
        raise OutputExistsError(f"{output} exists (use --force to overwrite it)")
    with source.open("rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        buf: Any = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) if size else b""
        try:
            with tempfile.TemporaryFile(dir=output.parent, prefix=".nanorec-spool-") as spool:
                scan = walk(buf, spool, progress)
                spool.flush()
                spooled: Any = (
                    mmap.mmap(spool.fileno(), 0, access=mmap.ACCESS_READ) if spool.tell() else b""
                )
                try:
                    return _write(buf, spooled, scan, source, output, overwrite)
                finally:
                    if isinstance(spooled, mmap.mmap):
                        spooled.close()
        finally:
            if isinstance(buf, mmap.mmap):
                with contextlib.suppress(BufferError):
                    buf.close()


def _write(
    buf: Any, spool: Any, scan: Scan, source: Path, output: Path, overwrite: bool
) -> Converted:
    entries = scan.entries
    count = len(entries)
    times = np.frombuffer(entries.time, dtype=np.int64) if count else np.zeros(0, np.int64)
    order = np.lexsort((np.arange(count), times))  # archive number -> file-order entry
    rank = np.empty(count, dtype=np.int64)
    rank[order] = np.arange(count)
    conns = np.frombuffer(entries.conn, dtype=np.uint32) if count else np.zeros(0, np.uint32)
    topics = {c.id: c.topic for c in scan.connections.values()}
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
        hashing = _Sha256(source)
        packer = msgpack.Packer()
        views = (memoryview(buf), memoryview(spool))
        src = entries.src
        offset = entries.offset
        length = entries.length
        released = 0
        value: dict[str, Any] = {}
        for entry in _iter_ints(order):
            conn = entries.conn[entry]
            topic = topics.get(conn, f"conn:{conn}")
            sec, nsec = divmod(entries.time[entry], 1_000_000_000)
            start = offset[entry]
            value = {"conn": conn, "sec": sec, "nsec": nsec}
            value["data"] = views[src[entry]][start : start + length[entry]]
            writer.write_packed(
                packer.pack({topic: value}),
                types=(topic,),
                timestamp_us=entries.time[entry] // 1000,
            )
            released += length[entry] + 64  # with the record's header, roughly
            if released > _RELEASE_BYTES:  # bounded RSS: drop the pages read so far
                writer.flush()
                _release(buf, spool)
                released = 0
        del views, value
        raw = bytearray()
        meta = _meta(buf, scan, rank, order, conns, times, raw)
        sha = writer.source["sha256"] = hashing.result()
        writer.add_member(META_MEMBER, zlib.compress(msgpack.packb(meta), 6))
        writer.add_member(RAW_MEMBER, bytes(raw))
    return Converted(
        source,
        output,
        count,
        len(buf),
        output.stat().st_size,
        sha,
        scan.cut,
        scan.damaged,
        scan.kept_chunks,
        len(scan.chunk_stats),
        scan.unindexed,
    )


class _Sha256(threading.Thread):
    """The source's sha256, computed beside the conversion (hashlib releases the GIL) from
    plain reads, so it neither waits for the walk nor holds the file's pages in memory."""

    def __init__(self, path: Path) -> None:
        super().__init__(daemon=True)
        self.path = path
        self.digest = hashlib.sha256()
        self.error: OSError | None = None
        self.start()

    def run(self) -> None:
        try:
            with self.path.open("rb", buffering=0) as handle:
                block = bytearray(8 << 20)
                view = memoryview(block)
                while size := handle.readinto(block):
                    self.digest.update(view[:size])
        except OSError as error:
            self.error = error

    def result(self) -> str:
        self.join()
        if self.error is not None:
            raise self.error
        return self.digest.hexdigest()


def _iter_ints(values: Any) -> Any:
    """The ints of a numpy array, a block at a time (no list of millions of ints)."""
    for start in range(0, len(values), 1 << 16):
        yield from values[start : start + (1 << 16)].tolist()


def _release(*buffers: Any) -> None:
    for buf in buffers:
        if isinstance(buf, mmap.mmap):
            with contextlib.suppress(OSError, ValueError):
                buf.madvise(mmap.MADV_DONTNEED)


def _meta(
    buf: Any,
    scan: Scan,
    rank: Any,
    order: Any,
    conns: Any,
    times: Any,
    raw: bytearray,
) -> dict[str, Any]:
    def keep(data: Any) -> list[int]:
        start = len(raw)
        raw.extend(data)
        return [start, len(raw) - start]

    segments: list[Any] = []
    for segment in [*scan.segments, RawSegment(scan.tail_start, len(buf))]:
        if isinstance(segment, RawSegment):
            if segment.end > segment.start:
                segments.append(["raw", *keep(buf[segment.start : segment.end])])
            continue
        items = np.array(segment.items, dtype=np.int64)  # a copy: mapped below
        messages = items >= 0
        items[messages] = rank[items[messages]]
        inner = [
            keep(buf[i.start : i.end] if isinstance(i, RawSegment) else i) for i in segment.inner
        ]
        segments.append(
            [
                "chunk",
                keep(buf[segment.head.start : segment.head.end]),
                segment.compression,
                segment.mode,
                items.tobytes(),
                inner,
            ]
        )
    template = np.array(scan.entries.template, dtype=np.int16)[order]
    return {
        "version": META_VERSION,
        "connections": [c.pack() for c in sorted(scan.connections.values(), key=lambda c: c.id)],
        "orders": scan.templates.orders(),
        "segments": segments,
        "template": template.tobytes(),
        "headers": {int(rank[k]): v for k, v in scan.entries.headers.items()},
        "conn": conns[order].tobytes(),
        "time": times[order].tobytes(),
        "chunks": [list(c) for c in scan.chunk_stats],
        "bag_header": None if scan.bag_header is None else [list(f) for f in scan.bag_header],
        "unindexed": scan.unindexed,
        "kept_chunks": scan.kept_chunks,
        "cut": None if scan.cut is None else [scan.cut.offset, scan.cut.length, scan.cut.reason],
    }
