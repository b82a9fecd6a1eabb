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
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgpack
import numpy as np

from nanorec.errors import OutputExistsError
from nanorec.gcpause import paused_gc
from nanorec.writer import ArchiveWriter

from .detect import resolve

# `export`, `read_meta` and the rest of the archive side are imported from here too.
from .export import ExportReport as ExportReport
from .export import export as export
from .export import iter_native as iter_native
from .export import native_file as native_file
from .frames import Frame, FrameMaps, Run, iter_frames
from .header import Header
from .ids import Family, Kind
from .message import (
    FRAME_START,
    KIND_KEYS,
    RAW_KEY,
    _text,
    kind_key,
)
from .meta import (
    HEAD_KEY,
    META_MEMBER,
    WORLD_MEMBER,
    _meta,
)
from .meta import read_meta as read_meta
from .runs import fast_rows
from .source import FileHash, frame_head, resync
from .walk import Truncation
from .world import WorldTablesBuilder

SOURCE_FORMAT = "carla"
STATE_FLAG = 1 << 40  # index flag: the message also carries a NanoVer `state` change
FRAME_START_ID = 0  # the same in every release (spec §4)
FRAME_END_ID = 1
_KEY_BITS = {key: kind.bit for kind, key in KIND_KEYS.items()}
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
        raise OutputExistsError(f"{out} exists (use --force to overwrite it)")
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
            last_time, template = _write_frame(
                writer,
                packer,
                world,
                buf,
                writer.message_count,
                run,
                raw_counts,
                last_time,
                encoder,
                _head(bytes(buf[: header.size]), fam, prelude) if first else None,
            )
            done = run.end
            release(done)
            return last_time

        # Hold one run back: only a well-formed FrameStart after it proves a run whole, and
        # only at the end is it known whether the last one is complete. A run followed by a
        # malformed one, or by a cut mid-file, is damage (a broken size field throws the
        # walk off): its bytes are kept verbatim and the walk starts again at the next
        # FrameStart that continues the recording, if one follows.
        pending: Frame | None = None
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
                    last_time = write(pending, last_time)
                    previous = head
                    if progress is not None and writer.message_count % 1024 == 0:
                        progress(done)
                pending = item
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
                        for data, stamps in rows.groups:
                            writer.write_stored_rows(
                                data, stamps, types=("frame",), flags=_flags(template)
                            )
                        at += rows.count
                        last_time = rows.last_time
                        previous = rows.last_frame_id
                        done = run.first.start + (at + 1) * run.stride
                        release(done)
                        if progress is not None:
                            progress(done)
                    at += 1
                    pending = run.frame(at)
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
        writer.add_member(WORLD_MEMBER, zlib.compress(world.to_bytes(), 6))
        writer.add_member(
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


def _write_frame(
    writer: ArchiveWriter,
    packer: msgpack.Packer,
    world: WorldTablesBuilder,
    buf: Any,
    index: int,
    run: Frame,
    raw_counts: dict[int, int],
    last_time: int,
    encoder: FrameMaps,
    head: dict[str, Any] | None = None,
) -> tuple[int, dict[str, Any]]:
    """Write one frame message (the first one also carries `head`); returns its timestamp
    (µs) and its frame map (the template of the frames that follow, see `runs.py`)."""
    frame, _ = encoder.encode(index, buf, run)
    for position, _body in frame.get(RAW_KEY, ()):
        pid = run.ids[position]
        raw_counts[pid] = raw_counts.get(pid, 0) + 1
    spawned, destroyed = world.observe(index, frame)
    message: dict[str, Any] = {"frame": frame}
    if head is not None:
        message[HEAD_KEY] = head
    flags = _flags(frame)
    parents = frame.get(kind_key(Kind.EVENT_PARENT))
    if spawned or destroyed or parents:
        message["state"] = _state_change(world, spawned, destroyed, parents)
        flags |= STATE_FLAG
    start = frame.get(kind_key(Kind.FRAME_START))
    elapsed = FRAME_START.unpack(start)[2] if start is not None else float("nan")
    # Index timestamps must not decrease; a damaged elapsed time keeps the previous one.
    timestamp = round(elapsed * 1e6) if np.isfinite(elapsed) and elapsed >= 0 else last_time
    timestamp = max(timestamp, last_time)
    writer.write_packed(
        packer.pack(message), types=list(message), timestamp_us=timestamp, flags=flags
    )
    return timestamp, frame


def _flags(frame: Mapping[str, Any]) -> int:
    """The index flags of a frame map: one bit per kind it holds records of."""
    flags = 0
    for key in frame:
        flags |= _KEY_BITS.get(key, 0)
    return flags


def _head(header_bytes: bytes, fam: Family, prelude: bytes) -> dict[str, Any]:
    """What the first message carries besides its frame: the file's header and release
    family, and any packets before the first frame, so that an archive recovered from a
    killed writer (without its CARLA member) can be made whole again (`adopt.py`)."""
    return {"header": header_bytes, "family": fam.name, "prelude": prelude}


def _state_change(
    world: WorldTablesBuilder, spawned: list[int], destroyed: list[int], parents: bytes | None
) -> dict[str, Any]:
    """A frame's NanoVer state change: `actor.<id>` -> blueprint id for each live actor,
    `parent.<id>` -> parent id for each attached one (kept small: repeated per change)."""
    updates: dict[str, Any] = {}
    for actor_id in spawned:
        row = world.alive.get(actor_id)
        if row is not None:
            # bytes when the blueprint is not UTF-8 (msgpack strings must be)
            updates[f"actor.{actor_id}"] = _text(world.spawn_type_ids[row])
    if parents:
        for child in np.frombuffer(parents, "<u4")[::2].tolist():
            parent = world.parent.get(child)
            if parent is not None:
                updates[f"parent.{child}"] = parent
    removals = []
    for actor_id in destroyed:
        if actor_id not in world.alive:
            removals += [f"actor.{actor_id}", f"parent.{actor_id}"]
    # re-added while attached: the new actor has no parent (unless attached again)
    removals += [f"parent.{i}" for i in world.detached if i not in world.parent]
    return {"updates": updates, "removals": removals}
