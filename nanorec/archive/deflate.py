"""The deflate compressors every compact member uses, and the threads that run them.

zlib's level 6 (`LEVEL`) or, asked for with `NANOREC_DEFLATE=isal` and the `fast` extra
installed, ISA-L's level 2 (`ISAL_LEVEL`): the same format (zlib, Python's `zipfile` and
NanoVer inflate it) ~12x faster, a few percent larger, but other bytes. So ISA-L deflates
only when asked: the same input gives the same archive whatever is installed. Inflating and
CRCs, which give the same results either way, use ISA-L whenever it is installed.
Both release the GIL, so the process's two deflating threads (`shared_pool`) run beside the
converter on the other core. `MemberDeflater` deflates a whole member (`index.msgpack`...)
in pieces on those threads; `nanorec.archive.blocks` deflates the messages in blocks on them.
"""

from __future__ import annotations

import importlib
import os
import threading
import zlib
from collections import deque
from typing import TYPE_CHECKING, Final, Protocol

from nanorec.buffers import Buffer

if TYPE_CHECKING:  # imported by the first writer: reading an archive starts no thread
    from concurrent.futures import Future, ThreadPoolExecutor

#: zlib level for every deflated member (6: 16 KiB blocks at level 1 were 12% larger).
LEVEL: Final = 6
#: zlib level where speed pays (`fast`: blocks of larger messages, the closing members of
#: recordings that are not tiny messages) unless ISA-L deflates: twice as fast as level 6,
#: ~3 % larger on CARLA frames (a 100 MB log: 3.5 instead of 7.4 s of CPU).
FAST_LEVEL: Final = 1
#: ISA-L level when `isal` is installed (2: as small as its 3, faster than its 1 here).
ISAL_LEVEL: Final = 2


class Compressor(Protocol):
    """What zlib's and ISA-L's `compressobj` and a `MemberDeflater` share."""

    def compress(self, data: Buffer, /) -> bytes: ...

    def flush(self, mode: int = ..., /) -> bytes: ...


class Decompressor(Protocol):
    """What zlib's and ISA-L's `decompressobj` share (as far as a reader uses it)."""

    def decompress(self, data: Buffer, max_length: int = ..., /) -> bytes: ...

    @property
    def unconsumed_tail(self) -> bytes: ...

    @property
    def unused_data(self) -> bytes: ...

    @property
    def eof(self) -> bool: ...


class ZlibModule(Protocol):
    """The part of zlib's interface ISA-L's `isal_zlib` repeats (and nanorec uses)."""

    error: type[Exception]

    def compress(self, data: Buffer, /, level: int = ..., wbits: int = ...) -> bytes: ...

    def crc32(self, data: Buffer, value: int = ..., /) -> int: ...

    def compressobj(self, level: int = ..., method: int = ..., wbits: int = ...) -> Compressor: ...

    def decompressobj(self, wbits: int = ...) -> Decompressor: ...


def _load_isal() -> ZlibModule | None:
    """ISA-L's zlib-compatible module (optional: the `fast` extra), or None."""
    try:
        return importlib.import_module("isal.isal_zlib")
    except ImportError:  # pragma: no cover - depends on the environment
        return None


#: ISA-L's zlib-compatible module, or None.
isal_zlib: ZlibModule | None = _load_isal()
#: ISA-L's module when it deflates too (`NANOREC_DEFLATE=isal`), else None: zlib deflates.
isal_deflate: ZlibModule | None = (
    isal_zlib if os.environ.get("NANOREC_DEFLATE", "").lower() == "isal" else None
)
#: Threads deflating blocks and member pieces, shared by every writer of the process.
THREADS: Final = 2
_WBITS: Final = -zlib.MAX_WBITS
#: A raw-deflate stream's final empty block, as any compressor's `flush()` after a full flush
#: ends it: a constant, not a compressor set up (~60 us) for two bytes.
FINAL_BLOCK: Final = zlib.compressobj(LEVEL, zlib.DEFLATED, _WBITS).flush(zlib.Z_FINISH)


_pool_lock = threading.Lock()
_pool: tuple[int, ThreadPoolExecutor] | None = None


def shared_pool() -> ThreadPoolExecutor:
    """The process's deflating threads, started once and shared by every writer: starting
    threads per archive cost ~5 ms of a small conversion on a busy machine. A forked child
    (a process pool's worker) makes its own: the parent's threads are not in it."""
    from concurrent.futures import ThreadPoolExecutor  # ~20 ms (logging): not for readers

    global _pool
    with _pool_lock:
        if _pool is None or _pool[0] != os.getpid():
            _pool = (os.getpid(), ThreadPoolExecutor(THREADS, thread_name_prefix="nanorec-zip"))
        return _pool[1]


def deflater(*, fast: bool = False) -> Compressor:
    """A raw-deflate compressor as every compact member uses (zip method 8).

    `fast`: ISA-L's when it deflates (`isal_deflate`), else zlib's level 1. Deflate at zlib's
    level 6 runs at ~20 MB/s a core, most of a compact conversion and a tenth of what an
    MCAP writer's zstd chunks take; ISA-L's level 2 makes the same format (zlib and NanoVer
    inflate it) ~12x faster, 2-6 % larger on CARLA frames, but ~11 % larger on blocks of
    tiny messages (29-byte ROS messages), whose archives the size budget binds: those
    keep zlib (see `nanorec.archive.blocks`).

    Without `fast`, a `MemberDeflater`: zlib's level 6 on both cores (a whole member such as
    `index.msgpack`, ~2 bytes a message, was a tenth of a small-message conversion)."""
    if fast:
        return raw_compressor(fast=True)
    return MemberDeflater()


def zlib_compressor(*, fast: bool) -> Compressor:
    """A compressor of the zlib format (header and Adler-32, as `zlib.compress`): ISA-L's
    when `fast` and it deflates (`isal_deflate`), else zlib's (`FAST_LEVEL` when `fast`)."""
    if fast and isal_deflate is not None:
        return isal_deflate.compressobj(ISAL_LEVEL)
    return zlib.compressobj(FAST_LEVEL if fast else LEVEL)


def raw_compressor(*, fast: bool) -> Compressor:
    """A raw-deflate compressor (zip method 8): ISA-L's when `fast` and it deflates, else
    zlib's (`FAST_LEVEL` when `fast`)."""
    if fast and isal_deflate is not None:
        return isal_deflate.compressobj(ISAL_LEVEL, zlib.DEFLATED, _WBITS)
    return zlib.compressobj(FAST_LEVEL if fast else LEVEL, zlib.DEFLATED, _WBITS)


#: A member is deflated in pieces of this size, each on its own (ended by a sync flush: the
#: pieces joined are one raw-deflate stream), by `THREADS` threads (256 KiB: the index of
#: ten thousand messages is three pieces, so both cores deflate it, for ~0.02 % of size).
_MEMBER_PIECE: Final = 256 << 10


#: A member's pieces past this many bytes are deflated by ISA-L (when installed): a member
#: that large is the index of millions of messages (`index.msgpack`, ~80 bytes a message),
#: whose zlib level 6 took as long as the messages' own conversion; ISA-L's level 2 is ~12x
#: faster for ~15 % more of such a member. Smaller members (every one of a bag whose size
#: budget binds) keep zlib's level 6.
_MEMBER_FAST_AFTER: Final = 8 << 20


def _deflate_piece(data: bytes | memoryview, fast: bool) -> bytes:
    compressor = raw_compressor(fast=fast)
    out: bytes = compressor.compress(data) + compressor.flush(zlib.Z_SYNC_FLUSH)
    return out


class MemberDeflater:
    """zlib's `compressobj` interface (`compress`, `flush`) for one member: the data is cut
    in `_MEMBER_PIECE` pieces deflated by two threads (zlib releases the GIL), in order. A
    piece starts without the previous one's window. Pieces past `_MEMBER_FAST_AFTER` use
    ISA-L."""

    def __init__(self) -> None:
        self._open: list[bytes] = []
        self._size = 0
        self._pending: deque[Future[bytes]] = deque()
        self._done = 0  # bytes handed to the threads

    def compress(self, data: Buffer) -> bytes:
        self._open.append(data if type(data) is bytes else bytes(data))
        self._size += len(data)
        out: list[bytes] = []
        if self._size >= _MEMBER_PIECE:
            joined = b"".join(self._open)  # no copy when it is one chunk
            view = memoryview(joined)
            whole = len(joined) - len(joined) % _MEMBER_PIECE
            for start in range(0, whole, _MEMBER_PIECE):
                self._hand_over(view[start : start + _MEMBER_PIECE])
                out += self._ready(wait=len(self._pending) > 2 * THREADS)
            self._open = [joined[whole:]] if whole < len(joined) else []
            self._size = len(joined) - whole
        out += self._ready(wait=False)
        return b"".join(out)

    def flush(self, mode: int = zlib.Z_FINISH) -> bytes:
        """Everything not returned yet; `Z_FINISH` (the default) ends the stream."""
        rest = b"".join(self._open)
        self._open.clear()
        self._size = 0
        if rest and not self._done:
            out = [_deflate_piece(rest, False)]  # small: no hand-over
        else:
            if rest:
                self._hand_over(rest)
            out = [future.result() for future in self._pending]
            self._pending.clear()
        if mode == zlib.Z_FINISH:
            out.append(FINAL_BLOCK)
        return b"".join(out)

    def _hand_over(self, piece: bytes | memoryview) -> None:
        fast = self._done >= _MEMBER_FAST_AFTER
        self._done += len(piece)
        self._pending.append(shared_pool().submit(_deflate_piece, piece, fast))

    def _ready(self, *, wait: bool) -> list[bytes]:
        """The pieces deflated so far, in order; with `wait`, at least the first one (memory
        held for the threads stays at a few pieces, whatever size a chunk has)."""
        out = []
        while self._pending and (wait or self._pending[0].done()):
            out.append(self._pending.popleft().result())
            wait = False
        return out


__all__ = [
    "FINAL_BLOCK",
    "ISAL_LEVEL",
    "LEVEL",
    "THREADS",
    "Compressor",
    "Decompressor",
    "MemberDeflater",
    "ZlibModule",
    "deflater",
    "isal_deflate",
    "isal_zlib",
    "raw_compressor",
    "shared_pool",
    "zlib_compressor",
]
