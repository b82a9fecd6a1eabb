"""The bytes under an `ArchiveFile`: a local file is mapped (`mmap`, zero copy, the kernel's page
cache), an archive elsewhere (S3, HTTP) is a `ByteSource` read by ranges through `RangeBuffer`.

`RangeBuffer` is what the zip parsers and the block reader slice where a local archive gives
them its `mmap`: `len(buf)` and `buf[a:b]`. It keeps a small LRU of fixed pages, asks for only
the pages a slice misses, joins adjacent missing pages into one range, and hands the ranges of
one slice (or of a `prefetch`) to the source together, which fetches them in parallel. A pass in
order (`sequential`, an export) reads ahead in large ranges instead of one page per miss."""

from __future__ import annotations

import mmap
import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from typing import Final, Protocol

#: Bytes a cached page holds: a compact archive's block (at most 16 KiB deflated, less when
#: its messages deflate) is one to three of them. Larger pages moved more than the message:
#: 64 KiB ones cost `read_kind` on one rare kind 2.5 % of the archives' bytes, these 1.7 %.
PAGE: Final = 16 << 10
#: Pages the LRU keeps (16 MiB): reads larger than a quarter of it bypass it.
CACHE_PAGES: Final = 1024
#: A pass in order (`RangeBuffer.sequential`) fetches at least this much per miss.
READ_AHEAD: Final = 8 << 20


class ByteSource(Protocol):
    """Random reads of one immutable object of `size` bytes."""

    @property
    def size(self) -> int: ...

    def read(self, offset: int, length: int) -> bytes:
        """`length` bytes at `offset` (fewer only at the end of the object)."""
        ...

    def read_many(self, ranges: Sequence[tuple[int, int]]) -> list[bytes]:
        """The bytes of each `(offset, length)` in `ranges`, fetched together (in parallel
        where the source can)."""
        ...

    def close(self) -> None: ...


class MappedSource:
    """A local file as a `ByteSource`, over its mapping (what a remote source is tested
    against, and what `RangeBuffer`'s bookkeeping costs next to a plain `mmap`)."""

    def __init__(self, buf: mmap.mmap | bytes) -> None:
        self._buf = buf
        self.requests = 0
        self.bytes_read = 0

    @property
    def size(self) -> int:
        return len(self._buf)

    def read(self, offset: int, length: int) -> bytes:
        self.requests += 1
        data = self._buf[offset : offset + length]
        self.bytes_read += len(data)
        return bytes(data)

    def read_many(self, ranges: Sequence[tuple[int, int]]) -> list[bytes]:
        return [self.read(offset, length) for offset, length in ranges]

    def close(self) -> None:
        pass


def _runs(pages: Iterable[int]) -> list[tuple[int, int]]:
    """Sorted page numbers as runs `(first, count)` of adjacent pages."""
    runs: list[tuple[int, int]] = []
    for page in sorted(set(pages)):
        if runs and runs[-1][0] + runs[-1][1] == page:
            runs[-1] = (runs[-1][0], runs[-1][1] + 1)
        else:
            runs.append((page, 1))
    return runs


class RangeBuffer:
    """`source` as a read-only sliceable buffer (`len`, `buf[a:b]` giving `bytes`) with an LRU
    of `PAGE`-byte pages. Thread-safe. `tail`: the object's last bytes when the opener already
    holds them (a suffix request), kept as pages so that the zip's end is not fetched again."""

    def __init__(self, source: ByteSource, *, tail: bytes = b"") -> None:
        self.source = source
        self._size = source.size
        self._pages: OrderedDict[int, bytes] = OrderedDict()
        self._lock = threading.Lock()
        #: Whether reads come in order (a pass): a miss then reads `read_ahead` bytes at once
        #: (`READ_AHEAD`, or less for a pass over a known part of the object).
        self.sequential = False
        self.read_ahead = READ_AHEAD
        start = self._size - len(tail)
        first = -(-start // PAGE)  # the first whole page in the tail
        for page in range(first, -(-self._size // PAGE)):
            begin = page * PAGE - start
            self._pages[page] = tail[begin : begin + PAGE]

    def __len__(self) -> int:
        return self._size

    def __getitem__(self, key: slice) -> bytes:
        start, stop, step = key.indices(self._size)
        if step != 1:
            raise ValueError("RangeBuffer slices take no step")
        if stop <= start:
            return b""
        if stop - start > CACHE_PAGES * PAGE // 4:  # a large read: straight from the source
            return self._read_direct(start, stop)
        first, last = start // PAGE, (stop - 1) // PAGE
        self._fetch(range(first, last + 1))
        with self._lock:
            pages = [self._page(page) for page in range(first, last + 1)]
        data = pages[0] if len(pages) == 1 else b"".join(pages)
        offset = start - first * PAGE
        return data[offset : offset + stop - start]

    def prefetch(self, ranges: Iterable[tuple[int, int]]) -> None:
        """Fetch the pages of every `(offset, length)` in `ranges` together (one parallel
        batch), for reads that follow."""
        wanted: list[int] = []
        for offset, length in ranges:
            stop = min(self._size, offset + max(length, 1))
            if 0 <= offset < stop:
                wanted.extend(range(offset // PAGE, (stop - 1) // PAGE + 1))
        self._fetch(wanted)

    def holds(self, offset: int, length: int) -> bool:
        """Whether `[offset, offset + length)` (cut at the end) is cached: a slice of it
        costs no request."""
        stop = min(self._size, offset + max(length, 1))
        with self._lock:
            return all(
                page in self._pages for page in range(offset // PAGE, (stop - 1) // PAGE + 1)
            )

    def forget(self) -> None:
        """Drop the cached pages (a pass gives back what it read)."""
        with self._lock:
            self._pages.clear()

    def _page(self, page: int) -> bytes:
        data = self._pages[page]
        self._pages.move_to_end(page)
        return data

    def _fetch(self, pages: Iterable[int]) -> None:
        with self._lock:
            missing = [page for page in pages if page not in self._pages]
        if not missing:
            return
        runs = _runs(missing)
        if self.sequential:
            runs = self._ahead(runs)
        ranges = [
            (first * PAGE, min(count * PAGE, self._size - first * PAGE)) for first, count in runs
        ]
        chunks = self.source.read_many(ranges)
        with self._lock:
            for (first, count), chunk in zip(runs, chunks, strict=True):
                for index in range(count):
                    self._pages[first + index] = chunk[index * PAGE : (index + 1) * PAGE]
                    self._pages.move_to_end(first + index)
            limit = max(CACHE_PAGES, len(missing))  # a slice's own pages stay until it is read
            while len(self._pages) > limit:
                self._pages.popitem(last=False)

    def _ahead(self, runs: list[tuple[int, int]]) -> list[tuple[int, int]]:
        """`runs` each extended over the missing pages after it, up to `read_ahead`."""
        pages = -(-self._size // PAGE)
        out: list[tuple[int, int]] = []
        for first, count in runs:
            if out and first < out[-1][0] + out[-1][1]:
                continue  # covered by the run before, extended
            end = first + count
            with self._lock:
                while (
                    end - first < self.read_ahead // PAGE and end < pages and end not in self._pages
                ):
                    end += 1
            out.append((first, end - first))
        return out

    def _read_direct(self, start: int, stop: int) -> bytes:
        step = READ_AHEAD
        ranges = [(offset, min(step, stop - offset)) for offset in range(start, stop, step)]
        return b"".join(self.source.read_many(ranges))


def window(buf: object, start: int, stop: int) -> memoryview:
    """`buf[start:stop]` as a memoryview: without a copy from a mapping or bytes, fetched (a
    copy) from a `RangeBuffer`."""
    if isinstance(buf, RangeBuffer):
        return memoryview(buf[start:stop])
    return memoryview(buf)[start:stop]  # type: ignore[arg-type]


__all__ = ["CACHE_PAGES", "PAGE", "ByteSource", "MappedSource", "RangeBuffer", "window"]
