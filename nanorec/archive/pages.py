"""The paged layout: the columnar index, and a compact archive's block table, cut into pages
that are read one at a time (issue 36: archives read in place by ranges).

Why: in the description of format_version 1 the columns and the block table are each one
deflated blob (tens of MB at 10 M messages), all of it fetched before message N of an archive
on S3. Here the columns of every `PAGE_MESSAGES` messages, with the block-table rows of the
blocks those messages lie in (and the block after them, whose start ends the last one), are
one page, compressed on its own as a columns map like the description's
(`nanorec.archive.describe.parse_columns`). The pages lie back to back in the stored member
`nanorec.pages`; the page table (per page: where it lies, its size, its first message's byte
offset, its first block and block count, its least and greatest time) is the description's
`pages` field, and the description is written last, right before the central directory: the
suffix a remote open reads holds the end records, the central directory and the page table,
and message N then costs one page and one block. The table also records where the data of
`messages.msgpack` and of `nanorec.pages` start, so that no local header is fetched.

Why this design is the least disruptive: `messages.msgpack` and `index.msgpack` are unchanged
(NanoVer's reader iterates them and ignores `nanorec.*` members), and the pages replace the
description's whole columns, so the index is not stored a second time (the page table and the
per-page block rows cost ~0.1 % of a 100-byte-message archive). An archive without `pages`
(format_version 1, every archive before this layout) is read as before.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Final

import msgpack
import numpy as np
from numpy.typing import NDArray

from nanorec.archive.describe import (
    COLUMN_KINDS,
    DELTA_ZLIB,
    RAW,
    REQUIRED_COLUMNS,
    ZLIB,
    encoded_column,
    parse_columns,
)
from nanorec.archive.index import Index, TypesTable
from nanorec.archive.members import Member
from nanorec.archive.spool import IndexSpool
from nanorec.archive.wire import MESSAGES_MEMBER
from nanorec.errors import PageError

#: The member holding the pages.
MEMBER_NAME: Final = "nanorec.pages"
#: Messages a page holds (the last one fewer). Measured on 10 M messages of 100 bytes
#: (bench/bench_remote.py): a page is ~4.3 bytes a message (the CRCs, 4, do not deflate), so
#: 16 Ki messages make ~70 KiB pages: a cold read of one message moves the 256 KiB tail, one
#: page and one block (~350 KiB, under the 512 KiB budget, where 64 Ki pages of ~280 KiB
#: would not fit), and a 10 M-message page table is ~20 KiB of the tail.
PAGE_MESSAGES: Final = 16 << 10
#: The most a page may claim (checked before it is read): far above any page written here.
MAX_PAGE_BYTES: Final = 64 << 20
#: Local header: 30 fixed bytes, then name and extra field (at most 64 KiB).
_LOCAL_FIXED: Final = 30
_TABLE_KINDS: Final = {
    "at": "u",
    "size": "u",
    "first_offset": "u",
    "first_block": "u",
    "blocks": "u",
    "min_us": "i",
    "max_us": "i",
}
_BLOCK_KINDS: Final = {"offset": "u", "start": "u"}


def _fail(message: str, offset: int | None = None) -> PageError:
    return PageError(f"{MEMBER_NAME}: {message}", offset=offset)


# -- writing ---------------------------------------------------------------------------------


class PageWriter:
    """Cuts the spooled index rows (and the block table of a compact archive) into pages:
    `pages()` yields each page's bytes, in order (the member's data); then `table(...)` is the
    description's `pages` field."""

    def __init__(
        self,
        index: IndexSpool,
        *,
        count: int,
        types_count: int,
        length_dtype: np.dtype[Any],
        types_dtype: np.dtype[Any],
        flags_dtype: np.dtype[Any] | None,
        block_offsets: Sequence[int] = (),
        block_starts: Sequence[int] = (),
        page_messages: int | None = None,
        fast: bool = False,
    ) -> None:
        self._index = index
        self._count = count
        self._dtypes = (length_dtype, types_dtype, flags_dtype)
        self._blocks = (list(block_offsets), list(block_starts))
        # (None: the module's, read now, so that a test may set smaller pages)
        self._page_messages = PAGE_MESSAGES if page_messages is None else page_messages
        self._fast = fast
        self._rows: dict[str, list[int]] = {name: [] for name in _TABLE_KINDS}
        self.types_counts = np.zeros(types_count, np.int64)
        self.is_sorted = True

    def _slices(self) -> Iterator[dict[str, NDArray[Any]]]:
        """The spooled columns, a page's rows at a time."""
        held: list[dict[str, NDArray[Any]]] = []
        rows = 0
        for columns, _ in self._index.chunks():
            held.append(columns)
            rows += len(columns["length"])
            while rows >= self._page_messages:
                joined = {name: np.concatenate([c[name] for c in held]) for name in held[0]}
                yield {name: values[: self._page_messages] for name, values in joined.items()}
                rest = {name: values[self._page_messages :] for name, values in joined.items()}
                held, rows = [rest], rows - self._page_messages
        if rows:
            yield {name: np.concatenate([c[name] for c in held]) for name in held[0]}

    def pages(self) -> Iterator[bytes]:
        length_dtype, types_dtype, flags_dtype = self._dtypes
        offsets, starts = self._blocks
        at = first_offset = 0
        last_time: int | None = None
        for columns in self._slices():
            length = columns["length"].astype(length_dtype)
            stamps = columns["timestamp_us"].astype("<i8")
            types = columns["types"].astype(types_dtype)
            self.types_counts += np.bincount(types, minlength=len(self.types_counts))[
                : len(self.types_counts)
            ]
            if last_time is not None and int(stamps[0]) < last_time:
                self.is_sorted = False
            if len(stamps) > 1 and bool(np.any(stamps[1:] < stamps[:-1])):
                self.is_sorted = False
            last_time = int(stamps[-1])
            spec: dict[str, Any] = {
                "length": encoded_column("length", length, ZLIB, fast=self._fast),
                "timestamp_us": encoded_column("timestamp_us", stamps, DELTA_ZLIB, fast=self._fast),
                "crc": encoded_column("crc", columns["crc"].astype("<u4"), RAW),
                "types": encoded_column("types", types, ZLIB, fast=self._fast),
            }
            if flags_dtype is not None:
                flags = columns["flags"].astype(flags_dtype)
                spec["flags"] = encoded_column("flags", flags, ZLIB, fast=self._fast)
            end = first_offset + int(length.sum(dtype=np.int64))
            page: dict[str, Any] = {"columns": spec}
            first_block = count = 0
            if offsets:
                first_block = bisect.bisect_right(offsets, first_offset) - 1
                # its blocks, and the next one: its start ends the page's last block
                stop = min(len(offsets), bisect.bisect_right(offsets, end - 1) + 1)
                count = stop - first_block
                page["blocks"] = {
                    "offset": encoded_column(
                        "offset", np.array(offsets[first_block:stop], "<u8"), DELTA_ZLIB
                    ),
                    "start": encoded_column(
                        "start", np.array(starts[first_block:stop], "<u8"), DELTA_ZLIB
                    ),
                }
            data: bytes = msgpack.packb(page)
            for name, value in (
                ("at", at),
                ("size", len(data)),
                ("first_offset", first_offset),
                ("first_block", first_block),
                ("blocks", count),
                ("min_us", int(stamps.min())),
                ("max_us", int(stamps.max())),
            ):
                self._rows[name].append(value)
            at += len(data)
            first_offset = end
            yield data

    def table(
        self, *, local_header: int, data_start: int, messages_at: tuple[int, int]
    ) -> dict[str, Any]:
        """The description's `pages` field, once `pages()` is exhausted: `local_header` and
        `data_start` of the pages member, `messages_at` the data start and stored size of
        `messages.msgpack` (the stream the block rows describe)."""
        columns = {
            name: encoded_column(
                name,
                np.array(values, "<i8" if kind == "i" else "<u8"),
                DELTA_ZLIB if name in ("at", "first_offset", "first_block") else ZLIB,
            )
            for (name, kind), values in zip(_TABLE_KINDS.items(), self._rows.values(), strict=True)
        }
        return {
            "member": MEMBER_NAME,
            "page_messages": self._page_messages,
            "count": len(self._rows["at"]),
            "block_count": len(self._blocks[0]),
            "local_header": local_header,
            "data_start": data_start,
            "messages_data_start": messages_at[0],
            "messages_stored_size": messages_at[1],
            "sorted": self.is_sorted,
            "types_counts": self.types_counts.tolist(),
            "table": columns,
        }


# -- reading ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Page:
    """One page read: its messages' index (absolute offsets) and its block-table rows."""

    number: int
    first: int
    index: Index
    block_offsets: list[int]
    block_starts: list[int]


class PageTable:
    """The `pages` field of a description, checked against the archive: what each page
    holds and where. Raises `ArchiveError` naming what is wrong."""

    def __init__(
        self,
        field: object,
        *,
        message_count: int,
        messages_size: int,
        types_table: TypesTable,
        member_size: int,
    ) -> None:
        if type(field) is not dict:
            raise _fail("the page table is not a map")
        per = field.get("page_messages")
        if type(per) is not int or not 1 <= per <= 1 << 30:
            raise _fail(f"page_messages is {per!r}")
        pages = field.get("count")
        if type(pages) is not int or pages != -(-message_count // per):
            raise _fail(f"{pages!r} pages for {message_count} messages of {per} a page")
        blocks = field.get("block_count")
        if type(blocks) is not int or blocks < 0:
            raise _fail(f"block_count is {blocks!r}")
        raw = field.get("table")
        if type(raw) is not dict:
            raise _fail("the page table has no columns")
        table = parse_columns(raw, pages, _TABLE_KINDS, _fail)
        if len(table) != len(_TABLE_KINDS):
            raise _fail(f"page table columns {sorted(set(_TABLE_KINDS) - set(table))} missing")
        self.page_messages = per
        self.pages = pages
        self.message_count = message_count
        self.messages_size = messages_size
        self.block_count = blocks
        self.types_table = types_table
        self.sorted = field.get("sorted") is True
        counts = field.get("types_counts")
        if type(counts) is not list or len(counts) != len(types_table):
            raise _fail("types_counts does not number the types table")
        if not all(type(c) is int and c >= 0 for c in counts) or sum(counts) != message_count:
            raise _fail(f"types_counts do not add up to {message_count} messages")
        self.types_counts: list[int] = counts
        at, size = table["at"].astype(np.int64), table["size"].astype(np.int64)
        self.at, self.size = at, size
        self.first_offset = table["first_offset"].astype(np.int64)
        self.first_block = table["first_block"].astype(np.int64)
        self.blocks = table["blocks"].astype(np.int64)
        self.min_us = table["min_us"].astype(np.int64)
        self.max_us = table["max_us"].astype(np.int64)
        if pages:
            if int(size.max()) > MAX_PAGE_BYTES:
                page = int(np.argmax(size))
                raise _fail(f"page {page} claims {int(size[page])} bytes, more than a page holds")
            ends = at + size
            if at[0] != 0 or bool(np.any(at[1:] != ends[:-1])) or ends[-1] != member_size:
                raise _fail(f"pages do not lie back to back over its {member_size} bytes")
            first = self.first_offset
            if (
                first[0] != 0
                or bool(np.any(first[1:] <= first[:-1]))
                or first[-1] >= max(messages_size, 1)
            ):
                raise _fail("the pages' first offsets do not rise inside messages.msgpack")
            if bool(np.any(self.first_block + self.blocks > blocks)) or (
                blocks and bool(np.any(self.blocks < 1))
            ):
                raise _fail(f"a page's blocks run past the {blocks} blocks")
        #: Whether the block rows describe the messages member as it is stored (another zip
        #: tool deflating it again leaves them void).
        self.blocks_fit = True

    def page_of(self, number: int) -> int:
        return number // self.page_messages

    def span(self, page: int) -> tuple[int, int]:
        """Where page `page` lies in the pages member's data: `(offset, length)`."""
        return int(self.at[page]), int(self.size[page])

    def page_at_time(self, t_us: int) -> int | None:
        """The page holding the last message at or before `t_us` (a sorted archive), or None
        when every message is later."""
        page = int(np.searchsorted(self.min_us, t_us, side="right")) - 1
        return page if page >= 0 else None

    def parse(self, page: int, data: bytes, base: int = 0) -> Page:
        """Page `page` from its bytes (the pages member's data starting at byte `base` of the
        file, for messages). Raises `PageError` naming the page and its byte offset when it is
        damaged or disagrees with the table."""
        start, size = self.span(page)
        start += base
        if len(data) != size:
            raise _fail(f"page {page} at byte {start} holds {len(data)} of its {size} bytes", start)

        def fail(message: str) -> PageError:
            return _fail(f"page {page} at byte {start}: {message}", start)

        try:
            decoded = msgpack.unpackb(data)
        except (ValueError, TypeError, msgpack.UnpackException) as error:
            raise fail(f"not valid msgpack ({error})") from None
        if type(decoded) is not dict or type(decoded.get("columns")) is not dict:
            raise fail("not a page map")
        first = page * self.page_messages
        count = min(self.page_messages, self.message_count - first)
        columns = parse_columns(decoded["columns"], count, COLUMN_KINDS, fail)
        missing = [name for name in REQUIRED_COLUMNS if name not in columns]
        if missing:
            raise fail(f"columns {missing} are missing")
        types = columns["types"]
        if int(types.max()) >= len(self.types_table):
            raise fail("a types code points past types_table")
        stamps = columns["timestamp_us"].astype(np.int64, copy=False)
        if int(stamps.min()) != self.min_us[page] or int(stamps.max()) != self.max_us[page]:
            raise fail("its times disagree with the page table")
        length = columns["length"].astype(np.int64, copy=False)
        base = int(self.first_offset[page])
        end = int(self.first_offset[page + 1]) if page + 1 < self.pages else self.messages_size
        if base + int(length.sum()) != end:
            raise fail(f"its lengths do not reach the next page's first offset {end}")
        flags = columns.get("flags")
        index = Index(
            offset=base + np.cumsum(length) - length,
            length=length,
            timestamp_us=stamps,
            crc=columns["crc"],
            crc_known=np.broadcast_to(np.True_, count),
            flags=(
                np.broadcast_to(np.uint64(0), count)
                if flags is None
                else flags.astype(np.uint64, copy=False)
            ),
            types_code=types,
            types_table=self.types_table,
        )
        offsets: list[int] = []
        starts: list[int] = []
        if self.block_count:
            raw = decoded.get("blocks")
            if type(raw) is not dict:
                raise fail("its block rows are missing")
            rows = parse_columns(raw, int(self.blocks[page]), _BLOCK_KINDS, fail)
            if len(rows) != 2:
                raise fail("its block rows are missing")
            offsets, starts = rows["offset"].tolist(), rows["start"].tolist()
            if offsets[0] > base or (len(offsets) > 1 and offsets[1] <= base):
                raise fail(f"its first block does not hold its first message (at {base})")
        return Page(page, first, index, offsets, starts)

    def whole(
        self, data: bytes, base: int = 0
    ) -> tuple[dict[str, NDArray[Any]], list[int], list[int]]:
        """Every page, from the member's bytes `data` (at byte `base` of the file): the
        columns joined, and the whole block table (offsets, starts). Raises as `parse`."""
        parts = [
            self.parse(page, data[int(a) : int(a + s)], base)
            for page, (a, s) in enumerate(zip(self.at.tolist(), self.size.tolist(), strict=True))
        ]
        columns: dict[str, NDArray[Any]] = {
            "length": np.zeros(0, np.int64),
            "timestamp_us": np.zeros(0, np.int64),
            "crc": np.zeros(0, np.uint32),
            "types": np.zeros(0, np.uint8),
        }
        if parts:
            indexes = [part.index for part in parts]
            columns = {
                "length": np.concatenate([i.length for i in indexes]),
                "timestamp_us": np.concatenate([i.timestamp_us for i in indexes]),
                "crc": np.concatenate([i.crc for i in indexes]),
                "types": np.concatenate([i.types_code for i in indexes]),
            }
            if any(i.flags.any() for i in indexes):
                columns["flags"] = np.concatenate([i.flags for i in indexes])
        offsets = np.full(self.block_count, -1, np.int64)
        starts = np.full(self.block_count, -1, np.int64)
        for part in parts:
            first = int(self.first_block[part.number])
            stop = first + len(part.block_offsets)
            for target, values in ((offsets, part.block_offsets), (starts, part.block_starts)):
                known = target[first:stop]
                new = np.asarray(values, np.int64)
                if bool(np.any((known >= 0) & (known != new))):
                    raise _fail(f"page {part.number} disagrees with the page before on a block")
                target[first:stop] = new
        if bool(np.any(offsets < 0)):
            raise _fail(f"block {int(np.argmax(offsets < 0))} is in no page")
        return columns, offsets.tolist(), starts.tolist()


def table_of(fields: dict[str, Any], members: dict[str, Member]) -> PageTable:
    """The page table of a paged description's `fields`, checked against the archive's
    `members`. Where the data of `nanorec.pages` and `messages.msgpack` start is taken from
    the table (`Member.place`: a reader by ranges then fetches neither local header) when the
    central directory still agrees with what it records (else another tool rewrote the zip:
    the local headers say). Raises `PageError`."""
    member = members.get(MEMBER_NAME)
    if member is None:
        raise _fail("missing, though the description has a page table")
    messages = members[MESSAGES_MEMBER]
    field = fields["pages"]
    table = PageTable(
        field,
        message_count=fields["message_count"],
        messages_size=messages.header.uncompressed_size,
        types_table=tuple(tuple(types) for types in fields["types_table"]),
        member_size=member.header.uncompressed_size,
    )
    header = member.header
    if member.stored and field.get("local_header") == header.local_header_offset:
        start = _data_start(field.get("data_start"), header.local_header_offset, member)
        if start is not None:
            member.place(start)
    table.blocks_fit = field.get("messages_stored_size") == messages.size
    if table.blocks_fit and messages.header.local_header_offset == 0:
        start = _data_start(field.get("messages_data_start"), 0, messages)
        if start is not None:
            messages.place(start)
    return table


def _data_start(value: object, local: int, member: Member) -> int | None:
    """`value` if it is where `member`'s local header at `local` can end, else None."""
    low = local + _LOCAL_FIXED + len(member.name.encode("utf-8"))
    if type(value) is int and low <= value <= low + 0xFFFF:
        return value
    return None


__all__ = [
    "MAX_PAGE_BYTES",
    "MEMBER_NAME",
    "PAGE_MESSAGES",
    "Page",
    "PageTable",
    "PageWriter",
    "table_of",
]
