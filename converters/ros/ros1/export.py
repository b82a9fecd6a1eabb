"""Archive -> bag: the original file byte for byte, or a new indexed bag of a selection."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from nanorec.archive.atomic import write_hashed
from nanorec.archive.reader import ArchiveReader
from nanorec.contract import ExportReport
from nanorec.errors import FormatError

from . import compression
from .archived import payload
from .filter import export_selection
from .meta import BagMeta
from .records import pack_u32
from .template import Template


def message_head(
    meta: BagMeta, templates: list[Template], entry: int, number: int, value: Any
) -> bytes:
    """The record of file-order `entry`, archive message `number` (its `value`), up to its
    data (`value["data"]`, which follows)."""
    header = meta.headers.get(entry)
    if header is None:
        template = int(meta.template[number])
        if template < 0 or template >= len(templates):
            raise FormatError(f"archive message {number} has no header template")
        time = int(value["sec"]) * 1_000_000_000 + int(value["nsec"])
        header = templates[template].build(int(value["conn"]), time)
    return b"".join((pack_u32(len(header)), header, pack_u32(len(value["data"]))))


def iter_native(reader: ArchiveReader, meta: BagMeta | None = None) -> Iterator[bytes | memoryview]:
    """The bag of an archive as consecutive pieces of bytes (kept ones are views of the
    archive: nothing is copied twice)."""
    meta = BagMeta(reader) if meta is None else meta
    raw = meta.raw
    templates = [Template(order) for order in meta.orders]
    rank = meta.rank
    reader.advise_sequential()
    for segment in meta.segments:
        if segment[0] == "raw":
            start, length = segment[1:3]
            yield raw[start : start + length]
            continue
        _, (hstart, hlength), kind, mode, entry, runs, inner = segment
        yield raw[hstart : hstart + hlength]
        parts: list[bytes | memoryview] = []
        for run in np.frombuffer(runs, dtype="<i8").tolist():
            if run < 0:
                start, length = inner[-1 - run]
                parts.append(raw[start : start + length])
                continue
            if entry + run > len(rank):
                raise FormatError(f"the chunk layout names message {entry + run} of {len(rank)}")
            for number in rank[entry : entry + run].tolist():
                value = payload(reader, number)
                parts += (message_head(meta, templates, entry, number, value), value["data"])
                entry += 1
            if entry % 8192 < run:
                reader.release_pages()
        data = b"".join(parts)
        yield data if mode == "open" else compression.compress(kind, data)


def export_exact(reader: ArchiveReader, output: Path, *, overwrite: bool) -> ExportReport:
    """The original bag; for an adopted archive (`adopt.py`), which lost the original's
    layout, its messages as a new indexed bag."""
    meta = BagMeta(reader)
    if meta.adopted:
        return export_selection(reader, output, selection=None, overwrite=overwrite)
    meta.check_kept()
    size, sha = write_hashed(output, iter_native(reader, meta), overwrite=overwrite)
    expected = reader.source_sha256
    return ExportReport(
        output, size, sha, len(reader), None if expected is None else sha == expected
    )
