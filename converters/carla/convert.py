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
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgpack

from nanorec.archive.filehash import FileHash
from nanorec.archive.writer import ArchiveWriter
from nanorec.errors import OutputExistsError
from nanorec.gcpause import paused_gc

from .detect import resolve

# `export`, `read_meta` and the rest of the archive side are imported from here too.
from .emit import STATE_FLAG as STATE_FLAG
from .emit import first_head, write_frame, write_rows
from .export import ExportReport as ExportReport
from .export import export as export
from .export import iter_native as iter_native
from .export import native_file as native_file
from .frames import Frame, FrameMaps, Run, iter_frames
from .header import Header
from .ids import Family
from .meta import (
    META_MEMBER,
    WORLD_MEMBER,
    _meta,
)
from .meta import read_meta as read_meta
from .runs import fast_rows
from .source import frame_head, resync
from .walk import Truncation
from .world import WorldTablesBuilder

SOURCE_FORMAT = "carla"
FRAME_START_ID = 0  # the same in every release (spec §4)
FRAME_END_ID = 1
_RELEASE_BYTES = 32 << 20  # give back converted source pages every 32 MiB


@dataclass(frozen=True)
class ConvertReport:
    """What `convert` did: counts, the family used, and what was kept raw."""

    source: Path
    output: Path
    family: str
    frames: int
    source_size: int
    archive_size: int
    raw_packets: Mapping[int, int]  # packet id -> packets kept verbatim in messages
    tail_bytes: int  # bytes after the last complete frame (a crashed recording)
    truncation: Truncation | None
    sha256: str
    #: (offset, length) of damaged stretches inside the file, kept verbatim (frames lost)
    damaged: list[tuple[int, int]] = field(default_factory=list)


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
    source bytes done. Every complete frame becomes a message; the bytes of an
    incomplete last frame are kept verbatim so that `export` gives the file back.
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
        buf: Any = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) if size else b""
        try:
            return _convert(buf, source, out, family, overwrite, progress)
        finally:
            if isinstance(buf, mmap.mmap):
                with contextlib.suppress(BufferError):  # views still alive in a traceback
                    buf.close()


def _convert(
    buf: Any,
    source: Path,
    out: Path,
    family: str | Family | None,
    overwrite: bool,
    progress: Callable[[int], None] | None,
) -> ConvertReport:
    header = Header.parse(buf)
    fam = resolve(buf, header.size, family).family
    digest = FileHash(source, len(buf))
    try:
        return _write_archive(buf, source, out, header, fam, digest, overwrite, progress)
    finally:
        digest.close()


def _write_archive(
    buf: Any,
    source: Path,
    out: Path,
    header: Header,
    fam: Family,
    digest: FileHash,
    overwrite: bool,
    progress: Callable[[int], None] | None,
) -> ConvertReport:
    world = WorldTablesBuilder(fam.engine)
    packer = msgpack.Packer()
    encoder = FrameMaps(fam)
    raw_counts: dict[int, int] = {}
    prelude = b""
    done = header.size  # bytes converted so far
    truncation: Truncation | None = None
    damaged: list[tuple[int, int, int]] = []  # (frame written before, start, end) offsets
    last_time = 0
    with ArchiveWriter(
        out,
        overwrite=overwrite,
        source_format=SOURCE_FORMAT,
        source={"name": source.name, "size": len(buf), "family": fam.name},
    ) as writer:
        released = 0
        template: dict[str, Any] = {}

        def release(upto: int) -> None:
            """Drop the source pages already converted from memory (bounded RSS on big files)."""
            nonlocal released
            if isinstance(buf, mmap.mmap) and upto - released >= _RELEASE_BYTES:
                end = upto - upto % mmap.PAGESIZE
                with contextlib.suppress(OSError, ValueError):
                    buf.madvise(mmap.MADV_DONTNEED, released, end - released)
                released = end

        def write(run: Frame, last_time: int) -> int:
            nonlocal done, template
            first = writer.message_count == 0
            last_time, template = write_frame(
                writer,
                packer,
                world,
                buf,
                writer.message_count,
                run,
                raw_counts,
                last_time,
                encoder,
                first_head(bytes(buf[: header.size]), fam, prelude) if first else None,
            )
            done = run.end
            release(done)
            return last_time

        def write_whole(frame: Frame, of: Run | None, last_time: int) -> int:
            """Write `frame`, proven whole by its successor: the fast way when it is the last
            frame of run `of` and matches the frames before it (`runs.py`)."""
            nonlocal done
            rows = None
            if of is not None:
                at = of.count - 2  # `template` is its map's, or that of a frame it matched
                index = writer.message_count
                rows = fast_rows(
                    buf, of, at, template, fam, encoder.orders, world, index, last_time, last=True
                )
            if rows is None:
                return write(frame, last_time)
            write_rows(writer, rows, template)
            done = frame.end
            release(done)
            return rows.last_time

        # Hold one run back: only a well-formed FrameStart after it proves a run whole, and
        # only at the end is it known whether the last one is complete. A run followed by a
        # malformed one, or by a cut mid-file, is damage (a broken size field throws the
        # walk off): its bytes are kept verbatim and the walk starts again at the next
        # FrameStart that continues the recording, if one follows.
        pending: Frame | None = None
        last_of: Run | None = None  # the run whose last frame `pending` is
        position: int | None = header.size
        previous: int | None = None  # frame id of the last frame written
        while position is not None:
            resume: int | None = None
            for run in iter_frames(buf, position, fam):
                if isinstance(run, Run):
                    item: Frame | Truncation = run.first
                else:
                    item = run
                if isinstance(item, Truncation):
                    if pending is not None and previous is not None:
                        resume = resync(buf, pending.start + 1, previous)
                    if resume is None:
                        truncation = item
                    break
                if item.ids[0] != FRAME_START_ID:  # packets before the first FrameStart
                    prelude = bytes(buf[item.start : item.end])
                    done = item.end
                    continue
                if pending is not None:
                    head = frame_head(buf, pending)
                    if head is None or frame_head(buf, item) is None:
                        resume = resync(buf, pending.start + 1, previous)
                        if resume is None:
                            truncation = Truncation(pending.start, "damaged: no frame follows")
                            pending = None
                        break
                    last_time = write_whole(pending, last_of, last_time)
                    previous = head
                    if progress is not None and writer.message_count % 1024 == 0:
                        progress(done)
                pending = item
                last_of = None
                if not isinstance(run, Run):
                    continue
                # A run: each frame written the per-frame way is the template of the frames
                # after it, written at once while they match it (`runs.py`). Every frame is
                # proven whole by the next (same layout, so a well-formed FrameStart); the
                # last one waits, like any, for what follows the run.
                at = 0  # `pending` is frame `at` of the run
                while at + 1 < run.count:
                    assert pending is not None
                    last_time = write(pending, last_time)
                    previous = frame_head(buf, pending)
                    rows = fast_rows(
                        buf,
                        run,
                        at,
                        template,
                        fam,
                        encoder.orders,
                        world,
                        writer.message_count,
                        last_time,
                    )
                    if rows is not None:
                        write_rows(writer, rows, template)
                        at += rows.count
                        last_time = rows.last_time
                        previous = rows.last_frame_id
                        done = run.first.start + (at + 1) * run.stride
                        release(done)
                        if progress is not None:
                            progress(done)
                    at += 1
                    pending = run.frame(at)
                last_of = run
            if resume is not None:
                assert pending is not None
                damaged.append((writer.message_count - 1, pending.start, resume))
                done = resume
                pending = None
            position = resume
        if pending is not None:
            # Complete once its FrameEnd is written, even if a cut packet follows or user
            # packets come after it (as they do in mid-file frames).
            if FRAME_END_ID in pending.ids:
                write(pending, last_time)
            elif truncation is None:
                truncation = Truncation(pending.start, "the last frame has no FrameEnd")
        written = writer.message_count
        tail = bytes(buf[done:])
        sha = digest.hexdigest()
        writer.source["sha256"] = sha
        writer.add_meta(WORLD_MEMBER, world.to_value())
        writer.add_meta(
            META_MEMBER,
            _meta(
                header,
                bytes(buf[: header.size]),
                fam,
                prelude,
                tail,
                truncation,
                encoder.orders,
                [[after, bytes(buf[start:end])] for after, start, end in damaged],
            ),
        )
    if progress is not None:
        progress(len(buf))
    return ConvertReport(
        source=source,
        output=out,
        family=fam.name,
        frames=written,
        source_size=len(buf),
        archive_size=out.stat().st_size,
        raw_packets=raw_counts,
        tail_bytes=len(tail),
        truncation=truncation,
        sha256=sha,
        damaged=[(start, end - start) for _, start, end in damaged],
    )
