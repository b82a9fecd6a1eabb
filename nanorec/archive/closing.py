"""The members an `ArchiveWriter` writes at close, after `messages.msgpack`.

It exists so that what the index and the self-description contain, and how they are generated
from the spooled index rows, lives apart from writing messages and from the zip itself:
`index.msgpack` (the NanoVer index, one `{offset, length, metadata}` map per message, generated
chunk by chunk with numpy, or copied as given by repack), `nanorec.msgpack` (the description's
fields and its columns, see `nanorec.archive.describe`), then the members given to `add_member`.
In the paged layout (the default, `nanorec.archive.pages`) `nanorec.pages` (the columns and
block table in pages) comes after the index, then the members, and the description, holding the
page table, comes last: the tail a remote reader fetches first holds it, and the side members a
recording reads at open when they are small (a CARLA archive's: open and frame(n) by URL in 3
requests). Archives written before (members, then pages) read the same, a member outside the
tail costing a request.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Final

import numpy as np

from nanorec.archive.blocks import BlockDeflater
from nanorec.archive.describe import (
    DELTA_ZLIB,
    FORMAT_VERSION,
    RAW,
    ZLIB,
    ColumnSource,
    base_fields,
    iter_description,
)
from nanorec.archive.describe import MEMBER_NAME as DESCRIPTION_MEMBER
from nanorec.archive.index import TypesRegistry, types_code_dtype
from nanorec.archive.index_encode import encode_entries
from nanorec.archive.pages import MEMBER_NAME as PAGES_MEMBER
from nanorec.archive.pages import PageWriter
from nanorec.archive.spool import IndexSpool
from nanorec.archive.wire import INDEX_MEMBER, array_header
from nanorec.archive.zipout import ZipOutput

#: Every member but the messages is deflated the fast way (`nanorec.archive.deflate`: zlib's level
#: 1, or ISA-L when asked): several times faster than level 6 for a few % more of these
#: members, whose level-6 deflate at close was most of what the compact layout cost over the
#: stored one on small recordings (the index of 17,000 messages: 19 of 58 ms). Except for
#: recordings of tiny messages: under `FAST_SOURCE_AT` source bytes a message (a bz2 bag of
#: 29-byte messages has 14.5) the index and tables weigh as much as the messages and the
#: size budget binds, so they keep zlib's level 6. Without the source's size (an archive
#: written through the API) the messages' own bytes count, at `FAST_MESSAGES_AT` a message.
FAST_SOURCE_AT: Final = 40
FAST_MESSAGES_AT: Final = 256


def fast_members(count: int, messages_size: int, source: Mapping[str, Any]) -> bool:
    """Whether the closing members are deflated the fast way (see `FAST_SOURCE_AT`)."""
    source_size = source.get("size")
    if isinstance(source_size, int) and source_size > 0:
        return source_size >= FAST_SOURCE_AT * count
    return messages_size >= FAST_MESSAGES_AT * count


def write_closing_members(
    out: ZipOutput,
    *,
    index: IndexSpool,
    registry: TypesRegistry,
    count: int,
    messages_size: int,
    index_chunks: Iterable[bytes] | None,
    blocks: BlockDeflater | None,
    compact: bool,
    producer: str,
    created_utc: str | None,
    source_format: str | None,
    source: Mapping[str, Any],
    members: Mapping[str, bytes | Iterable[bytes]],
    compress: Mapping[str, bool],
    messages_at: tuple[int, int] | None = None,
) -> None:
    """Write `index.msgpack` (`index_chunks` if given, else generated from `index`), then
    `nanorec.msgpack` (`base_fields` from `producer`, `created_utc`, `source_format`, `source`
    and the sizes; the block table of `blocks`), then `members` (deflated as `compress` says), all
    after the finished messages member of `count` messages, `messages_size` bytes.
    `messages_at` given: the paged layout (see the module docstring); where the messages'
    data starts, and its stored size."""
    index_bytes = index_chunks or iter_index_bytes(index, registry, count, messages_size)
    fast = fast_members(count, messages_size, source)
    index_header = out.write_streamed(INDEX_MEMBER, index_bytes, compress=compact, fast=fast)
    fields = base_fields(
        producer=producer,
        created_utc=created_utc,
        source_format=source_format,
        source=source,
        message_count=count,
        messages_size=messages_size,
        index_size=index_header.uncompressed_size,
        index_crc32=index_header.crc32,
        types_table=tuple(registry.table),
    )

    def side_members() -> None:
        for name, data in members.items():
            if isinstance(data, bytes):
                out.write_whole(name, data, compress=compress[name], fast=fast)
            else:
                out.write_streamed(name, data, compress=compress[name], fast=fast)

    if messages_at is not None:
        pager = page_writer(index, registry, count, blocks, fast=fast)
        pages_at = out.tell()
        out.write_streamed(PAGES_MEMBER, pager.pages())
        fields["format_version"] = FORMAT_VERSION
        fields["pages"] = pager.table(
            local_header=pages_at, data_start=out.last_data_start, messages_at=messages_at
        )
        # after the pages: a recording's small side members (a CARLA archive's header and
        # event tables) lie in the tail a remote open fetches, with the description
        side_members()
        out.write_streamed(
            DESCRIPTION_MEMBER, iter_description(fields, []), compress=compact, fast=fast
        )
        return
    if blocks is not None:
        fields["blocks"] = blocks.table()
    out.write_streamed(
        DESCRIPTION_MEMBER,
        iter_description(fields, description_columns(index, registry, count), fast=fast),
        compress=compact,
        fast=fast,
    )
    side_members()


def page_writer(
    index: IndexSpool,
    registry: TypesRegistry,
    count: int,
    blocks: BlockDeflater | None,
    *,
    fast: bool,
) -> PageWriter:
    """The pages of the spooled rows, in the description's column dtypes."""
    return PageWriter(
        index,
        count=count,
        types_count=len(registry.table),
        length_dtype=_length_dtype(index),
        types_dtype=types_code_dtype(len(registry.table)),
        flags_dtype=_flags_dtype(index.max_flags) if index.max_flags else None,
        block_offsets=() if blocks is None else blocks.offsets,
        block_starts=() if blocks is None else blocks.starts,
        fast=fast,
    )


def iter_index_bytes(
    index: IndexSpool, registry: TypesRegistry, count: int, messages_size: int
) -> Iterator[bytes]:
    """`index.msgpack`, chunk by chunk, from the spooled rows."""
    yield array_header(count)
    packed_types = registry.packed()
    base = 0
    for columns, extra in index.chunks():
        length = columns["length"]
        offset = base + np.cumsum(length) - length
        base += int(length.sum())
        yield encode_entries(
            offset=offset,
            length=length,
            timestamp_us=columns["timestamp_us"],
            crc=columns["crc"],
            flags=columns["flags"],
            types_code=columns["types"],
            types_packed=packed_types,
            extra_count=columns["extra_count"],
            extra_length=columns["extra_length"],
            extra_data=extra,
        )
    if base != messages_size:  # a writer bug, never bad input
        raise AssertionError(f"index covers {base} bytes of {messages_size}")


def description_columns(
    index: IndexSpool, registry: TypesRegistry, count: int
) -> list[ColumnSource]:
    """The description's columnar index, each column in the narrowest dtype that holds it."""

    def column(name: str, dtype: np.dtype[Any], encoding: str) -> ColumnSource:
        chunks = (cols[name].astype(dtype).tobytes() for cols, _ in index.chunks())
        return ColumnSource(name=name, dtype=dtype, count=count, chunks=chunks, encoding=encoding)

    columns = [
        column("length", _length_dtype(index), ZLIB),
        column("timestamp_us", np.dtype("<i8"), DELTA_ZLIB),
        column("crc", np.dtype("<u4"), RAW),
        column("types", types_code_dtype(len(registry.table)), ZLIB),
    ]
    if index.max_flags:
        columns.append(column("flags", _flags_dtype(index.max_flags), ZLIB))
    return columns


def _length_dtype(index: IndexSpool) -> np.dtype[Any]:
    return np.dtype("<u4") if index.max_length <= 0xFFFF_FFFF else np.dtype("<u8")


def _flags_dtype(maximum: int) -> np.dtype[Any]:
    for dtype in ("<u1", "<u2", "<u4"):
        if maximum <= np.iinfo(dtype).max:
            return np.dtype(dtype)
    return np.dtype("<u8")


__all__ = ["INDEX_MEMBER", "description_columns", "iter_index_bytes", "write_closing_members"]
