"""`repack`: the same archive in the other layout (compact <-> stored), or in the same one
again; either way in the paged layout (`nanorec.archive.pages`: what an archive written before
it needs to be read by URL with a few requests).

The messages, `index.msgpack` and every converter member are copied byte for byte (their
uncompressed bytes: only how they are stored changes), so whatever exported from the input
exports the same from the output. `nanorec.msgpack` and `nanorec.pages` are written afresh
(the index pages and block table of the new layout, the same source fields). An index whose
entries are not back to back in time order (possible in NanoVer files) cannot keep its
offsets: such an archive is refused.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from nanorec.archive.reader import ArchiveReader
from nanorec.archive.writer import INDEX_MEMBER, MESSAGES_MEMBER, ArchiveWriter
from nanorec.errors import UnsupportedError, UsageError

_PROGRESS_EVERY: Final = 65536


@dataclass(frozen=True)
class RepackResult:
    """What `repack` wrote."""

    output: Path
    messages: int
    compact: bool
    input_size: int
    output_size: int


def repack(
    source: str | os.PathLike[str],
    output: str | os.PathLike[str],
    *,
    compact: bool = True,
    overwrite: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> RepackResult:
    """Write the archive `source` to `output` in the compact (or, `compact=False`, stored)
    layout. Each message's CRC-32 is checked on the way.

    Raises `UsageError` when `output` is `source`, `UnsupportedError` for an index whose
    entries are not contiguous and in time order, `OutputExistsError`, and what
    `ArchiveReader` raises for a damaged input (`ChecksumError` names the message).
    """
    source_path, output_path = Path(source), Path(output)
    if output_path.exists() and output_path.resolve() == source_path.resolve():
        raise UsageError(f"{output_path} is the input: repack cannot write over it")
    with ArchiveReader(source_path) as reader:
        index = reader.index
        if not (index.is_contiguous and index.is_sorted):
            raise UnsupportedError(
                f"{source_path}: its index entries are not back to back in time order; repack "
                "keeps offsets, so it cannot rewrite this archive"
            )
        fields = reader.description or {}
        source_fields = fields.get("source")
        format_name = fields.get("source_format")
        writer = ArchiveWriter(
            output_path,
            overwrite=overwrite,
            source_format=format_name if isinstance(format_name, str) else None,
            source=source_fields if isinstance(source_fields, dict) else {},
            compact=compact,
        )
        with writer:
            count = len(reader)
            reader.advise_sequential()
            stamps = index.timestamp_us.tolist()
            flags = index.flags.tolist()
            for number in range(count):
                writer._append(
                    reader.raw(number),
                    index.types(number),
                    stamps[number],
                    flags[number],
                    None,
                    embed=False,
                )
                if progress is not None and number % _PROGRESS_EVERY == 0:
                    progress(number, count)
            # the same index bytes: caller metadata and NanoVer's own fields survive
            writer._index_chunks = reader.member_chunks(INDEX_MEMBER)
            for name in reader.member_names:
                # nanorec's own (the description, the index pages) are written afresh
                if name not in (MESSAGES_MEMBER, INDEX_MEMBER) and not name.startswith("nanorec"):
                    writer.add_member(name, reader.member_chunks(name))
    if progress is not None:
        progress(count, count)
    return RepackResult(
        output=output_path,
        messages=count,
        compact=compact,
        input_size=source_path.stat().st_size,
        output_size=output_path.stat().st_size,
    )


__all__ = ["RepackResult", "repack"]
