"""`.pbstream` -> nanorec archive: one message per record, gzip members kept as read.

Each message is `{kind: entry}` with `entry` holding the record's original gzip `member`
(export copies it back: byte-exact by construction) and the record's `trajectory_id`, `index`
(node or submap index) and `timestamp` (Cartographer ticks) where it has them. Small members
are inflated whole and checked in one call (`scan`); of larger ones only the first bytes
(`Classifier.describe_member`: those fields open every record), checked whole on a second
thread (`crc`), so converting is not bound by zlib: inflating every record and deflating it again to
prove the member rebuilds (what archives before this held: the payload, and a member only
where the rebuild differed; still read and exported) cost ~4x the source in zlib work.
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
import hashlib
import mmap
import os
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import msgpack
import numpy as np

from nanorec.errors import BadMagicError, FormatError, OutputExistsError, TruncatedError
from nanorec.reader import ArchiveReader
from nanorec.wire import inflate_bounded
from nanorec.writer import ArchiveWriter

from .classify import LEGACY, NONE_ID, Classifier, Columns, first_ticks
from .crc import MemberCheck
from .records import (
    DAMAGED,
    OPTIONS,
    POSE_GRAPH,
    UNIX_EPOCH_TICKS,
    UNKNOWN,
    Described,
    describe_prefix,
    ticks_to_us,
)
from .scan import WHOLE_BELOW, frame_table, whole_payload
from .stream import GZIP_HEADER, MAGIC, Cut, inflate_member
from .vector import PAD, describe_run, kind_codes

SOURCE_FORMAT: Final = "pbstream"
META_MEMBER: Final = "pbstream.msgpack.zlib"
TAIL_MEMBER: Final = "pbstream-tail.bin"
META_VERSION: Final = 1
_RELEASE_BYTES: Final = 32 << 20
_HASH_BYTES: Final = 1 << 20
#: Records described before their messages are handed to the writer in one call.
_RUN: Final = 1024
_DEFLATE_THREADS = 2


@dataclass
class PbstreamReport:
    """What `convert` did."""

    source: Path
    output: Path
    records: int
    source_size: int
    archive_size: int
    sha256: str
    format: str  # "2", "1", "legacy", another version number, or "unknown"
    raw_members: int  # members whose gzip header is not Cartographer's (another writer)
    tail_bytes: int
    cut: Cut | None
    damaged: list[tuple[int, int, str]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # records kept with a problem


def check_magic(buf: Any) -> None:
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


def entry_of(info: Described, member: bytes) -> dict[str, Any]:
    """The archive message value of one record (see the module docstring)."""
    entry: dict[str, Any] = {"member": member}
    if info.trajectory_id is not None:
        entry["trajectory_id"] = info.trajectory_id
    if info.index is not None:
        entry["index"] = info.index
    if info.ticks is not None:
        entry["timestamp"] = info.ticks
    if info.dims is not None:
        entry["dims"] = info.dims
    if info.version is not None:
        entry["format_version"] = info.version
    if info.body[0] == 0 and info.kind in (POSE_GRAPH, OPTIONS):  # no SerializedData key
        entry["bare"] = True
    return entry


def convert(
    source: str | os.PathLike[str],
    output: str | os.PathLike[str],
    *,
    overwrite: bool = False,
    progress: Callable[[int], None] | None = None,
) -> PbstreamReport:
    """Convert a `.pbstream` into a nanorec archive at `output`.

    Raises `BadMagicError`/`TruncatedError` for a file that is not a pbstream, and
    `OutputExistsError`. A cut file converts every complete record and keeps the rest; a
    record that does not inflate is kept verbatim and reported in `damaged`.
    """
    source = Path(source)
    out = Path(output)
    if out.exists() and not overwrite:
        raise OutputExistsError(f"{out} exists (use --force to overwrite it)")
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
) -> PbstreamReport:
    check_magic(buf)
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
    # Hashed as the records are converted, so each source page is read once and can be
    # given back (hashing the whole mapping first would keep the file resident).
    digest = hashlib.sha256()
    hashed = 0
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
            # Most blocks hold gzip bytes and are stored; deflating the others here beats
            # handing them to threads while this loop releases the GIL at every record.
            deflate_threads=0,
        ) as writer,
    ):
        runs = _Runs(buf, offsets, sizes, classifier, check, fast_from, last_us)
        for first in range(0, len(offsets), _RUN):
            stop = min(first + _RUN, len(offsets))
            packed, types, stamps = runs.describe(first, stop)
            writer.write_packed_run(packed, types=types, timestamps_us=stamps)
            number = stop - 1
            end = offsets[number] + 8 + sizes[number]
            if end - hashed >= _HASH_BYTES:
                digest.update(buf[hashed:end])
                hashed = end
            if end - released >= _RELEASE_BYTES:
                page_end = end - end % mmap.PAGESIZE
                with contextlib.suppress(OSError, ValueError):
                    buf.madvise(mmap.MADV_DONTNEED, released, page_end - released)
                released = page_end
                if progress is not None:
                    progress(end)
        digest.update(buf[hashed:])
        sha = writer.source["sha256"] = digest.hexdigest()
        damaged, warnings, raw, columns = runs.damaged, runs.warnings, runs.raw, runs.columns
        for number, offset, reason in check.problems():
            warnings.append(f"record {number} at byte {offset}: its gzip member: {reason}")
        tail = bytes(buf[cut.offset :]) if cut is not None else b""
        if tail:
            writer.add_member(TAIL_MEMBER, tail)
        writer.add_member(
            META_MEMBER,
            _meta(classifier, writer.message_count, raw, cut, tail, damaged, warnings, columns),
        )
        records = writer.message_count
    if progress is not None:
        progress(len(buf))
    return PbstreamReport(
        source=source,
        output=out,
        records=records,
        source_size=len(buf),
        archive_size=out.stat().st_size,
        sha256=sha,
        format=classifier.format,
        raw_members=raw,
        tail_bytes=len(tail),
        cut=cut,
        damaged=damaged,
        warnings=warnings,
    )


class _Runs:
    """Describes runs of records and packs their messages (see `convert`): the shapes
    `vector.describe_run` reads at once, the rest one at a time as before."""

    def __init__(
        self,
        buf: mmap.mmap,
        offsets: list[int],
        sizes: list[int],
        classifier: Classifier,
        check: MemberCheck,
        fast_from: int,
        last_us: int | None,
    ) -> None:
        self.buf = buf
        self.offsets = offsets
        self.sizes = sizes
        self.classifier = classifier
        self.check = check
        self.fast_from = fast_from
        self.last_us = last_us
        self.codes = kind_codes(classifier.kinds)
        self.names = [classifier.kinds.get(key >> 3, UNKNOWN) for key in range(256)]
        self.types = [(name,) for name in self.names]
        self.pack = msgpack.Packer().pack
        self.columns = Columns()
        self.damaged: list[tuple[int, int, str]] = []
        self.warnings: list[str] = []
        self.raw = 0

    def describe(self, first: int, stop: int) -> tuple[list[bytes], list[tuple[str]], list[int]]:
        """The packed messages, types and index times of records `first` to `stop`."""
        buf = self.buf
        count = stop - first
        members = [
            buf[offset + 8 : offset + 8 + size]
            for offset, size in zip(self.offsets[first:stop], self.sizes[first:stop], strict=True)
        ]
        # Inflated whole and checked; b"" for a large member or one that does not inflate
        # (describe_prefix reads b"" as unknown, which takes the general path too).
        payloads = [
            (whole_payload(member) or b"") if len(member) < WHOLE_BELOW else b""
            for member in members
        ]
        for number in range(first, min(stop, self.fast_from)):
            payloads[number - first] = b""
        lengths = np.fromiter(map(len, payloads), dtype=np.int64, count=count)
        ok, keys, nodes, trajectory, index, ticks = describe_run(
            b"".join([*payloads, PAD]), lengths, self.codes
        )
        timed = ok.copy()
        slow: dict[int, tuple[str, bytes]] = {}
        for row in np.flatnonzero(~ok).tolist():
            info, message = self._one(first + row, members[row], payloads[row])
            slow[row] = (info.kind, message)
            trajectory[row] = NONE_ID if info.trajectory_id is None else info.trajectory_id
            index[row] = NONE_ID if info.index is None else info.index
            ticks[row] = info.ticks or 0
            timed[row] = info.ticks is not None
        index = np.where(ok & ~nodes, NONE_ID, index)
        self.columns.extend_arrays(trajectory, index, ticks, timed)
        stamps = self._stamps(ticks, timed)

        pack = self.pack
        names = self.names
        packed = [
            (
                pack(
                    {
                        names[key]: {
                            "member": member,
                            "trajectory_id": tid,
                            "index": number,
                            "timestamp": tick,
                        }
                    }
                )
                if node
                else pack({names[key]: {"member": member, "trajectory_id": tid, "timestamp": tick}})
            )
            if good
            else b""
            for good, key, node, member, tid, number, tick in zip(
                ok.tolist(),
                keys.tolist(),
                nodes.tolist(),
                members,
                trajectory.tolist(),
                index.tolist(),
                ticks.tolist(),
                strict=True,
            )
        ]
        types = [self.types[key] for key in keys.tolist()]  # each kind's one tuple
        for row, (kind, message) in slow.items():
            packed[row] = message
            types[row] = (kind,)
        return packed, types, stamps

    def _stamps(self, ticks: np.ndarray[Any, Any], timed: np.ndarray[Any, Any]) -> list[int]:
        """Index times: a record's own time, else (or when earlier) the one before it."""
        last_us = self.last_us
        if last_us is None:  # no time seen yet: one at a time, as the module says
            stamps: list[int] = []
            for tick, has in zip(ticks.tolist(), timed.tolist(), strict=True):
                if has:
                    own = ticks_to_us(tick)
                    last_us = own if last_us is None or own > last_us else last_us
                if last_us is None:
                    last_us = 0
                stamps.append(last_us)
            self.last_us = last_us
            return stamps
        # (ticks - UNIX_EPOCH_TICKS) // 10 without overflow: the epoch is a multiple of 10
        times = np.where(timed, ticks // 10 - UNIX_EPOCH_TICKS // 10, np.iinfo(np.int64).min)
        run = np.maximum(np.maximum.accumulate(times), last_us)
        self.last_us = int(run[-1])
        result: list[int] = run.tolist()
        return result

    def _one(self, number: int, member: bytes, payload: bytes) -> tuple[Described, bytes]:
        """A record the vector pass left: described and packed one at a time."""
        offset = self.offsets[number]
        start = offset + 8
        end = start + len(member)
        info = None
        if payload:
            info = describe_prefix(payload, len(payload), self.classifier.kinds)
            if info is not None and info.kind == UNKNOWN:
                info = None
        if info is not None:
            if info.problem is not None:
                self.warnings.append(
                    f"record {number} ({info.kind} at byte {offset}): {info.problem}"
                )
            entry = entry_of(info, member)
        else:
            try:
                info = self.classifier.describe_member(number, member, start)
            except FormatError as error:
                reason = error.message
                self.damaged.append((offset, end - offset, reason))
                info = Described(DAMAGED)
                entry = {"member": member, "reason": reason}
            else:
                if info.problem is not None:
                    self.warnings.append(
                        f"record {number} ({info.kind} at byte {offset}): {info.problem}"
                    )
                entry = entry_of(info, member)
                self.raw += member[:10] != GZIP_HEADER
                self.check.add(number, offset, start, end)
        return info, self.pack({info.kind: entry})


def _meta(
    classifier: Classifier,
    records: int,
    raw: int,
    cut: Cut | None,
    tail: bytes,
    damaged: list[tuple[int, int, str]],
    warnings: list[str],
    columns: Columns,
) -> bytes:
    return zlib.compress(
        msgpack.packb(
            {
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
        ),
        1,  # ~3 MB of columns per 100 MB: level 6 took ~0.15 s of a 1 s conversion
    )


def read_meta(reader: ArchiveReader) -> dict[str, Any]:
    """The side member of a pbstream archive; FormatError when missing or damaged."""
    if META_MEMBER not in reader.member_names:
        raise FormatError(f"{reader.path} is not a pbstream archive (no {META_MEMBER} member)")
    data = inflate_bounded(reader.member(META_MEMBER), 64 << 20, META_MEMBER)
    try:
        meta = msgpack.unpackb(data)
    except (ValueError, TypeError) as error:  # msgpack's errors are ValueErrors
        raise FormatError(f"damaged {META_MEMBER} member: not msgpack ({error})") from None
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
    "PbstreamReport",
    "check_magic",
    "convert",
    "first_ticks",
    "read_meta",
    "read_tail",
]
