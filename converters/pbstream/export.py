"""Archive -> `.pbstream`, byte for byte: magic, each record's size and member (rebuilt from
its payload with Cartographer's settings, or the original member where the rebuild
differed or the record was damaged), then the raw tail of a cut file."""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nanorec.atomic import write_hashed
from nanorec.errors import FormatError
from nanorec.reader import ArchiveReader

from .convert import read_meta, read_tail
from .stream import MAGIC, SIZE, build_member


@dataclass(frozen=True)
class NativeExport:
    output: Path
    size: int
    sha256: str
    records: int
    identical: bool | None


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


def _framed(entries: list[dict[str, Any]]) -> bytes:
    parts = []
    for entry in entries:
        member = member_of(entry)
        parts.append(SIZE.pack(len(member)) + member)
    return b"".join(parts)


_BATCH_BYTES = 1 << 20


def iter_native(reader: ArchiveReader, threads: int | None = None) -> Iterator[bytes]:
    """The native stream of a pbstream archive, in chunks; members are rebuilt on a thread
    pool (zlib releases the GIL), in order."""
    meta = read_meta(reader)
    reader.advise_sequential()
    yield MAGIC
    workers = threads or min(8, os.cpu_count() or 1)
    pending: deque[Future[bytes]] = deque()
    with ThreadPoolExecutor(workers, thread_name_prefix="pbstream-deflate") as pool:
        batch: list[dict[str, Any]] = []
        size = 0
        for number in range(len(reader)):
            if number % 4096 == 4095:
                reader.release_pages()
            _, entry = record_entry(reader[number], number)
            batch.append(entry)
            size += len(entry.get("member") or entry.get("payload") or b"")
            if size >= _BATCH_BYTES:
                pending.append(pool.submit(_framed, batch))
                batch, size = [], 0
                while len(pending) > workers * 2:
                    yield pending.popleft().result()
        if batch:
            pending.append(pool.submit(_framed, batch))
        while pending:
            yield pending.popleft().result()
    yield read_tail(reader, meta)


def export_native(
    reader: ArchiveReader, output: str | os.PathLike[str], *, overwrite: bool = False
) -> NativeExport:
    """Write the original `.pbstream` of `reader` to `output` (atomically)."""
    out = Path(output)
    size, sha = write_hashed(out, iter_native(reader), overwrite=overwrite)
    expected = reader.source_sha256
    return NativeExport(out, size, sha, len(reader), None if expected is None else sha == expected)


__all__ = ["NativeExport", "export_native", "iter_native", "member_of", "record_entry"]
