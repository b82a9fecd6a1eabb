"""The paged layout: the columnar index, and a compact archive's block table, cut into pages
that are read one at a time (issue 36: archives read in place by ranges).

Why: in the description of format_version 1 the columns and the block table are each one
deflated blob (tens of MB at 10 M messages), all of it fetched before message N of an archive
on S3. Here the columns of every `PAGE_MESSAGES` messages, with the block-table rows of the
blocks those messages lie in (and the block after them, whose start ends the last one), are
one page, compressed on its own as a columns map like the description's
(`nanorec.archive.describe.parse_columns`). The pages lie back to back in the stored member
`nanorec.pages`; the page table (per page: where it lies, its size, its first message's byte
offset, its first block and block count, its least and greatest time; and `page_types`, a bit
per types code each page holds, added later: a table without it reads as before, a selection
by type then reading every page of its time window) is the description's
`pages` field, and the description is written last, right before the central directory: the
suffix a remote open reads holds the end records, the central directory and the page table,
and message N then costs one page and one block. The table also records where the data of
`messages.msgpack` and of `nanorec.pages` start, so that no local header is fetched.

Why this design is the least disruptive: `messages.msgpack` and `index.msgpack` are unchanged
(NanoVer's reader iterates them and ignores `nanorec.*` members), and the pages replace the
description's whole columns, so the index is not stored a second time (the page table, the
pages' own headers and block rows cost +0.03 % on 1 M messages of 100 bytes, a fixed ~0.5 KB on
a tiny archive: bench/bench_paged.py). An archive without `pages` (format_version 1, every
archive before this layout) is read as before.

This module writes the pages; `nanorec.archive.pagetable` reads and checks the table and each
page, `nanorec.archive.pageread` reads an archive by URL a page at a time.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator, Sequence
from typing import Any, Final

import msgpack
import numpy as np
from numpy.typing import NDArray

from nanorec.archive.describe import (
    DELTA_ZLIB,
    RAW,
    ZLIB,
    encoded_column,
)
from nanorec.archive.spool import IndexSpool
from nanorec.errors import PageError

#: The member holding the pages.
MEMBER_NAME: Final = "nanorec.pages"
#: Messages a page holds (the last one fewer). A page is ~4 bytes a message for messages of
#: 100 bytes (the CRCs do not deflate), so 16 Ki make ~66 KiB pages. Measured over the logging
#: Range server on 500,000 such messages, 30 fresh opens each reading one message (the most
#: moved): 8 Ki a page 336 KiB, 16 Ki 368 KiB, 32 Ki 432 KiB, 64 Ki 560 KiB, past the 512 KiB
#: budget; each in 3 requests, warm reads in at most 2. 16 Ki keeps a margin and half the
#: pages of 8 Ki (the table in the tail: ~6 bytes a page, 7.4 KiB at 20 M messages).
PAGE_MESSAGES: Final = 16 << 10
#: The most a page may claim (checked before it is read): far above any page written here.
MAX_PAGE_BYTES: Final = 64 << 20
#: The most messages a page may hold (a reader's bound on inflating one page's columns).
MAX_PAGE_MESSAGES: Final = 1 << 20
#: The most bytes the per-page types bitmap takes inflated (`page_types`: a bit per types
#: code a page holds, so that a selection by type reads only the pages holding it); past it
#: (thousands of types over thousands of pages) it is left out and such a selection reads
#: every page its time window spans.
MAX_TYPES_BITS: Final = 256 << 10
#: Local header: 30 fixed bytes, then name and extra field (at most 64 KiB).
LOCAL_FIXED: Final = 30
TABLE_KINDS: Final = {
    "at": "u",
    "size": "u",
    "first_offset": "u",
    "first_block": "u",
    "blocks": "u",
    "min_us": "i",
    "max_us": "i",
}
BLOCK_KINDS: Final = {"offset": "u", "start": "u"}


def fail(message: str, offset: int | None = None) -> PageError:
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
        self._rows: dict[str, list[int]] = {name: [] for name in TABLE_KINDS}
        self.types_counts = np.zeros(types_count, np.int64)
        self._present: list[NDArray[np.uint8]] = []  # per page, a bit per types code
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
            counts = np.bincount(types, minlength=len(self.types_counts))[: len(self.types_counts)]
            self.types_counts += counts
            self._present.append(np.packbits(counts > 0, bitorder="little"))
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
            for (name, kind), values in zip(TABLE_KINDS.items(), self._rows.values(), strict=True)
        }
        field: dict[str, Any] = {
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
        width = -(-len(self.types_counts) // 8)
        if self._present and len(self._present) * width <= MAX_TYPES_BITS:
            bits = np.concatenate(self._present).astype(np.uint8)
            field["page_types"] = {"width": width, "bits": encoded_column("bits", bits, ZLIB)}
        return field


__all__ = [
    "BLOCK_KINDS",
    "LOCAL_FIXED",
    "MAX_PAGE_BYTES",
    "MAX_PAGE_MESSAGES",
    "MAX_TYPES_BITS",
    "MEMBER_NAME",
    "PAGE_MESSAGES",
    "TABLE_KINDS",
    "PageWriter",
    "fail",
]
