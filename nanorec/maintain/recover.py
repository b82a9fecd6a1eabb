"""`recover`: rebuild a valid archive from a file whose writer was killed.

A writer killed before `close()` leaves `messages.msgpack`'s local header and complete
messages, but no index and no central directory, so `zipfile` (and NanoVer) cannot open the
file. msgpack values delimit themselves, so the messages can be decoded as a stream from the
member's data start; each message written by nanorec carries its own timestamp in
`"nanorec.t"`, so the rebuilt index is exact. Recovery stops at the first incomplete message
(the tail the kill cut), or at the first value that is not a map (the next member's header when
the writer died during close, or damage).

Messages without `"nanorec.t"` (a crashed NanoVer recorder) have no recoverable time: they get
the previous message's timestamp (0 before any known one), are counted in
`RecoverResult.unknown_timestamps`, and are stored unchanged. Per-message `flags` and caller
metadata lived only in the index and are lost; pass `flags_of` to recompute flags from each
message.

A compact writer's `messages.msgpack` is one deflate stream flushed at block boundaries: it is
inflated as far as it goes (into a temporary file) and read the same way, so a killed compact
writer loses at most the block it was filling.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import tempfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final
from zipfile import ZIP_DEFLATED, ZIP_STORED

import msgpack

from nanorec.archive.archive_file import MSGPACK_ERRORS
from nanorec.archive.members import open_members
from nanorec.archive.wire import TIMESTAMP_KEY
from nanorec.archive.writer import MESSAGES_MEMBER, ArchiveWriter
from nanorec.archive.zipfile64 import LOCAL_HEADER, LocalHeader
from nanorec.errors import (
    ArchiveError,
    NanorecError,
    TruncatedError,
    UnsupportedError,
    UsageError,
)
from nanorec.untyped import Payload

_READ_SIZE: Final = 1 << 20
#: The largest single message recover will buffer (msgpack's Unpacker limit).
_MAX_MESSAGE: Final = 2**31 - 1
_PROGRESS_EVERY: Final = 65536
#: What every zip (and so every archive, partial or not) starts with: a local file header.
_ZIP_LOCAL_MAGIC: Final = b"PK\x03\x04"


@dataclass(frozen=True)
class RecoverResult:
    """What `recover` rebuilt."""

    output: Path
    messages: int
    #: Messages that had no `"nanorec.t"`; their timestamps were carried forward.
    unknown_timestamps: int
    #: Bytes of `messages.msgpack` data kept, and bytes after them that were dropped.
    recovered_bytes: int
    discarded_bytes: int
    #: Why the message stream ended: "end of data", "incomplete message", "not a map"...
    stop_reason: str
    #: Messages dropped because they fail the CRC-32 the source's index recorded for them
    #: (a damaged archive, not a killed writer's: recovery never re-blesses damaged bytes).
    failed_checksums: int = 0


class _Window:
    """A read-only file-like view of `mm[start:stop]` for `msgpack.Unpacker`."""

    def __init__(self, mm: mmap.mmap, start: int, stop: int) -> None:
        self.mm = mm
        self.position = start
        self.stop = stop

    def read(self, size: int = -1) -> bytes:
        end = self.stop if size < 0 else min(self.stop, self.position + size)
        data = self.mm[self.position : end]
        self.position = end
        return data


def _locate_messages(mm: mmap.mmap, name: str) -> tuple[int, int, bool]:
    """`(data_start, data_size, deflated)` of `messages.msgpack`, with or without a central
    directory (`name`, the file's, for the error of a file that is no zip at all)."""
    try:
        _, members = open_members(mm)
    except NanorecError:
        members = {}
    member = members.get(MESSAGES_MEMBER)
    if member is not None:
        return member.data_start, member.size, not member.stored
    # No usable central directory: the writer put messages.msgpack first, at offset 0.
    if mm[:4] != _ZIP_LOCAL_MAGIC:
        # A native recording given by mistake: what the user wants is convert, not recover.
        raise ArchiveError(
            f"{name} is not a nanorec archive nor the .partial file of one (no zip header "
            f"at its start); to make an archive of a recording run `nanorec convert {name}`",
            expected=_ZIP_LOCAL_MAGIC,
            actual=bytes(mm[:4]),
        )
    if len(mm) < LOCAL_HEADER.size:
        raise TruncatedError(
            "the file is shorter than one zip local header",
            offset=0,
            expected=LOCAL_HEADER.size,
            actual=len(mm),
        )
    header = LocalHeader.parse(mm, 0)
    if header.name != MESSAGES_MEMBER:
        raise ArchiveError(
            f"the first member is {header.name!r}, not {MESSAGES_MEMBER}; nothing to recover",
            offset=0,
        )
    if header.method not in (ZIP_STORED, ZIP_DEFLATED):
        raise UnsupportedError(
            f"messages.msgpack uses compression method {header.method}; recover reads "
            "stored and deflated members"
        )
    deflated = header.method == ZIP_DEFLATED
    start = header.size
    available = len(mm) - start
    # A size of 0 means the writer never finalised the header: read to the end of the file.
    size = header.compressed_size
    if 0 < size <= available:
        return start, size, deflated
    return start, available, deflated


@contextlib.contextmanager
def _inflated(mm: mmap.mmap, start: int, size: int) -> Iterator[tuple[mmap.mmap, int]]:
    """The raw-deflate data `mm[start:start+size]` inflated as far as it goes (a killed
    writer's stream just stops; damage stops it too), mapped from a temporary file."""
    inflater = zlib.decompressobj(-zlib.MAX_WBITS)
    with tempfile.TemporaryFile(prefix=".nanorec-recover-") as spool:
        produced = 0
        position = start
        try:
            while not inflater.eof and (position < start + size or inflater.unconsumed_tail):
                data = inflater.unconsumed_tail
                if not data:
                    data = mm[position : min(position + _READ_SIZE, start + size)]
                    position += len(data)
                chunk = inflater.decompress(data, 4 * _READ_SIZE)
                spool.write(chunk)
                produced += len(chunk)
        except zlib.error:
            pass  # damage: keep what came before it
        spool.flush()
        if not produced:
            with mmap.mmap(-1, 1) as empty:
                yield empty, 0
            return
        with mmap.mmap(spool.fileno(), 0, access=mmap.ACCESS_READ) as inflated:
            yield inflated, produced


def recover(
    source: str | os.PathLike[str],
    output: str | os.PathLike[str],
    *,
    overwrite: bool = False,
    flags_of: Callable[[dict[str, Payload]], int] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> RecoverResult:
    """Rebuild a complete archive at `output` from the (partial or damaged) file `source`.

    `source` is typically `.<name>.partial`, left by a killed `ArchiveWriter`. Every message
    completely written is kept, byte for byte, with its timestamp from `"nanorec.t"`.
    `flags_of(message)` recomputes each message's flags (they are otherwise 0).
    `progress(done_bytes, total_bytes)` is called now and then.

    Raises `ArchiveError` when `source` is no zip at all (a native recording: it wants
    `convert`), `TruncatedError`/`ArchiveError` when it holds no messages member at all,
    `UnsupportedError` for another compression, `OutputExistsError` if `output` exists and
    `overwrite` is false, `UsageError` if `output` is `source`; `OSError` passes through.
    """
    source_path = Path(source)
    output_path = Path(output)
    if output_path.exists() and output_path.resolve() == source_path.resolve():
        raise UsageError(f"{output_path} is the input: recover cannot write over it")
    with open(source_path, "rb") as file:
        file_size = os.fstat(file.fileno()).st_size
        if file_size == 0:
            raise TruncatedError(f"{source_path} is empty", offset=0, actual=0)
        with contextlib.ExitStack() as stack:
            mm = stack.enter_context(mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ))
            start, size, deflated = _locate_messages(mm, str(source_path))
            if deflated:
                mm, size = stack.enter_context(_inflated(mm, start, size))
                start = 0
            writer = ArchiveWriter(
                output_path,
                overwrite=overwrite,
                source_format="nanorec-recovered",
                source={"recovered_from": source_path.name, "recovered_from_size": file_size},
            )
            crcs = _recorded_crcs(source_path)
            with writer:
                result = _copy_messages(mm, start, size, writer, flags_of, progress, crcs)
                writer.source.update(
                    unknown_timestamps=result[1],
                    stop_reason=result[3],
                    messages=result[0],
                    failed_checksums=result[4],
                )
    messages, unknown, kept, reason, failed = result
    return RecoverResult(
        output=output_path,
        messages=messages,
        unknown_timestamps=unknown,
        recovered_bytes=kept,
        discarded_bytes=size - kept,
        stop_reason=reason,
        failed_checksums=failed,
    )


def _recorded_crcs(source: Path) -> dict[int, int]:
    """Offset -> CRC-32 of each message, when `source` still has a readable index (a damaged
    archive rather than a killed writer's partial file); else nothing to check against."""
    from nanorec.archive.reader import ArchiveReader

    try:
        with ArchiveReader(source, verify=False) as reader:
            known = reader.index.crc_known
            offsets = reader.index.offset[known].tolist()
            return dict(zip(offsets, reader.index.crc[known].tolist(), strict=True))
    except (NanorecError, OSError):
        return {}


def _copy_messages(
    mm: mmap.mmap,
    start: int,
    size: int,
    writer: ArchiveWriter,
    flags_of: Callable[[dict[str, Payload]], int] | None,
    progress: Callable[[int, int], None] | None,
    crcs: dict[int, int],
) -> tuple[int, int, int, str, int]:
    """Stream-decode messages into `writer`: `(count, unknown timestamps, bytes kept, why,
    messages dropped for failing their recorded CRC-32)`."""
    unpacker = msgpack.Unpacker(
        _Window(mm, start, start + size),
        read_size=min(_READ_SIZE, max(size, 1)),
        max_buffer_size=max(min(size, _MAX_MESSAGE), min(_READ_SIZE, max(size, 1))),
    )
    count = 0
    unknown = 0
    kept = 0
    failed = 0
    timestamp = 0
    reason = "end of data"
    while kept < size:
        try:
            message = unpacker.unpack()
        except msgpack.OutOfData:
            reason = "incomplete message"
            break
        except MSGPACK_ERRORS as error:
            reason = f"undecodable data ({error})"
            break
        end = unpacker.tell()
        expected = crcs.get(kept)
        if expected is not None and zlib.crc32(mm[start + kept : start + end]) != expected:
            failed += 1  # damaged: dropped, never stored with a fresh CRC
            kept = end
            continue
        if type(message) is not dict or not all(type(key) is str for key in message):
            reason = "not a map with str keys"
            break
        embedded = message.pop(TIMESTAMP_KEY, None)
        if type(embedded) is int:
            if embedded < timestamp:
                reason = f"timestamp goes backwards ({embedded} us after {timestamp} us)"
                break
            timestamp = embedded
        else:
            unknown += 1
        flags = flags_of(message) if flags_of is not None else 0
        writer._append(
            mm[start + kept : start + end],
            tuple(message),
            timestamp,
            flags,
            None,
            embed=False,
        )
        kept = end
        count += 1
        if progress is not None and count % _PROGRESS_EVERY == 0:
            progress(kept, size)
    if progress is not None:
        progress(kept, size)
    return count, unknown, kept, reason, failed


__all__ = ["RecoverResult", "recover"]
