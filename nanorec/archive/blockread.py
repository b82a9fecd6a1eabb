"""Reading the compact layout's `messages.msgpack` (see `nanorec.archive.blocks`): a message
inflates from the start of its block, found in the block table, up to its end. A pass in
order (`BlockReader.sequential`: export, a full scan) inflates many blocks a call instead:
the blocks are one deflate stream, and an inflater set up per 16 KiB block was a third of
inflating a small recording's messages. ISA-L inflates when it is installed (the `fast`
extra: ~1.5x zlib here)."""

from __future__ import annotations

import bisect
import threading
import zlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from nanorec.archive.deflate import Decompressor, isal_zlib
from nanorec.archive.source import window
from nanorec.archive.zipfile64 import Buffer
from nanorec.errors import ArchiveError, TruncatedError

#: Inflate at least this much per step when a read continues a cached block.
_STEP: Final = 4096
#: A sequential pass inflates blocks this many uncompressed bytes at a time.
_SPAN: Final = 256 << 10
_WBITS: Final = -zlib.MAX_WBITS
_inflater: Callable[[int], Decompressor] = (
    zlib.decompressobj if isal_zlib is None else isal_zlib.decompressobj
)
_ERRORS: Final = (zlib.error,) if isal_zlib is None else (zlib.error, isal_zlib.error)


def _decode(data: object, count: int, what: str) -> list[int]:
    if type(data) is not bytes:
        raise ArchiveError(f"block table: {what} is not bytes")
    inflater = zlib.decompressobj()
    try:
        raw = inflater.decompress(data, 8 * count + 1)
    except zlib.error as error:
        raise ArchiveError(f"block table: {what} does not inflate ({error})") from None
    if len(raw) != 8 * count or not inflater.eof:
        raise ArchiveError(f"block table: {what} does not hold {count} values")
    values: list[int] = np.cumsum(np.frombuffer(raw, "<u8"), dtype="<u8").tolist()
    return values


def _listed(values: Sequence[int] | NDArray[np.int64]) -> list[int]:
    return values.tolist() if isinstance(values, np.ndarray) else list(values)


class _Cached(threading.local):
    """The block a thread read last, partly inflated (sequential reads inflate it once)."""

    block = -1
    start = 0  # the block's uncompressed offset
    out = b""  # its bytes inflated so far (from `start`)
    inflater: Decompressor | None = None


class BlockReader:
    """Random access to the messages of a block-deflated member in `buf`.

    `data_start`/`data_size`: where the member's compressed bytes are; `messages_size`: its
    uncompressed size. Raises `ArchiveError` at construction when the table is malformed or
    does not fit the member. Thread-safe: each thread keeps its own cached block."""

    def __init__(
        self,
        buf: Buffer,
        table: Mapping[str, Any],
        *,
        data_start: int,
        data_size: int,
        messages_size: int,
    ) -> None:
        if table.get("size") != data_size:
            raise ArchiveError(
                f"block table: made for a {table.get('size')!r}-byte stream, messages.msgpack "
                f"holds {data_size} compressed bytes"
            )
        count = table.get("count")
        if type(count) is not int or not 0 <= count <= data_size + 1:
            raise ArchiveError(f"block table: count {count!r} is not a plausible block count")
        offsets = _decode(table.get("offset"), count, "offset")
        starts = _decode(table.get("start"), count, "start")
        self._setup(buf, offsets, starts, data_start, data_size, messages_size, whole=True)

    @classmethod
    def from_rows(
        cls,
        buf: Buffer,
        offsets: Sequence[int] | NDArray[np.int64],
        starts: Sequence[int] | NDArray[np.int64],
        *,
        data_start: int,
        data_size: int,
        messages_size: int,
        whole: bool = True,
    ) -> BlockReader:
        """A reader of the blocks whose uncompressed `offsets` and compressed `starts` are
        given (the paged layout's, `nanorec.archive.pages`): all of them (`whole`), or a run
        of them (one page's: the last one only ends the one before). Raises as the table's."""
        reader = cls.__new__(cls)
        reader._setup(buf, offsets, starts, data_start, data_size, messages_size, whole=whole)
        return reader

    def _setup(
        self,
        buf: Buffer,
        offsets: Sequence[int] | NDArray[np.int64],
        starts: Sequence[int] | NDArray[np.int64],
        data_start: int,
        data_size: int,
        messages_size: int,
        *,
        whole: bool,
    ) -> None:
        for name, values, limit in (
            ("offset", offsets, messages_size),
            ("start", starts, data_size),
        ):
            if len(values) and ((whole and values[0] != 0) or values[-1] >= max(limit, 1)):
                raise ArchiveError(f"block table: {name}s do not start at 0 inside the member")
            try:  # in numpy: a big archive's table has hundreds of thousands of blocks
                steps = np.diff(np.asarray(values, np.int64))
            except (OverflowError, TypeError, ValueError):
                raise ArchiveError(f"block table: {name}s are not offsets") from None
            if bool(np.any(steps <= 0)):
                raise ArchiveError(f"block table: {name}s are not increasing")
        # lists: `bisect` on a list is ~10x faster than on an array (an element each step)
        self._offsets: list[int] = _listed(offsets)
        self._starts: list[int] = _listed(starts)
        if whole and messages_size and not self._offsets:
            raise ArchiveError("block table: no block for a non-empty messages member")
        self._buf = buf
        self._data_start = data_start
        self._data_size = data_size
        self._size = messages_size
        self._cached = _Cached()
        #: Whether reads come in order (a pass over the messages): a miss inflates `_SPAN`.
        self.sequential = False

    @property
    def block_count(self) -> int:
        return len(self._offsets)

    def stored_span(self, offset: int) -> tuple[int, int]:
        """Where the block holding uncompressed byte `offset` lies in the member's stored
        data: `(start, stop)` (what a reader by ranges fetches for it)."""
        block = max(0, bisect.bisect_right(self._offsets, offset) - 1)
        following = block + 1
        stop = self._starts[following] if following < len(self._starts) else self._data_size
        return self._starts[block], stop

    def read(self, offset: int, length: int) -> bytes:
        """The uncompressed bytes `[offset, offset + length)` of the member."""
        cached = self._cached
        begin = offset - cached.start
        end = begin + length
        if begin >= 0 and end <= len(cached.out):  # inflated already (a sequential pass)
            return cached.out[begin:end] if length > 0 else b""
        if length <= 0:
            return b""
        block = bisect.bisect_right(self._offsets, offset) - 1
        begin = offset - self._offsets[block]
        end = begin + length
        if self.sequential or end > self._block_size(block):  # (spanning blocks: not so written)
            return self._read_span(block, begin, end, _SPAN if self.sequential else 0)
        if cached.block != block:
            self.forget()
            inflater = _inflater(_WBITS)
            cached.out = self._inflate(inflater, self._compressed(block), end, block)
            cached.inflater = inflater
            cached.start = self._offsets[block]
            cached.block = block
        elif len(cached.out) < end:
            # a second read in the block (a pass in order): the rest of the block at once,
            # not a call per message
            going = cached.inflater
            assert going is not None  # set with the block it inflates, `forget` unsets both
            rest = self._block_size(block) - len(cached.out)
            cached.out += self._inflate(going, going.unconsumed_tail, rest, block)
        out = cached.out
        if len(out) < end:
            self.forget()
            raise self._short(f"block {block} (the message at {offset})", block, len(out), end)
        return out[begin:end]

    def _block_size(self, block: int) -> int:
        following = self._offsets[block + 1] if block + 1 < len(self._offsets) else self._size
        return following - self._offsets[block]

    def _compressed(self, block: int, last: int | None = None) -> memoryview:
        last = block if last is None else last
        start = self._data_start + self._starts[block]
        following = last + 1
        stop = self._data_start + (
            self._starts[following] if following < len(self._starts) else self._data_size
        )
        return window(self._buf, start, stop)

    def _inflate(
        self, inflater: Decompressor, data: bytes | memoryview, want: int, block: int
    ) -> bytes:
        try:
            out: bytes = inflater.decompress(data, max(want, _STEP))
        except _ERRORS as error:
            self.forget()
            raise ArchiveError(
                f"block {block} of messages.msgpack is damaged ({error})",
                offset=self._data_start + self._starts[block],
            ) from None
        finally:
            if isinstance(data, memoryview):
                data.release()
        return out

    def _read_span(self, block: int, begin: int, end: int, ahead: int) -> bytes:
        """`[begin, end)` of `block` on: the whole blocks from `block` covering `end` and
        `ahead` bytes (a pass: `_SPAN`) inflated in one call and cached."""
        start = self._offsets[block]
        last = bisect.bisect_right(self._offsets, start + max(end, ahead) - 1) - 1
        following = last + 1
        size = (self._offsets[following] if following < len(self._offsets) else self._size) - start
        self.forget()
        data = self._inflate(_inflater(_WBITS), self._compressed(block, last), size, block)
        if len(data) < end:
            raise self._short(f"blocks {block}-{last}", block, len(data), end)
        cached = self._cached
        cached.block, cached.start, cached.out = last, start, data
        return data[begin:end]

    def _short(self, blocks: str, first: int, got: int, end: int) -> TruncatedError:
        """The error for `blocks` (starting at block `first`) inflating to `got` bytes where a
        read needs `end`."""
        return TruncatedError(
            f"messages.msgpack's {blocks} inflated to {got} bytes, short of {end}",
            offset=self._data_start + self._starts[first],
            expected=end,
            actual=got,
        )

    def forget(self) -> None:
        """Drop this thread's cached block."""
        cached = self._cached
        cached.block = -1
        cached.start = 0
        cached.inflater = None
        cached.out = b""


__all__ = ["BlockReader"]
