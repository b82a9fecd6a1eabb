"""Reading the paged layout's table (`nanorec.archive.pages`): what each page holds and where,
checked against the archive before any page is read (a page's length is bounded by the table,
so a hostile table cannot make a reader allocate), and each page parsed and checked against it.
Every problem is a `PageError` naming the page and its byte offset."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgpack
import numpy as np
from numpy.typing import NDArray

from nanorec.archive.describe import COLUMN_KINDS, REQUIRED_COLUMNS, parse_columns
from nanorec.archive.index import Index, TypesTable
from nanorec.archive.members import Member
from nanorec.archive.pages import (
    BLOCK_KINDS,
    LOCAL_FIXED,
    MAX_PAGE_BYTES,
    MAX_PAGE_MESSAGES,
    MAX_TYPES_BITS,
    MEMBER_NAME,
    TABLE_KINDS,
    fail,
)
from nanorec.archive.wire import MESSAGES_MEMBER
from nanorec.errors import PageError


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
            raise fail("the page table is not a map")
        per = field.get("page_messages")
        # bounded: a page's columns are inflated whole (at most ~50 MiB at this bound)
        if type(per) is not int or not 1 <= per <= MAX_PAGE_MESSAGES:
            raise fail(f"page_messages is {per!r}")
        pages = field.get("count")
        if type(pages) is not int or pages != -(-message_count // per):
            raise fail(f"{pages!r} pages for {message_count} messages of {per} a page")
        blocks = field.get("block_count")
        if type(blocks) is not int or not 0 <= blocks <= message_count:  # >= 1 message a block
            raise fail(f"block_count is {blocks!r} for {message_count} messages")
        if pages > member_size:  # a page is at least one byte: before the table is inflated
            raise fail(f"{pages} pages cannot lie in its {member_size} bytes")
        raw = field.get("table")
        if type(raw) is not dict:
            raise fail("the page table has no columns")
        table = parse_columns(raw, pages, TABLE_KINDS, fail)
        if len(table) != len(TABLE_KINDS):
            raise fail(f"page table columns {sorted(set(TABLE_KINDS) - set(table))} missing")
        self.page_messages = per
        self.pages = pages
        self.message_count = message_count
        self.messages_size = messages_size
        self.block_count = blocks
        self.types_table = types_table
        self.sorted = field.get("sorted") is True
        counts = field.get("types_counts")
        if type(counts) is not list or len(counts) != len(types_table):
            raise fail("types_counts does not number the types table")
        if not all(type(c) is int and c >= 0 for c in counts) or sum(counts) != message_count:
            raise fail(f"types_counts do not add up to {message_count} messages")
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
                raise fail(f"page {page} claims {int(size[page])} bytes, more than a page holds")
            ends = at + size
            if at[0] != 0 or bool(np.any(at[1:] != ends[:-1])) or ends[-1] != member_size:
                raise fail(f"pages do not lie back to back over its {member_size} bytes")
            first = self.first_offset
            if (
                first[0] != 0
                or bool(np.any(first[1:] <= first[:-1]))
                or first[-1] >= max(messages_size, 1)
            ):
                raise fail("the pages' first offsets do not rise inside messages.msgpack")
            if bool(np.any(self.first_block + self.blocks > blocks)) or (
                blocks and bool(np.any(self.blocks < 1))
            ):
                raise fail(f"a page's blocks run past the {blocks} blocks")
        #: Per page, a bool per types code: whether the page holds a message of it (None: a
        #: table written before `page_types`, every page may hold any).
        self.page_types = _page_types(field.get("page_types"), pages, len(types_table))
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

    def pages_between(
        self, start_us: int | None, end_us: int | None, codes: NDArray[np.bool_] | None = None
    ) -> NDArray[np.int64]:
        """The pages that may hold a message with `start_us <= t <= end_us` (None: unbounded)
        whose types code is one of `codes` (a bool per code; None: any), from the table alone:
        each page's least and greatest time, and its types when the table has them."""
        keep = np.ones(self.pages, np.bool_)
        if start_us is not None:
            keep &= self.max_us >= start_us
        if end_us is not None:
            keep &= self.min_us <= end_us
        if codes is not None and self.page_types is not None:
            keep &= (self.page_types & codes).any(axis=1)
        return np.flatnonzero(keep).astype(np.int64)

    def parse(self, page: int, data: bytes, base: int = 0) -> Page:
        """Page `page` from its bytes (the pages member's data starting at byte `base` of the
        file, for messages). Raises `PageError` naming the page and its byte offset when it is
        damaged or disagrees with the table."""
        columns, offsets, starts = self._columns(page, data, base)
        length = columns["length"]
        index = Index.stored(
            offset=int(self.first_offset[page]) + np.cumsum(length) - length,
            length=length,
            timestamp_us=columns["timestamp_us"],
            crc=columns["crc"],
            flags=columns.get("flags"),
            types_code=columns["types"],
            types_table=self.types_table,
        )
        return Page(page, page * self.page_messages, index, offsets.tolist(), starts.tolist())

    def _columns(
        self, page: int, data: bytes, base: int
    ) -> tuple[dict[str, NDArray[Any]], NDArray[np.int64], NDArray[np.int64]]:
        """Page `page`'s columns (lengths and times as int64) and block rows (int64: a 1 GB
        archive has 228,754 of them, joined by `whole` without a Python int each), checked."""
        start, size = self.span(page)
        start += base
        if len(data) != size:
            raise fail(f"page {page} at byte {start} holds {len(data)} of its {size} bytes", start)

        def bad(message: str) -> PageError:
            return fail(f"page {page} at byte {start}: {message}", start)

        try:
            decoded = msgpack.unpackb(data)
        except (ValueError, TypeError, msgpack.UnpackException) as error:
            raise bad(f"not valid msgpack ({error})") from None
        if type(decoded) is not dict or type(decoded.get("columns")) is not dict:
            raise bad("not a page map")
        first = page * self.page_messages
        count = min(self.page_messages, self.message_count - first)
        columns = parse_columns(decoded["columns"], count, COLUMN_KINDS, bad)
        missing = [name for name in REQUIRED_COLUMNS if name not in columns]
        if missing:
            raise bad(f"columns {missing} are missing")
        types = columns["types"]
        if int(types.max()) >= len(self.types_table):
            raise bad("a types code points past types_table")
        if self.page_types is not None and not bool(self.page_types[page][types].all()):
            raise bad("its types disagree with the page table")
        stamps = columns["timestamp_us"].astype(np.int64, copy=False)
        if int(stamps.min()) != self.min_us[page] or int(stamps.max()) != self.max_us[page]:
            raise bad("its times disagree with the page table")
        length = columns["length"].astype(np.int64, copy=False)
        at = int(self.first_offset[page])
        end = int(self.first_offset[page + 1]) if page + 1 < self.pages else self.messages_size
        if at + int(length.sum()) != end:
            raise bad(f"its lengths do not reach the next page's first offset {end}")
        columns["length"], columns["timestamp_us"] = length, stamps
        offsets = starts = np.zeros(0, np.int64)
        if self.block_count:
            raw = decoded.get("blocks")
            if type(raw) is not dict:
                raise bad("its block rows are missing")
            rows = parse_columns(raw, int(self.blocks[page]), BLOCK_KINDS, bad)
            if len(rows) != 2:
                raise bad("its block rows are missing")
            offsets, starts = _int64(rows["offset"]), _int64(rows["start"])
            if offsets[0] > at or (len(offsets) > 1 and offsets[1] <= at):
                raise bad(f"its first block does not hold its first message (at {at})")
        return columns, offsets, starts

    def whole(
        self, data: bytes, base: int = 0
    ) -> tuple[dict[str, NDArray[Any]], NDArray[np.int64], NDArray[np.int64]]:
        """Every page, from the member's bytes `data` (at byte `base` of the file): the
        columns joined, and the whole block table (offsets, starts). Raises as `parse`."""
        parts = [
            self._columns(page, data[int(a) : int(a + s)], base)
            for page, (a, s) in enumerate(zip(self.at.tolist(), self.size.tolist(), strict=True))
        ]
        columns: dict[str, NDArray[Any]] = {
            "length": np.zeros(0, np.int64),
            "timestamp_us": np.zeros(0, np.int64),
            "crc": np.zeros(0, np.uint32),
            "types": np.zeros(0, np.uint8),
        }
        if parts:
            columns = {name: np.concatenate([part[0][name] for part in parts]) for name in columns}
            if any("flags" in part[0] for part in parts):
                columns["flags"] = np.concatenate(
                    [
                        part[0]["flags"].astype(np.uint64)
                        if "flags" in part[0]
                        else np.zeros(len(part[0]["length"]), np.uint64)
                        for part in parts
                    ]
                )
        offsets = np.full(self.block_count, -1, np.int64)
        starts = np.full(self.block_count, -1, np.int64)
        for page, (_, page_offsets, page_starts) in enumerate(parts):
            first = int(self.first_block[page])
            stop = first + len(page_offsets)
            for target, new in ((offsets, page_offsets), (starts, page_starts)):
                known = target[first:stop]
                if bool(np.any((known >= 0) & (known != new))):
                    raise fail(f"page {page} disagrees with the page before on a block")
                target[first:stop] = new
        if bool(np.any(offsets < 0)):
            raise fail(f"block {int(np.argmax(offsets < 0))} is in no page")
        return columns, offsets, starts


def _int64(values: NDArray[Any]) -> NDArray[np.int64]:
    """A block-row column as int64; a value no offset can be (past 2**63) is a `PageError`,
    not a negative offset."""
    if values.dtype == np.uint64 and len(values) and int(values.max()) >= 1 << 63:
        raise fail("a block row is past any offset")
    return values.astype(np.int64, copy=False)


def table_of(fields: dict[str, Any], members: dict[str, Member]) -> PageTable:
    """The page table of a paged description's `fields`, checked against the archive's
    `members`. Where the data of `nanorec.pages` and `messages.msgpack` start is taken from
    the table (`Member.place`: a reader by ranges then fetches neither local header) when the
    central directory still agrees with what it records (else another tool rewrote the zip:
    the local headers say). Raises `PageError`."""
    member = members.get(MEMBER_NAME)
    if member is None:
        raise fail("missing, though the description has a page table")
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


def _page_types(field: object, pages: int, types: int) -> NDArray[np.bool_] | None:
    """The `page_types` field (a bitmap of `width` bytes a page, a bit per types code) as
    a (pages, types) bool array; None when absent. Raises `PageError` when malformed."""
    if field is None:
        return None
    width = -(-types // 8)
    if type(field) is not dict or field.get("width") != width:
        raise fail(f"page_types is not a map of {width}-byte rows")
    if pages * width > MAX_TYPES_BITS:
        raise fail(f"page_types claims {pages * width} bytes, more than it may hold")
    raw = field.get("bits")
    if type(raw) is not dict:
        raise fail("page_types has no bits")
    bits = parse_columns({"bits": raw}, pages * width, {"bits": "u"}, fail).get("bits")
    if bits is None or bits.dtype.itemsize != 1:
        raise fail("page_types bits are not bytes")
    rows = np.unpackbits(bits.reshape(pages, width), axis=1, bitorder="little")[:, :types]
    present: NDArray[np.bool_] = rows.astype(np.bool_)
    return present


def _data_start(value: object, local: int, member: Member) -> int | None:
    """`value` if it is where `member`'s local header at `local` can end, else None."""
    low = local + LOCAL_FIXED + len(member.name.encode("utf-8"))
    if type(value) is int and low <= value <= low + 0xFFFF:
        return value
    return None


__all__ = ["Page", "PageTable", "table_of"]
