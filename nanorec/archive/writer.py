"""`ArchiveWriter`: stream messages into a NanoVer-compatible archive with bounded memory.

Layout of a finished archive (a zip; compact by default: every member deflated, `messages.msgpack`
in independent blocks (see `nanorec.archive.blocks`); `compact=False` stores every member as is, see
`nanorec.archive.layout`):

1. `messages.msgpack` at offset 0: a local header with a zip64 extra (66 bytes, as NanoVer
   writes it) and the packed messages back to back. Each message map ends with the reserved
   entry `"nanorec.t"` = its timestamp in integer microseconds (see `nanorec.archive.wire`).
2. `index.msgpack`: the NanoVer index, one `{offset, length, metadata}` map per message with
   metadata `types`, `timestamp`, `crc` (CRC-32 of the stored message bytes), `f` (the flags,
   only when non-zero), then any caller metadata.
3. `nanorec.pages`: the columnar index (and a compact archive's block table) in pages, each
   compressed on its own (see `nanorec.archive.pages`).
4. Members given to `add_member` (after the pages: small ones lie in a remote reader's tail).
5. `nanorec.msgpack`: the self-description and the page table (see `nanorec.archive.describe`),
   last, so that a remote reader's one suffix range holds it; then the central directory and
   end records (zip64 records only when sizes, offsets or counts need them).
(`paged=False`: the description, with its whole columns, comes third, before the members.)

Crash safety. Output goes to `.<name>.partial` beside the final path (same directory, so the
final `rename` is atomic) and only appears under its final name when complete. Buffered bytes
are flushed at least every 1 MiB, 1024 messages or second (checked on each write; a stored
archive's messages then reach the file from a write-behind thread, at most two flushes later,
see `nanorec.archive.writebehind`; a compact one's blocks once deflated, the open block staying open
until `flush`), so a killed writer leaves a partial file in which every flushed message is
complete and carries its own timestamp; `nanorec recover` rebuilds an archive from it.
Per-message index rows go to an
`IndexSpool` (`nanorec.archive.spool`: bounded memory however many messages are written);
`index.msgpack` and the columns are generated from it at close, with numpy.

This module is the public API and the writer's life (open, write, close or abort). The work is
done by `nanorec.archive.message_stream` (checking and storing messages, their index rows, the flush
policy), `nanorec.archive.closing` (the index, the description and the extra members at close) and
`nanorec.archive.zipout` (the zip file itself: partial file, buffer, headers, fsync, publishing).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Final

import msgpack
import numpy as np

from nanorec._version import __version__
from nanorec.archive import atomic
from nanorec.archive.blocks import BLOCK_BYTES, BlockDeflater
from nanorec.archive.closing import INDEX_MEMBER, write_closing_members
from nanorec.archive.deflate import THREADS
from nanorec.archive.describe import created_utc
from nanorec.archive.layout import compact_default, durable
from nanorec.archive.message_stream import (
    FLUSH_MESSAGES,
    FLUSH_SECONDS,
    MESSAGES_MEMBER,
    MessageStream,
)
from nanorec.archive.spool import IndexSpool
from nanorec.archive.wire import META_LEVEL, pack_meta
from nanorec.archive.zipout import FLUSH_BYTES, ZipOutput, partial_path
from nanorec.errors import UsageError

#: Member names a caller may not use with `add_member` (plus anything starting "nanorec").
RESERVED_MEMBERS: Final = frozenset({MESSAGES_MEMBER, INDEX_MEMBER})

#: Index rows kept in memory before they are spooled to the temporary file.
CHUNK_ROWS: Final = 65536


class ArchiveWriter:
    """Write messages to a new archive at `path` (see the module docstring for the layout).

    Use as a context manager: leaving the block normally closes (finishes) the archive, an
    exception aborts it (the partial file is removed). `source` is copied into the
    self-description and may still be updated through `writer.source` before `close()`.

    `compact` deflates every member (None: the current default, see `nanorec.archive.layout`);
    `block_bytes` is its messages' block size (a read inflates up to one block);
    `deflate_threads` how many threads deflate blocks (default 2; 0: the writing thread, for
    a producer that releases the GIL very often itself, where handing blocks over costs more);
    `precompressed`: most messages carry already-compressed bytes (gzip members), so a small
    block whose sample does not deflate is stored without deflating it whole first.
    `fast_blocks` (with `deflate_threads=0`): the blocks are deflated by one compressor kept
    from block to block, without a sample (`nanorec.archive.blockdeflate.FastBlocks`): for a small
    source, whose per-block set-up otherwise costs as much as its deflate.
    `paged`: the index and block table in pages, the description last (`nanorec.archive.pages`:
    a remote reader's tail holds the page table); False writes format_version 1's whole
    columns, as before the paged layout.

    Raises `OutputExistsError` at construction when `path` (or a partial file left by an
    interrupted write) exists and `overwrite` is false; `OSError` if the directory is not
    writable.
    """

    #: Tests set this to exercise the zip64 central directory and end records on small files.
    _force_zip64: bool = False

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        overwrite: bool = False,
        source_format: str | None = None,
        source: Mapping[str, Any] | None = None,
        producer: str = f"nanorec {__version__}",
        compact: bool | None = None,
        block_bytes: int = BLOCK_BYTES,
        deflate_threads: int | None = None,
        precompressed: bool = False,
        fast_blocks: bool = False,
        paged: bool = True,
    ) -> None:
        self.path = Path(path)
        self.paged = paged
        self.compact = compact_default() if compact is None else compact
        self.durable = durable()
        self._blocks: BlockDeflater | None = None
        if self.compact:
            threads = THREADS if deflate_threads is None else deflate_threads
            self._blocks = BlockDeflater(
                block_bytes, threads, precompressed=precompressed, fast=fast_blocks
            )
        self.partial_path = partial_path(self.path)
        self.overwrite = overwrite
        self.source_format = source_format
        self.source: dict[str, Any] = dict(source or {})
        self.producer = producer
        self._closed = False
        self._created_utc = created_utc()  # before touching any file: a bad value is refused
        self._out = ZipOutput(
            self.path, self.partial_path, overwrite=overwrite, durable=self.durable
        )
        self._index = IndexSpool(self.path.parent, CHUNK_ROWS)
        self._members: dict[str, bytes | Iterable[bytes]] = {}
        self._compress: dict[str, bool] = {}
        #: `index.msgpack` as given (repack copies it) instead of generated from the rows.
        self._index_chunks: Iterable[bytes] | None = None
        try:
            self._stream = MessageStream(self._out, self._index, self._blocks)
        except BaseException:
            self.abort()
            raise

    # -- context manager -------------------------------------------------------------------

    def __enter__(self) -> ArchiveWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()

    # -- public API ------------------------------------------------------------------------

    @property
    def message_count(self) -> int:
        """Messages written so far."""
        return self._stream.count

    @property
    def closed(self) -> bool:
        return self._closed

    def write(
        self,
        message: Mapping[str, Any],
        *,
        timestamp_us: int,
        flags: int = 0,
        metadata: Mapping[str, Any] | None = None,
    ) -> int:
        """Pack `message` and append it; returns its message number (0, 1, ...).

        `timestamp_us` is integer microseconds and must not decrease from one message to the
        next. `flags` is a producer-defined bit set (0 <= flags < 2**64). `metadata` adds keys
        to the message's `index.msgpack` metadata (str keys; not types/timestamp/crc/flags).
        Top-level keys must be str (NanoVer's reader needs str keys at every level) and may
        not be `"nanorec.t"`.

        Raises `ValueError`/`TypeError` for a message or option the format cannot hold.
        """
        if not isinstance(message, Mapping):
            raise TypeError(f"a message must be a mapping, not {type(message).__name__}")
        types = tuple(message)
        try:
            packed = msgpack.packb(message)
        except (TypeError, ValueError, OverflowError) as error:
            raise TypeError(f"message cannot be packed as msgpack: {error}") from None
        if self._closed:
            raise UsageError("the archive writer is closed")
        return self._stream.append(packed, types, timestamp_us, flags, metadata, embed=True)

    def write_packed(
        self,
        packed: bytes,
        *,
        types: Sequence[str],
        timestamp_us: int,
        flags: int = 0,
        metadata: Mapping[str, Any] | None = None,
    ) -> int:
        """Append a message the caller already packed as a msgpack map; returns its number.

        `types` are the map's top-level keys in order. The `"nanorec.t"` timestamp entry is
        added by patching the map header, without decoding the message. Options as for
        `write`. Raises `ValueError` when `packed` is not a map of `len(types)` entries.
        """
        if self._closed:
            raise UsageError("the archive writer is closed")
        return self._stream.append(packed, tuple(types), timestamp_us, flags, metadata, embed=True)

    def write_packed_run(
        self,
        packed: Sequence[bytes],
        *,
        types: Sequence[tuple[str, ...]],
        timestamps_us: Sequence[int],
    ) -> int:
        """`write_packed` for a run of messages at once (no flags, no metadata): one call
        and one table of index rows instead of a call and a tuple per message, for
        converters whose messages differ in size and are too small for the per-call cost
        not to show (pbstream's: ~0.5 KB). Same checks as `write_packed`; returns the number
        of the first message."""
        self._check_open()
        return self._stream.append_run(packed, types, timestamps_us)

    def write_stored_run(
        self,
        stored: Sequence[bytes],
        *,
        types: Sequence[tuple[str, ...]],
        timestamps_us: Sequence[int],
    ) -> int:
        """`write_packed_run` for messages the caller already completed: each of `stored` a
        msgpack map whose last entry is the `"nanorec.t"` timestamp entry
        (`nanorec.archive.wire.timestamp_entry`) of its `timestamps_us` value, and whose other keys
        are its `types` tuple. The bytes are written as given (trusted, as for
        `write_stored_rows`): no patch, no second copy of a large message, one CRC pass. Same
        checks on timestamps and types as `write_packed_run`; returns the number of the
        first message."""
        self._check_open()
        return self._stream.append_stored_run(stored, types, timestamps_us)

    def write_lent_run(
        self,
        messages: Sequence[Sequence[bytes | memoryview]],
        *,
        types: Sequence[tuple[str, ...]],
        timestamps_us: Sequence[int],
    ) -> int:
        """`write_stored_run` for messages given as their pieces (each message the pieces
        joined), lent: they must stay unchanged until the next `flush` or the close. A large
        message is then neither joined nor copied (a camera image read from a mapped bag)."""
        self._check_open()
        return self._stream.append_lent_run(messages, types, timestamps_us)

    def write_joined_run(
        self,
        joined: bytes,
        lengths: np.ndarray[Any, np.dtype[np.int64]],
        *,
        types: Sequence[tuple[str, ...]],
        kinds: np.ndarray[Any, np.dtype[np.int64]],
        timestamps_us: Sequence[int] | np.ndarray[Any, np.dtype[np.int64]],
    ) -> int:
        """`write_stored_run` for messages already joined back to back in `joined`
        (`lengths` bytes each, all > 0), message `i` having the types `types[kinds[i]]`:
        for converters that build a run's messages at once (pbstream's, with numpy). The
        buffer is written as given (trusted, as for `write_stored_run`), in the compact
        layout cut into blocks where one message at a time would cut it; per message only
        its CRC is a Python call. Same checks on timestamps and types; returns the number of
        the first message."""
        self._check_open()
        return self._stream.append_joined(joined, lengths, types, kinds, timestamps_us)

    def write_stored_rows(
        self,
        rows: np.ndarray[Any, np.dtype[np.uint8]],
        timestamps_us: Sequence[int] | np.ndarray[Any, np.dtype[np.int64]],
        *,
        types: Sequence[str],
        flags: int = 0,
    ) -> int:
        """Append one message per row of `rows` (a C-contiguous 2-D uint8 array), each
        already a complete stored message: a msgpack map whose last entry is the `"nanorec.t"`
        timestamp entry (`nanorec.archive.wire.timestamp_entry`) of its `timestamps_us` value.

        For converters that build runs of same-shaped messages with numpy: one call instead
        of one `write_packed` per message, no per-message copy (the rows are written as views
        of `rows`, which the caller must not change afterwards). Only the index rows and the
        CRCs are per message. Same checks on timestamps, flags and types as `write`; the
        caller is trusted for the row contents. Returns the number of the first message.
        """
        self._check_open()
        return self._stream.append_rows(rows, timestamps_us, types, flags)

    def add_member(
        self, name: str, data: bytes | Iterable[bytes], *, compress: bool | None = None
    ) -> None:
        """Add an extra member `name` (written at close): its bytes, or an iterable of byte
        blocks consumed at close (a large member streamed from a file). Deflated in a compact
        archive (bytes only when that makes them smaller) unless `compress` says otherwise.

        Raises `ValueError` for a reserved name (`messages.msgpack`, `index.msgpack`, anything
        starting with "nanorec") or a name already added.
        """
        self._check_open()
        if name in RESERVED_MEMBERS or name.startswith("nanorec") or not name:
            raise UsageError(f"member name {name!r} is reserved")
        if name in self._members:
            raise UsageError(f"member {name!r} was already added")
        self._members[name] = (
            bytes(data) if isinstance(data, bytes | bytearray | memoryview) else data
        )
        self._compress[name] = self.compact if compress is None else compress

    def add_meta(self, name: str, value: Any, *, level: int = META_LEVEL) -> None:
        """Add side member `name` holding `value` (msgpack, zlib-deflated at `level`:
        `wire.pack_meta`), which `ArchiveReader.meta(name)` reads back bounded. Raises as
        `add_member`."""
        self.add_member(name, pack_meta(value, level))

    def flush(self, *, fsync: bool = False) -> None:
        """Write buffered bytes to the partial file (and `fsync` it if asked)."""
        self._stream.flush()
        self._out.drain()
        if fsync:
            self._out.fsync()

    def close(self) -> None:
        """Finish the archive and move it to its final path.

        Writes `index.msgpack`, `nanorec.msgpack`, the extra members, the central directory,
        fsyncs, and renames the partial file. Idempotent. If it fails (disk full...) the
        partial file is left for `nanorec recover` and the error propagates (Ctrl-C or SIGTERM
        remove it). Raises `OutputExistsError` if the final path appeared meanwhile and
        `overwrite` is false.
        """
        if self._closed:
            return
        self._check_open()
        try:
            self._finish()
        except Exception:
            self._close_files()
            self._closed = True
            atomic.release(self.partial_path)  # kept for `nanorec recover`
            raise
        except BaseException:  # Ctrl-C, SIGTERM: leave nothing half-made
            self.abort()
            raise
        self._closed = True
        atomic.release(self.partial_path)

    def abort(self) -> None:
        """Stop writing and remove the partial file. Idempotent."""
        self._closed = True
        if self._blocks is not None:
            self._blocks.close()
        self._close_files()
        with contextlib.suppress(FileNotFoundError):
            self.partial_path.unlink()
        atomic.release(self.partial_path)

    # -- internals -------------------------------------------------------------------------

    def _append(
        self,
        packed: bytes,
        types: tuple[str, ...],
        timestamp_us: int,
        flags: int,
        metadata: Mapping[str, Any] | None,
        *,
        embed: bool,
    ) -> int:
        """Buffer one message and its index row. `embed=False`: stored as given (recover)."""
        if self._closed:
            raise UsageError("the archive writer is closed")
        return self._stream.append(packed, types, timestamp_us, flags, metadata, embed=embed)

    def _check_open(self) -> None:
        if self._closed:
            raise UsageError("the archive writer is closed")

    def _close_files(self) -> None:
        self._out.close()
        self._index.close()

    def _finish(self) -> None:
        out = self._out
        out.force_zip64 = self._force_zip64
        # the messages member's local header first: see MessageStream.finish
        messages_header = self._stream.finish()
        write_closing_members(
            out,
            index=self._index,
            registry=self._stream.registry,
            count=self._stream.count,
            messages_size=messages_header.uncompressed_size,
            index_chunks=self._index_chunks,
            blocks=self._blocks,
            compact=self.compact,
            producer=self.producer,
            created_utc=self._created_utc,
            source_format=self.source_format,
            source=self.source,
            members=self._members,
            compress=self._compress,
            messages_at=(
                (self._stream.data_start, messages_header.compressed_size) if self.paged else None
            ),
        )
        out.write_central_directory()
        self.flush(fsync=self.durable)
        self._close_files()
        self._publish()

    def _publish(self) -> None:
        """Move the finished partial file to its final name, atomically."""
        self._out.publish()


__all__ = [
    "FLUSH_BYTES",
    "FLUSH_MESSAGES",
    "FLUSH_SECONDS",
    "INDEX_MEMBER",
    "MESSAGES_MEMBER",
    "ArchiveWriter",
    "partial_path",
]
