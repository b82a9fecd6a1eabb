"""A paged archive read by URL one page at a time (`nanorec.archive.pages`): message N, its time
and types, and the message at time t, each through one page kept in a small LRU.

It exists apart from `ArchiveFile` because it is the only reader whose index is not in memory
whole: a local archive reads every page at open (milliseconds, and reads then index plain
arrays), a remote one fetches a page (~70 KiB) per message it is asked about, and for a
selection by time or type the pages the page table says may hold one (`select`), until
something needs every message's columns (a pass) and `ArchiveFile.index` reads them all.
A local archive opened with `paged_index=True` is read the same way from its mapping (an
export's pass over 10 M messages, `ArchiveReader.raw_run`, holds a few pages, not ~0.5 GB)."""

from __future__ import annotations

import mmap
import threading
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

import numpy as np
from numpy.typing import NDArray

from nanorec.archive.blockread import BlockReader
from nanorec.archive.index import Index
from nanorec.archive.pagetable import PageTable
from nanorec.archive.source import RangeBuffer

#: Pages kept (each ~70 KiB for messages of 100 bytes: ~4.5 MiB).
PAGE_CACHE: Final = 64
#: Pages kept of a local archive (`paged_index`): its pages are read again at no cost, and a
#: page's columns take ~0.5 MB in memory (~30 MB for 64).
LOCAL_PAGE_CACHE: Final = 8


@dataclass(frozen=True)
class LoadedPage:
    """A page read: its first message's number, its rows, its blocks (compact archives)."""

    first: int
    index: Index
    blocks: BlockReader | None


class LazyPages:
    """The pages of `table` in `buf`, read as asked. `pages_start`: where the data of
    `nanorec.pages` starts; `messages_start`, `messages_stored`, `messages_size`: where the
    data of `messages.msgpack` starts, its stored and uncompressed sizes; `stored`: whether it
    is stored (else its blocks are inflated). Thread-safe."""

    def __init__(
        self,
        buf: RangeBuffer | mmap.mmap,
        table: PageTable,
        *,
        pages_start: int,
        messages_start: int,
        messages_stored: int,
        messages_size: int,
        stored: bool,
        cache: int = PAGE_CACHE,
    ) -> None:
        self.table = table
        self._keep = cache
        self._buf = buf
        self._pages_start = pages_start
        self._messages = (messages_start, messages_stored, messages_size)
        self._stored = stored
        self._cache: OrderedDict[int, LoadedPage] = OrderedDict()
        self._lock = threading.Lock()

    def page(self, page: int) -> LoadedPage:
        """Page `page`, from the LRU or read (one range) and parsed. Raises `PageError`."""
        with self._lock:
            loaded = self._cache.get(page)
            if loaded is not None:
                self._cache.move_to_end(page)
                return loaded
        at, size = self.table.span(page)
        start = self._pages_start + at
        parsed = self.table.parse(page, self._buf[start : start + size], self._pages_start)
        blocks = None
        if not self._stored:
            data_start, data_size, messages_size = self._messages
            blocks = BlockReader.from_rows(
                self._buf,
                parsed.block_offsets,
                parsed.block_starts,
                data_start=data_start,
                data_size=data_size,
                messages_size=messages_size,
                whole=False,
            )
        loaded = LoadedPage(parsed.first, parsed.index, blocks)
        with self._lock:
            self._cache[page] = loaded
            while len(self._cache) > self._keep:
                self._cache.popitem(last=False)
        return loaded

    def of(self, number: int) -> tuple[LoadedPage, int]:
        """The page holding message `number` (in range) and the message's row in it."""
        loaded = self.page(number // self.table.page_messages)
        return loaded, number - loaded.first

    def entry(self, number: int) -> tuple[bytes, int, int]:
        """Message `number` (in range): its stored bytes, its offset in the messages member,
        and its CRC-32."""
        loaded, row = self.of(number)
        offset = loaded.index.offset.item(row)
        length = loaded.index.length.item(row)
        if loaded.blocks is not None:
            data = loaded.blocks.read(offset, length)
        else:
            start = self._messages[0] + offset
            data = self._buf[start : start + length]
        return data, offset, loaded.index.crc.item(row)

    def position_at_time(self, t_us: int) -> int | None:
        """The last message at or before `t_us` in an archive whose times never decrease
        (`table.sorted`): one page, the last whose least time is <= `t_us`."""
        page = self.table.page_at_time(t_us)
        if page is None:
            return None
        loaded = self.page(page)
        position = loaded.index.position_at_time(t_us)
        return None if position is None else loaded.first + position

    def _prefetch(self, pages: Iterable[int]) -> None:
        """Pages about to be read and not cached, fetched together by URL (a local mapping
        needs nothing)."""
        if not isinstance(self._buf, RangeBuffer):
            return
        with self._lock:
            missing = [page for page in pages if page not in self._cache]
        spans = (self.table.span(page) for page in missing)
        self._buf.prefetch((self._pages_start + at, size) for at, size in spans)

    def select(
        self,
        pages: NDArray[np.int64],
        start_us: int | None,
        end_us: int | None,
        codes: NDArray[np.bool_] | None,
    ) -> NDArray[np.int64]:
        """The numbers of the messages with `start_us <= t <= end_us` (None: unbounded) whose
        types code is one of `codes` (a bool per code; None: any), in file order, from
        `pages` (`table.pages_between` of the same bounds: the only pages that may hold
        one), fetched together (one batch of parallel ranges, adjacent pages one range)."""
        self._prefetch(pages.tolist())
        found: list[NDArray[np.int64]] = []
        for page in pages.tolist():
            loaded = self.page(page)
            stamps = loaded.index.timestamp_us
            keep = np.ones(len(stamps), np.bool_)
            if start_us is not None:
                keep &= stamps >= start_us
            if end_us is not None:
                keep &= stamps <= end_us
            if codes is not None:
                keep &= codes[loaded.index.types_code]
            found.append(loaded.first + np.flatnonzero(keep))
        return np.concatenate(found).astype(np.int64) if found else np.zeros(0, np.int64)

    def rows(self, first: int, stop: int) -> Index:
        """The index rows of messages `first` to `stop - 1` (in range, `first < stop`) from
        their pages, fetched together."""
        per = self.table.page_messages
        pages = range(first // per, (stop - 1) // per + 1)
        self._prefetch(pages)
        parts = [self.page(page).index for page in pages]
        base = pages[0] * per
        if len(parts) == 1:
            return parts[0][first - base : stop - base]
        names = ("offset", "length", "timestamp_us", "crc", "crc_known", "flags", "types_code")
        joined = {name: np.concatenate([getattr(part, name) for part in parts]) for name in names}
        return Index(**joined, types_table=self.table.types_table)[first - base : stop - base]

    def clear(self) -> None:
        with self._lock:
            self._cache.clear()


__all__ = ["LOCAL_PAGE_CACHE", "PAGE_CACHE", "LazyPages", "LoadedPage"]
