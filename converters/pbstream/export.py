"""Archive -> `.pbstream`, byte for byte: magic, each record's size and member, then the raw
tail of a cut file. Archives keep every record's gzip member as read, so the export copies
them (byte-exact by construction, no deflate); archives written before that hold payloads,
whose members are rebuilt with Cartographer's settings (a member kept beside its payload
where the rebuild differed), on a thread pool."""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from nanorec.archive.atomic import write_hashed
from nanorec.archive.reader import ArchiveReader
from nanorec.contract import ExportReport
from nanorec.errors import FormatError

from .convert import read_meta, read_tail
from .records import DAMAGED
from .stream import GZIP_HEADER, MAGIC, SIZE, build_member


def record_entry(message: dict[str, Any], number: int) -> tuple[str, dict[str, Any]]:
    """The (kind, entry) of archive message `number`; FormatError when it is not one."""
    if len(message) != 1:
        raise FormatError(f"archive message {number} is not one pbstream record")
    kind, entry = next(iter(message.items()))
    if not isinstance(entry, dict) or not (
        isinstance(entry.get("payload"), bytes) or isinstance(entry.get("member"), bytes)
    ):
        raise FormatError(f"archive message {number} ({kind}) holds no record bytes")
    return kind, entry


def member_of(entry: dict[str, Any]) -> bytes:
    """The gzip member to write for a record entry."""
    member = entry.get("member")
    if isinstance(member, bytes):
        return member
    return build_member(entry["payload"])


def kept_raw(kind: str, entry: dict[str, Any]) -> bool:
    """Whether a (not damaged) record's member is not as Cartographer writes it: a gzip header
    other than its own, or (an archive holding payloads) a member that did not rebuild."""
    member = entry.get("member")
    if kind == DAMAGED or not isinstance(member, bytes):
        return False
    return "payload" in entry or member[:10] != GZIP_HEADER


def _framed(entries: list[dict[str, Any]]) -> bytes:
    parts = []
    for entry in entries:
        member = member_of(entry)
        parts.append(SIZE.pack(len(member)) + member)
    return b"".join(parts)


_BATCH_BYTES = 1 << 20


def iter_native(reader: ArchiveReader, threads: int | None = None) -> Iterator[bytes]:
    """The native stream of a pbstream archive, in chunks, in order; members an old archive
    must rebuild are deflated on a thread pool (zlib releases the GIL)."""
    meta = read_meta(reader)
    reader.advise_sequential()
    yield MAGIC
    workers = threads or min(8, os.cpu_count() or 1)
    pending: deque[Future[bytes]] = deque()
    with ThreadPoolExecutor(workers, thread_name_prefix="pbstream-deflate") as pool:
        batch: list[dict[str, Any]] = []
        size = 0
        rebuild = False  # whether the batch has a payload to deflate (an older archive)
        for number in range(len(reader)):
            if number % 4096 == 4095:
                reader.release_pages()
            _, entry = record_entry(reader[number], number)
            batch.append(entry)
            member = entry.get("member")
            if isinstance(member, bytes):
                size += len(member)
            else:
                size += len(entry["payload"])
                rebuild = True
            if size >= _BATCH_BYTES:
                if rebuild:
                    pending.append(pool.submit(_framed, batch))
                else:  # members to copy: no thread needed, once the earlier ones are out
                    while pending:
                        yield pending.popleft().result()
                    yield _framed(batch)
                batch, size, rebuild = [], 0, False
                while len(pending) > workers * 2:
                    yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
        if batch:
            yield _framed(batch)
    yield read_tail(reader, meta)


def export_native(
    reader: ArchiveReader, output: str | os.PathLike[str], *, overwrite: bool = False
) -> ExportReport:
    """Write the original `.pbstream` of `reader` to `output` (atomically); the contract's
    report (`identical`: None when the archive records no source hash)."""
    out = Path(output)
    size, sha = write_hashed(out, iter_native(reader), overwrite=overwrite)
    expected = reader.source_sha256
    return ExportReport(out, size, sha, len(reader), None if expected is None else sha == expected)


__all__ = [
    "export_native",
    "iter_native",
    "kept_raw",
    "member_of",
    "record_entry",
]
