"""`.pbstream` -> nanorec archive: one message per record, gzip members kept as read.

Each message is `{kind: entry}` with `entry` holding the record's original gzip `member`
(export copies it back: byte-exact by construction) and the record's `trajectory_id`, `index`
(node or submap index) and `timestamp` (Cartographer ticks) where it has them. Records go
in runs (`runs.Runs`): a run's small members are inflated whole and checked in one call on a
look-ahead thread (`scan.inflate_run`), its messages built at once and written as one
buffer; of larger members only the first bytes are read (`Classifier.describe_member`: those
fields open every record), checked whole on another thread (`crc`), so converting is not
bound by zlib: inflating every record and deflating it again to prove the member rebuilds
(what archives before this held: the payload, and a member only where the rebuild differed;
still read and exported) cost ~4x the source in zlib work.
Readers inflate a member, checking its CRC-32, when they need the payload. A record whose
member does not inflate as far as read is kind `damaged` and keeps its member.
The index time is the record's own time in Unix microseconds; records without time (and
records earlier than one already written: other trajectories, sensor data after nodes)
take the previous time, records before the first timed one the first time in the file.

The side member `pbstream.msgpack.zlib` holds the stream's format (version 2, 1, legacy) and
what did not become a record: the bytes after the last complete record of a cut file.
"""

from __future__ import annotations

import contextlib
import mmap
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

from nanorec.archive.filehash import FileHash
from nanorec.archive.reader import ArchiveReader
from nanorec.archive.writer import ArchiveWriter
from nanorec.buffers import Buffer
from nanorec.contract import ConvertReport, Region
from nanorec.errors import BadMagicError, FormatError, OutputExistsError, TruncatedError

from .classify import LEGACY, NONE_ID, Classifier, Columns, first_ticks
from .crc import MemberCheck
from .records import ticks_to_us
from .runs import Runs
from .scan import frame_table
from .stream import MAGIC, Cut, inflate_member

SOURCE_FORMAT: Final = "pbstream"
META_MEMBER: Final = "pbstream.msgpack.zlib"
#: Its zlib level: ~3 MB of columns per 100 MB, and level 6 took ~0.15 s of a 1 s conversion.
META_LEVEL: Final = 1
TAIL_MEMBER: Final = "pbstream-tail.bin"
META_VERSION: Final = 1
_RELEASE_BYTES: Final = 32 << 20
#: Records described before their messages are handed to the writer in one call (4096:
#: numpy's per-call cost spread over more rows than 1024 did, ~0.1 s less a 100 MB file).
_RUN: Final = 4096


def check_magic(buf: Buffer) -> None:
    """BadMagicError unless `buf` starts with the pbstream magic (TruncatedError when it
    is a prefix of it)."""
    head = bytes(buf[: len(MAGIC)])
    if head == MAGIC:
        return
    if MAGIC.startswith(head):
        raise TruncatedError(
            f"the file ends after {len(head)} bytes, inside the 8-byte pbstream magic",
            offset=len(head),
        )
    raise BadMagicError(
        "not a Cartographer .pbstream (the magic db 01 f5 5b 7b 1f 1d 7b is missing)",
        offset=0,
        expected=MAGIC.hex(" "),
        actual=head.hex(" "),
    )


def convert(
    source: str | os.PathLike[str],
    output: str | os.PathLike[str],
    *,
    overwrite: bool = False,
    progress: Callable[[int], None] | None = None,
) -> ConvertReport:
    """Convert a `.pbstream` into a nanorec archive at `output`.

    Raises `BadMagicError`/`TruncatedError` for a file that is not a pbstream, and
    `OutputExistsError`. A cut file converts every complete record and keeps the rest; a
    record that does not inflate is kept verbatim and reported in `damaged`. The report is
    the contract's (`details`: the stream's format version, the members kept raw);
    `progress(n)` gets the source bytes done, last the source's size.
    """
    source = Path(source)
    out = Path(output)
    if out.exists() and not overwrite:
        raise OutputExistsError(f"{out} exists; pass overwrite=True to replace it")
    with source.open("rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        if size == 0:
            raise TruncatedError(f"{source} is empty", offset=0)
        buf = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
        try:
            return _convert(buf, source, out, overwrite, progress)
        finally:
            with contextlib.suppress(BufferError):
                buf.close()


def _convert(
    buf: mmap.mmap,
    source: Path,
    out: Path,
    overwrite: bool,
    progress: Callable[[int], None] | None,
) -> ConvertReport:
    """`convert` of a mapped source: its hash taken beside everything else, from the start."""
    check_magic(buf)
    hashing = FileHash(source, len(buf))
    try:
        return _records(buf, hashing, source, out, overwrite, progress)
    finally:
        hashing.close()


def _records(
    buf: mmap.mmap,
    hashing: FileHash,
    source: Path,
    out: Path,
    overwrite: bool,
    progress: Callable[[int], None] | None,
) -> ConvertReport:
    """The records framed, described and written (`Runs`), then the side members."""
    classifier = Classifier()
    offsets, sizes, cut = frame_table(buf, len(MAGIC))
    if offsets:
        start = offsets[0] + 8
        with contextlib.suppress(FormatError):
            classifier.first(inflate_member(bytes(buf[start : start + sizes[0]]), start))
    last_us = None
    ticks = first_ticks(buf, classifier)
    if ticks is not None:
        last_us = ticks_to_us(ticks)
    released = 0
    # Records 0 (and 1 of a legacy file) are told apart by the file's layout: general path.
    fast_from = 2 if classifier.format == LEGACY else 1
    check = MemberCheck(buf)
    with (
        check,
        ArchiveWriter(
            out,
            overwrite=overwrite,
            source_format=SOURCE_FORMAT,
            source={"name": source.name, "size": len(buf)},
            # (the writer's deflating threads: blocks are sampled and the compressible ones
            # deflated beside the conversion, which no longer lets go of the GIL at every
            # record: compact ~20 % faster than deflating them here, in A/B)
            precompressed=True,  # the gzip members: ~70 % of the blocks do not deflate
        ) as writer,
    ):
        runs = Runs(buf, (offsets, sizes), classifier, check, fast_from, last_us)
        for (joined, lengths, types, kinds, stamps), end in runs.stored_runs(_RUN):
            writer.write_joined_run(joined, lengths, types=types, kinds=kinds, timestamps_us=stamps)
            if end - released >= _RELEASE_BYTES:
                page_end = end - end % mmap.PAGESIZE
                with contextlib.suppress(OSError, ValueError):
                    buf.madvise(mmap.MADV_DONTNEED, released, page_end - released)
                released = page_end
                if progress is not None:
                    progress(end)
        sha = writer.source["sha256"] = hashing.hexdigest()
        runs.close()
        damaged, warnings, raw, columns = runs.damaged, runs.warnings, runs.raw, runs.columns
        for number, offset, reason in check.problems():
            warnings.append(f"record {number} at byte {offset}: its gzip member: {reason}")
        tail = bytes(buf[cut.offset :]) if cut is not None else b""
        if tail:
            writer.add_member(TAIL_MEMBER, tail)
        writer.add_meta(
            META_MEMBER,
            archive_meta(
                classifier, writer.message_count, raw, cut, tail, damaged, warnings, columns
            ),
            level=META_LEVEL,
        )
        records = writer.message_count
    if progress is not None:
        progress(len(buf))
    return ConvertReport(
        source=source,
        output=out,
        format=SOURCE_FORMAT,
        messages=records,
        source_size=len(buf),
        archive_size=out.stat().st_size,
        sha256=sha,
        cut=None if cut is None else Region(cut.offset, len(tail), cut.reason),
        damaged=[
            Region(offset, length, f"damaged record kept verbatim: {reason}")
            for offset, length, reason in damaged
        ],
        warnings=warnings,
        details={"format_version": classifier.format, "raw_members": raw},
    )


def archive_meta(
    classifier: Classifier,
    records: int,
    raw: int,
    cut: Cut | None,
    tail: bytes,
    damaged: list[tuple[int, int, str]],
    warnings: list[str],
    columns: Columns,
) -> dict[str, Any]:
    """The side member's value (`ArchiveWriter.add_meta`)."""
    return {
        "version": META_VERSION,
        "magic": MAGIC,
        "format": classifier.format,
        "format_version": classifier.version,
        "records": records,
        "raw_members": raw,
        "tail_size": len(tail),
        "cut": None if cut is None else {"offset": cut.offset, "reason": cut.reason},
        "damaged": [list(item) for item in damaged],
        "warnings": warnings,
        "columns": columns.to_dict(),
    }


def read_meta(reader: ArchiveReader) -> dict[str, Any]:
    """The side member of a pbstream archive; FormatError when missing or damaged."""
    if META_MEMBER not in reader.member_names:
        raise FormatError(f"{reader.path} is not a pbstream archive (no {META_MEMBER} member)")
    meta = reader.meta(META_MEMBER)
    if not isinstance(meta, dict) or meta.get("magic") != MAGIC:
        raise FormatError(f"damaged {META_MEMBER} member: not a pbstream description")
    for required in ("format", "raw_members", "columns"):
        if required not in meta:
            raise FormatError(f"damaged {META_MEMBER} member: it lacks {required!r}")
    return meta


def read_tail(reader: ArchiveReader, meta: dict[str, Any]) -> bytes:
    """The raw bytes after the last complete record (a cut file), or b""."""
    size = meta.get("tail_size", 0)
    if not size:
        return b""
    tail = reader.member(TAIL_MEMBER)
    if len(tail) != size:
        raise FormatError(f"{TAIL_MEMBER} holds {len(tail)} bytes, {size} were recorded")
    return bytes(tail)


__all__ = [
    "LEGACY",
    "META_MEMBER",
    "NONE_ID",
    "SOURCE_FORMAT",
    "TAIL_MEMBER",
    "Classifier",
    "Columns",
    "check_magic",
    "convert",
    "first_ticks",
    "read_meta",
    "read_tail",
]
