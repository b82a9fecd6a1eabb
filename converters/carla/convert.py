"""CARLA recorder file <-> nanorec archive, byte for byte.

`convert` writes one archive message per complete CARLA frame (see `message.py`),
stamped with the frame's elapsed time in integer microseconds. Frames in which actors
appear, disappear or change parent also carry a NanoVer `state` change keyed
`actor.<id>` (and `parent.<id>`), so NanoVer's own `iter_states_full` yields the live
actor registry. Two
side members make the archive self-sufficient:

- `carla.msgpack.zlib`: the header (its exact bytes and decoded fields), the release family,
  the frame keys with their kinds and dtypes, and every byte that is not part of a
  complete frame (a prelude before the first FrameStart, the tail of a crashed
  recording);
- `carla-world.msgpack.zlib`: the event tables that make seeking O(1) (`world.py`).

`export` writes the native file back from the archive, byte for byte.
"""

from __future__ import annotations

import contextlib
import mmap
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgpack

from nanorec.archive.filehash import FileHash
from nanorec.archive.writer import ArchiveWriter
from nanorec.contract import ConvertReport, Region
from nanorec.contract import ExportReport as ExportReport  # `export`'s, from here too
from nanorec.errors import OutputExistsError
from nanorec.gcpause import paused_gc
from nanorec.untyped import JsonObject

from .detect import Detection, resolve

# `export`, `read_meta` and the rest of the archive side are imported from here too.
from .emit import STATE_FLAG as STATE_FLAG
from .emit import first_head, write_frame, write_rows
from .export import export as export
from .export import iter_native as iter_native
from .export import native_file as native_file
from .frames import Frame, FrameMaps, Run, iter_frames
from .header import Header
from .ids import Family
from .meta import (
    META_MEMBER,
    WORLD_MEMBER,
    archive_meta,
)
from .meta import read_meta as read_meta
from .runs import fast_rows
from .source import FileBytes, frame_head, resync
from .walk import Packets, Truncation
from .world_tables import WorldTablesBuilder

SOURCE_FORMAT = "carla"
FRAME_START_ID = 0  # the same in every release (spec §4)
FRAME_END_ID = 1
_RELEASE_BYTES = 32 << 20  # give back converted source pages every 32 MiB
#: Sources below this deflate their archive in the converting thread, with one compressor
#: (`ArchiveWriter(fast_blocks=True)`): a small log's few blocks cost more to hand over, set
#: up and sample than to deflate.
_SMALL_BYTES = 4 << 20


def convert(
    source: str | os.PathLike[str],
    output: str | os.PathLike[str] | None = None,
    *,
    family: str | Family | None = None,
    overwrite: bool = False,
    progress: Callable[[int], None] | None = None,
) -> ConvertReport:
    """Convert a CARLA recorder file into a nanorec archive (default `<source>.nanover.zip`).

    `family` forces a release family (a name from `ids.FAMILIES`); by default it is
    detected from the data. `progress(n)` is called now and then with the number of
    source bytes done, last with the source's size. Every complete frame becomes a message;
    the bytes of an incomplete last frame are kept verbatim so that `export` gives the file
    back. The report is the contract's: `details` holds the family and the packets kept raw
    (`carla_details`).
    Raises `BadMagicError`/`TruncatedError` for a file that is not a CARLA recording,
    `UnsupportedError` for an unknown family name, and `OutputExistsError` when the output
    exists and `overwrite` is false.
    """
    source = Path(source)
    out = Path(output) if output is not None else source.with_name(source.name + ".nanover.zip")
    if out.exists() and not overwrite:
        raise OutputExistsError(f"{out} exists; pass overwrite=True to replace it")
    with source.open("rb") as handle, paused_gc():
        size = os.fstat(handle.fileno()).st_size
        buf: FileBytes = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) if size else b""
        try:
            return _convert(buf, source, out, family, overwrite, progress)
        finally:
            if isinstance(buf, mmap.mmap):
                with contextlib.suppress(BufferError):  # views still alive in a traceback
                    buf.close()


def _convert(
    buf: FileBytes,
    source: Path,
    out: Path,
    family: str | Family | None,
    overwrite: bool,
    progress: Callable[[int], None] | None,
) -> ConvertReport:
    header = Header.parse(buf)
    detection = resolve(buf, header.size, family)
    forced = family.name if isinstance(family, Family) else family
    digest = FileHash(source, len(buf))
    try:
        return _write_archive(
            buf, source, out, header, detection, forced, digest, overwrite, progress
        )
    finally:
        digest.close()


def _write_archive(
    buf: FileBytes,
    source: Path,
    out: Path,
    header: Header,
    detection: Detection,
    forced: str | None,
    digest: FileHash,
    overwrite: bool,
    progress: Callable[[int], None] | None,
) -> ConvertReport:
    fam = detection.family
    small = len(buf) < _SMALL_BYTES
    with ArchiveWriter(
        out,
        overwrite=overwrite,
        source_format=SOURCE_FORMAT,
        source={"name": source.name, "size": len(buf), "family": fam.name},
        deflate_threads=0 if small else None,
        fast_blocks=small,
    ) as writer:
        conversion = _Conversion(buf, writer, header, fam, progress, detection.packets)
        conversion.walk()
        conversion.finish()
        written = writer.message_count
        tail = bytes(buf[conversion.done :])
        sha = digest.hexdigest()
        writer.source["sha256"] = sha
        writer.add_meta(WORLD_MEMBER, conversion.world.to_value())
        writer.add_meta(
            META_MEMBER,
            archive_meta(
                header,
                bytes(buf[: header.size]),
                fam,
                conversion.prelude,
                tail,
                conversion.truncation,
                conversion.encoder.orders,
                [[after, bytes(buf[start:end])] for after, start, end in conversion.damaged],
            ),
        )
    if progress is not None:
        progress(len(buf))
    truncation = conversion.truncation
    return ConvertReport(
        source=source,
        output=out,
        format=SOURCE_FORMAT,
        messages=written,
        source_size=len(buf),
        archive_size=out.stat().st_size,
        sha256=sha,
        cut=None if truncation is None else Region(truncation.offset, len(tail), truncation.reason),
        damaged=[
            Region(start, end - start, "damaged: frames here could not be read (kept verbatim)")
            for _, start, end in conversion.damaged
        ],
        warnings=_forced_warnings(forced, conversion.raw_counts),
        details=carla_details(fam.name, conversion.raw_counts),
    )


def carla_details(family: str, raw_packets: dict[int, int]) -> JsonObject:
    """The report's format facts: the release family read with, and per packet id the
    packets kept verbatim (ids as text: the report is JSON)."""
    return {
        "family": family,
        "raw_packets": {str(k): v for k, v in sorted(raw_packets.items())},
    }


def _forced_warnings(forced: str | None, raw_packets: dict[int, int]) -> list[str]:
    """A forced family that did not fit: packets kept raw say the file is of another one."""
    raw = sum(raw_packets.values())
    if not forced or not raw:
        return []
    return [
        f"family {forced} was forced and {raw} packets did not fit it (kept raw): "
        "the recording is probably of another release (leave --family out to detect it)"
    ]


class _Conversion:
    """The walk over a source's frames into an archive, with the state it carries: how far
    it got, the frame held back until its successor proves it whole, the template of the
    frames written at once, and what is kept raw (prelude, damage, truncation)."""

    def __init__(
        self,
        buf: FileBytes,
        writer: ArchiveWriter,
        header: Header,
        fam: Family,
        progress: Callable[[int], None] | None,
        walked: Packets | None = None,
    ) -> None:
        self.buf = buf
        self.walked = walked  # the packets detection walked, when they are the whole file
        self.writer = writer
        self.header = header
        self.fam = fam
        self.progress = progress
        self.world = WorldTablesBuilder(fam.engine)
        self.packer = msgpack.Packer()
        self.encoder = FrameMaps(fam)
        self.raw_counts: dict[int, int] = {}  # packet id -> packets kept verbatim
        self.prelude = b""  # packets before the first FrameStart
        self.done = header.size  # bytes converted so far
        self.released = 0  # source bytes whose pages were given back
        self.template: dict[str, Any] = {}  # the map the next frames of a run may match
        self.last_time = 0  # µs, of the last frame written
        self.truncation: Truncation | None = None
        self.damaged: list[tuple[int, int, int]] = []  # (frame written before, start, end)
        self.pending: Frame | None = None  # the frame held back until its successor
        self.last_of: Run | None = None  # the run whose last frame `pending` is
        self.previous: int | None = None  # frame id of the last frame written

    def release(self, upto: int) -> None:
        """Drop the source pages already converted from memory (bounded RSS on big files)."""
        buf = self.buf
        if isinstance(buf, mmap.mmap) and upto - self.released >= _RELEASE_BYTES:
            end = upto - upto % mmap.PAGESIZE
            with contextlib.suppress(OSError, ValueError):
                buf.madvise(mmap.MADV_DONTNEED, self.released, end - self.released)
            self.released = end

    def write(self, run: Frame) -> None:
        """Write `run`, one frame, the per-frame way; its map becomes the template."""
        writer, fam = self.writer, self.fam
        first = writer.message_count == 0
        self.last_time, self.template = write_frame(
            writer,
            self.packer,
            self.world,
            self.buf,
            writer.message_count,
            run,
            self.raw_counts,
            self.last_time,
            self.encoder,
            first_head(bytes(self.buf[: self.header.size]), fam, self.prelude) if first else None,
        )
        self.done = run.end
        self.release(self.done)

    def write_whole(self, frame: Frame, of: Run | None) -> None:
        """Write `frame`, proven whole by its successor: the fast way when it is the last
        frame of run `of` and matches the frames before it (`runs.py`)."""
        rows = None
        if of is not None:
            at = of.count - 2  # `template` is its map's, or that of a frame it matched
            index = self.writer.message_count
            rows = fast_rows(
                self.buf,
                of,
                at,
                self.template,
                self.fam,
                self.encoder.orders,
                self.world,
                index,
                self.last_time,
                last=True,
            )
        if rows is None:
            self.write(frame)
            return
        write_rows(self.writer, rows, self.template)
        self.done = frame.end
        self.release(self.done)
        self.last_time = rows.last_time

    def walk(self) -> None:
        """Write every frame proven whole. Hold one run back: only a well-formed FrameStart
        after it proves a run whole, and only at the end is it known whether the last one
        is complete. A run followed by a malformed one, or by a cut mid-file, is damage (a
        broken size field throws the walk off): its bytes are kept verbatim and the walk
        starts again at the next FrameStart that continues the recording, if one follows."""
        position: int | None = self.header.size
        while position is not None:
            resume = self._walk_from(position)
            if resume is not None:
                assert self.pending is not None
                self.damaged.append((self.writer.message_count - 1, self.pending.start, resume))
                self.done = resume
                self.pending = None
            position = resume

    def _walk_from(self, position: int) -> int | None:
        """Walk the frames from `position` until the end or damage; returns where the walk
        starts again after damage, or None."""
        buf, fam, writer, progress = self.buf, self.fam, self.writer, self.progress
        resume: int | None = None
        walked, self.walked = self.walked, None  # the first walk's only
        for run in iter_frames(buf, position, fam, first=walked):
            if isinstance(run, Run):
                item: Frame | Truncation = run.first
            else:
                item = run
            if isinstance(item, Truncation):
                if self.pending is not None and self.previous is not None:
                    resume = resync(buf, self.pending.start + 1, self.previous)
                if resume is None:
                    self.truncation = item
                break
            if item.ids[0] != FRAME_START_ID:  # packets before the first FrameStart
                self.prelude = bytes(buf[item.start : item.end])
                self.done = item.end
                continue
            pending = self.pending
            if pending is not None:
                head = frame_head(buf, pending)
                if head is None or frame_head(buf, item) is None:
                    resume = resync(buf, pending.start + 1, self.previous)
                    if resume is None:
                        self.truncation = Truncation(pending.start, "damaged: no frame follows")
                        self.pending = None
                    break
                self.write_whole(pending, self.last_of)
                self.previous = head
                if progress is not None and writer.message_count % 1024 == 0:
                    progress(self.done)
            self.pending = item
            self.last_of = None
            if not isinstance(run, Run):
                continue
            self._write_run(run)
            self.last_of = run
        return resume

    def _write_run(self, run: Run) -> None:
        """A run: each frame written the per-frame way is the template of the frames after
        it, written at once while they match it (`runs.py`). Every frame is proven whole by
        the next (same layout, so a well-formed FrameStart); the last one waits, like any,
        for what follows the run."""
        buf, writer, progress = self.buf, self.writer, self.progress
        at = 0  # `pending` is frame `at` of the run
        while at + 1 < run.count:
            pending = self.pending
            assert pending is not None
            self.write(pending)
            self.previous = frame_head(buf, pending)
            rows = fast_rows(
                buf,
                run,
                at,
                self.template,
                self.fam,
                self.encoder.orders,
                self.world,
                writer.message_count,
                self.last_time,
            )
            if rows is not None:
                write_rows(writer, rows, self.template)
                at += rows.count
                self.last_time = rows.last_time
                self.previous = rows.last_frame_id
                self.done = run.first.start + (at + 1) * run.stride
                self.release(self.done)
                if progress is not None:
                    progress(self.done)
            at += 1
            self.pending = run.frame(at)

    def finish(self) -> None:
        """Write the frame held back if it is complete (its FrameEnd is there), even if a
        cut packet follows or user packets come after it (as they do in mid-file frames)."""
        pending = self.pending
        if pending is None:
            return
        if FRAME_END_ID in pending.ids:
            self.write(pending)
        elif self.truncation is None:
            self.truncation = Truncation(pending.start, "the last frame has no FrameEnd")
