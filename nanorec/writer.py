"""`ArchiveWriter`: stream messages into a NanoVer-compatible archive with bounded memory.

Layout of a finished archive (a zip; compact by default: every member deflated,
`messages.msgpack` in independent blocks (see `nanorec.blocks`); `compact=False` stores every
member as is, see `nanorec.layout`):

1. `messages.msgpack` at offset 0: a local header with a zip64 extra (66 bytes, as NanoVer
   writes it) and the packed messages back to back. Each message map ends with the reserved
   entry `"nanorec.t"` = its timestamp in integer microseconds (see `nanorec.wire`).
2. `index.msgpack`: the NanoVer index, one `{offset, length, metadata}` map per message with
   metadata `types`, `timestamp`, `crc` (CRC-32 of the stored message bytes), `f` (the flags,
   only when non-zero), then any caller metadata.
3. `nanorec.msgpack`: the self-description and columnar index (see `nanorec.describe`).
4. Members given to `add_member`, then the central directory and end records (zip64 records
   only when sizes, offsets or counts need them).

Crash safety. Output goes to `.<name>.partial` beside the final path (same directory, so the
final `rename` is atomic) and only appears under its final name when complete. Buffered bytes
reach the file at least every 1 MiB, 1024 messages or second (checked on each write), so a
killed writer leaves a partial file in which every flushed message is complete and carries its
own timestamp; `nanorec recover` rebuilds an archive from it. Per-message index rows go to an
`IndexSpool` (`nanorec.spool`: bounded memory however many messages are written);
`index.msgpack` and the columns are generated from it at close, with numpy.
"""

from __future__ import annotations

import contextlib
import operator
import os
import threading
import time
import zlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from types import TracebackType
from typing import Any, Final

import msgpack
import numpy as np

from nanorec import atomic
from nanorec._version import __version__
from nanorec.blocks import BLOCK_BYTES, BlockDeflater, deflater
from nanorec.crc import crc32, part_crcs
from nanorec.describe import (
    DELTA_ZLIB,
    RAW,
    ZLIB,
    ColumnSource,
    base_fields,
    created_utc,
    iter_description,
)
from nanorec.describe import MEMBER_NAME as DESCRIPTION_MEMBER
from nanorec.errors import FormatError, OutputExistsError, UsageError
from nanorec.index import RESERVED_METADATA, TypesRegistry, encode_entries, types_code_dtype
from nanorec.layout import compact_default, durable
from nanorec.spool import IndexSpool
from nanorec.wire import (
    TIMESTAMP_KEY,
    array_header,
    inflates_acceptably,
    map_header,
    read_map_header,
    timestamp_entry,
)
from nanorec.zipfile64 import DEFLATED, STORED, CentralHeader, EndRecords, LocalHeader

MESSAGES_MEMBER: Final = "messages.msgpack"
INDEX_MEMBER: Final = "index.msgpack"
#: Member names a caller may not use with `add_member` (plus anything starting "nanorec").
RESERVED_MEMBERS: Final = frozenset({MESSAGES_MEMBER, INDEX_MEMBER})

#: Flush buffered output when it reaches this many bytes...
FLUSH_BYTES: Final = 1 << 20
#: ...or this many messages were written since the last flush...
FLUSH_MESSAGES: Final = 1024
#: ...or this many seconds passed since the last flush (checked when a message is written).
FLUSH_SECONDS: Final = 1.0
#: Index rows kept in memory before they are spooled to the temporary file.
CHUNK_ROWS: Final = 65536

#: Start a background fdatasync each time this many more bytes are written.
WRITEBACK_BYTES: Final = 16 << 20

#: Buffers per `os.writev` call (under every system's IOV_MAX).
_IOV_BATCH: Final = 512
_FIXMAP_HEADERS: Final = tuple(bytes((0x80 | count,)) for count in range(16))

_INT64_MIN: Final = -(2**63)
_INT64_MAX: Final = 2**63 - 1
_UINT64_MAX: Final = 2**64 - 1


def partial_path(path: str | os.PathLike[str]) -> Path:
    """Where `ArchiveWriter` writes before the final rename: `.<name>.partial` beside `path`."""
    final = Path(path)
    return final.with_name(f".{final.name}.partial")


class ArchiveWriter:
    """Write messages to a new archive at `path` (see the module docstring for the layout).

    Use as a context manager: leaving the block normally closes (finishes) the archive, an
    exception aborts it (the partial file is removed). `source` is copied into the
    self-description and may still be updated through `writer.source` before `close()`.

    `compact` deflates every member (None: the current default, see `nanorec.layout`);
    `block_bytes` is its messages' block size (a read inflates up to one block);
    `deflate_threads` how many threads deflate blocks (default 2; 0: the writing thread, for
    a producer that releases the GIL very often itself, where handing blocks over costs more).

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
    ) -> None:
        self.path = Path(path)
        self.compact = compact_default() if compact is None else compact
        self.durable = durable()
        self._blocks: BlockDeflater | None = None
        if self.compact:
            self._blocks = (
                BlockDeflater(block_bytes)
                if deflate_threads is None
                else BlockDeflater(block_bytes, deflate_threads)
            )
        self.partial_path = partial_path(self.path)
        self.overwrite = overwrite
        self.source_format = source_format
        self.source: dict[str, Any] = dict(source or {})
        self.producer = producer
        self._closed = False
        self._fd = -1
        self._created_utc = created_utc()  # before touching any file: a bad value is refused
        if not overwrite:
            if self.path.exists():
                raise OutputExistsError(f"{self.path} exists; pass overwrite=True to replace it")
            if self.partial_path.exists():
                raise OutputExistsError(
                    f"{self.partial_path} exists, left by an interrupted write: recover it with "
                    f"`nanorec recover {self.partial_path} -o OUT` or remove it "
                    "(overwrite=True removes it)"
                )
        elif self.partial_path.exists():
            self.partial_path.unlink()
        atomic.claim(self.partial_path)  # before it exists: see nanorec.atomic
        try:
            self._fd = os.open(self.partial_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except OSError:
            atomic.release(self.partial_path)  # not ours
            raise
        # buffered output, written at flush with writev (no joining copy)
        self._parts: list[bytes | memoryview] = []
        self._pending = 0  # bytes in _parts
        self._position = 0  # file offset of the first buffered byte
        self._synced = 0  # bytes a background fdatasync was started for
        self._writeback: threading.Thread | None = None
        self._writeback_error: OSError | None = None
        self._messages_crc = 0
        self._last_flush_count = 0
        self._last_flush_time = time.monotonic()
        self._count = 0
        self._last_timestamp = _INT64_MIN
        self._registry = TypesRegistry()
        self._valid_types: dict[tuple[str, ...], int] = {}
        self._index = IndexSpool(self.path.parent, CHUNK_ROWS)
        self._members: dict[str, bytes | Iterable[bytes]] = {}
        self._compress: dict[str, bool] = {}
        #: `index.msgpack` as given (repack copies it) instead of generated from the rows.
        self._index_chunks: Iterable[bytes] | None = None
        self._central: list[CentralHeader] = []
        self._in_messages = False  # whether flushed bytes belong to messages.msgpack
        try:
            self._messages_header = LocalHeader(
                name=MESSAGES_MEMBER, zip64=True, method=DEFLATED if self.compact else STORED
            )
            self._emit(self._messages_header.build())
            self._messages_start = self._pending
            self.flush()
            self._in_messages = True
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
        return self._count

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
        return self._append(packed, types, timestamp_us, flags, metadata, embed=True)

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
        return self._append(packed, tuple(types), timestamp_us, flags, metadata, embed=True)

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
        count = len(packed)
        if len(types) != count or len(timestamps_us) != count:
            raise UsageError("one types tuple and one timestamp per message are needed")
        first = self._count
        if not count:
            return first
        column = np.asarray(timestamps_us, np.int64)  # OverflowError past 64 bits
        if column[0] < self._last_timestamp or (np.diff(column) < 0).any():
            raise UsageError(f"timestamps must not decrease (messages from {first})")
        valid = self._valid_types
        codes: list[int] = []
        lengths: list[int] = []
        crcs: list[int] = []
        blocks = self._blocks
        parts = self._parts
        embed = self._embed
        headers = _FIXMAP_HEADERS
        for message, key, stamp in zip(packed, types, column.tolist(), strict=True):
            code = valid.get(key)
            if code is None:
                code = self._register_types(tuple(key))
            codes.append(code)
            entries = len(key)
            if message[0] == 0x80 | entries and entries < 15 and len(message) < 4096:
                # `_embed`'s common case inline: one piece, one CRC
                data = b"".join((headers[entries + 1], message[1:], timestamp_entry(stamp)))
                length = len(data)
                crc = crc32(data)
                pieces: tuple[bytes | memoryview, ...] = (data,)
            else:
                pieces = embed(message, entries, stamp)
                length = crc = 0
                for piece in pieces:
                    length += len(piece)
                    crc = crc32(piece, crc)
            lengths.append(length)
            crcs.append(crc)
            if blocks is None:
                parts += pieces
                self._pending += length
            else:
                self._emit_compressed(blocks.add(pieces, length))
        index_lengths = np.array(lengths, np.int64)
        index_crcs = np.array(crcs, np.uint32)
        self._index.extend(index_lengths, column, index_crcs, 0, np.array(codes, np.uint32))
        self._last_timestamp = int(column[-1])
        self._count = first + count
        if (
            self._pending >= FLUSH_BYTES
            or self._count - self._last_flush_count >= FLUSH_MESSAGES
            or time.monotonic() - self._last_flush_time >= FLUSH_SECONDS
        ):
            self.flush()
        return first

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
        timestamp entry (`nanorec.wire.timestamp_entry`) of its `timestamps_us` value.

        For converters that build runs of same-shaped messages with numpy: one call instead
        of one `write_packed` per message, no per-message copy (the rows are written as views
        of `rows`, which the caller must not change afterwards). Only the index rows and the
        CRCs are per message. Same checks on timestamps, flags and types as `write`; the
        caller is trusted for the row contents. Returns the number of the first message.
        """
        self._check_open()
        count, length = rows.shape
        if len(timestamps_us) != count or not rows.flags.c_contiguous:
            raise UsageError("one timestamp per row, and C-contiguous rows, are needed")
        first = self._count
        if not count:
            return first
        column = np.asarray(timestamps_us, np.int64)  # OverflowError past 64 bits
        if column[0] < self._last_timestamp or (np.diff(column) < 0).any():
            raise UsageError(f"timestamps must not decrease (messages from {first})")
        if not 0 <= flags <= _UINT64_MAX:
            raise UsageError(f"flags must be in [0, 2**64), not {flags}")
        key = tuple(types)
        code = self._valid_types.get(key)
        if code is None:
            code = self._register_types(key)
        view = memoryview(rows).cast("B")  # type: ignore[arg-type]
        total = count * length
        pieces = [view[at : at + length] for at in range(0, total, length)]
        if self._blocks is None:
            # one pass for both CRCs: the member's running CRC, then each message's from it
            self.flush()  # buffered parts first: their CRC is taken at flush
            before = running = self._messages_crc
            chain = []
            for piece in pieces:
                running = crc32(piece, running)
                chain.append(running)
            crcs = part_crcs(np.array(chain, np.uint32), before, length)
            self._messages_crc = running
            self._parts.append(view)
            self._pending += total
            self._flush_raw()  # no CRC pass at flush: it is taken
            self._last_flush_count = first + count
            self._last_flush_time = time.monotonic()
        else:  # the same single pass, chained from the block deflater's running CRC
            blocks = self._blocks
            before = running = blocks.crc
            chain = []
            for piece in pieces:
                running = crc32(piece, running)
                chain.append(running)
                self._emit_compressed(blocks.add((piece,), length, running))
            crcs = part_crcs(np.array(chain, np.uint32), before, length)
        self._index.extend(np.full(count, length), column, crcs, flags, code)
        self._last_timestamp = int(column[-1])
        self._count = first + count
        if (
            self._pending >= FLUSH_BYTES
            or self._count - self._last_flush_count >= FLUSH_MESSAGES
            or time.monotonic() - self._last_flush_time >= FLUSH_SECONDS
        ):
            self.flush()
        return first

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

    def flush(self, *, fsync: bool = False) -> None:
        """Write buffered bytes to the partial file (and `fsync` it if asked)."""
        if self._blocks is not None and self._in_messages:
            # the file ends at a block boundary: every flushed message can be inflated
            self._emit_compressed(self._blocks.end_block())
        if self._parts:
            if self._in_messages and self._blocks is None:
                crc = self._messages_crc
                for part in self._parts:
                    crc = crc32(part, crc)
                self._messages_crc = crc
            self._flush_raw()
        self._last_flush_count = self._count
        self._last_flush_time = time.monotonic()
        if fsync:
            self._join_writeback()
            os.fsync(self._fd)

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

    # -- message path ----------------------------------------------------------------------

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
        timestamp = timestamp_us if type(timestamp_us) is int else operator.index(timestamp_us)
        if not self._last_timestamp <= timestamp <= _INT64_MAX:
            if not _INT64_MIN <= timestamp <= _INT64_MAX:
                raise UsageError(f"timestamp {timestamp} us does not fit in 64 bits")
            raise UsageError(
                f"timestamps must not decrease: message {self._count} has {timestamp} us after "
                f"{self._last_timestamp} us"
            )
        flag_bits = flags if type(flags) is int else operator.index(flags)
        if not 0 <= flag_bits <= _UINT64_MAX:
            raise UsageError(f"flags must be in [0, 2**64), not {flag_bits}")
        code = self._valid_types.get(types)
        if code is None:
            code = self._register_types(types)
        extra = self._pack_metadata(metadata) if metadata else b""
        pieces = self._embed(packed, len(types), timestamp) if embed else (bytes(packed),)
        length = 0
        crc = 0
        for piece in pieces:
            length += len(piece)
            crc = crc32(piece, crc)
        if self._blocks is None:
            self._parts += pieces
            self._pending += length
        else:
            self._emit_compressed(self._blocks.add(pieces, length))
        self._index.append(
            (
                length,
                timestamp,
                crc,
                flag_bits,
                code,
                len(metadata) if extra and metadata else 0,
                len(extra),
            ),
            extra,
        )
        self._last_timestamp = timestamp
        number = self._count
        self._count = number + 1
        if (
            self._pending >= FLUSH_BYTES
            or number - self._last_flush_count >= FLUSH_MESSAGES
            or time.monotonic() - self._last_flush_time >= FLUSH_SECONDS
        ):
            self.flush()
        return number

    def _embed(self, packed: bytes, entries: int, timestamp: int) -> tuple[bytes | memoryview, ...]:
        """`packed` with the `"nanorec.t"` entry appended (see `nanorec.wire`), as pieces
        written one after the other (a large message is not copied)."""
        first = packed[0] if packed else 0
        # The common case, a fixmap that stays a fixmap: only the count byte changes.
        if 0x80 <= first <= 0x8E and first - 0x80 == entries:
            if len(packed) < 4096:  # small: one piece (one CRC, one buffer to write)
                return (
                    b"".join(
                        (_FIXMAP_HEADERS[entries + 1], packed[1:], timestamp_entry(timestamp))
                    ),
                )
            return _FIXMAP_HEADERS[entries + 1], memoryview(packed)[1:], timestamp_entry(timestamp)
        try:
            count, header_len = read_map_header(packed)
        except FormatError as error:
            raise UsageError(f"message {self._count}: {error}") from None
        if count != entries:
            raise UsageError(
                f"message {self._count}: the packed map has {count} entries but {entries} "
                "types were given"
            )
        return map_header(count + 1), memoryview(packed)[header_len:], timestamp_entry(timestamp)

    def _register_types(self, types: tuple[str, ...]) -> int:
        for name in types:
            if type(name) is not str:
                raise TypeError(f"top-level keys must be str, not {type(name).__name__}")
            if name == TIMESTAMP_KEY:
                raise UsageError(f"{TIMESTAMP_KEY!r} is a reserved top-level key")
        if len(set(types)) != len(types):
            raise UsageError(f"duplicate top-level keys in {types}")
        code = self._valid_types[types] = self._registry.code(types)
        return code

    def _pack_metadata(self, metadata: Mapping[str, Any]) -> bytes:
        parts = []
        for key, value in metadata.items():
            if type(key) is not str:
                raise TypeError(f"metadata keys must be str, not {type(key).__name__}")
            if key in RESERVED_METADATA:
                raise UsageError(f"metadata key {key!r} is written by nanorec itself")
            try:
                parts.append(msgpack.packb(key) + msgpack.packb(value))
            except (TypeError, ValueError, OverflowError) as error:
                raise TypeError(f"metadata {key!r} cannot be packed: {error}") from None
        return b"".join(parts)

    def _check_open(self) -> None:
        if self._closed:
            raise UsageError("the archive writer is closed")

    # -- low-level output ------------------------------------------------------------------

    def _emit(self, data: bytes) -> None:
        self._parts.append(data)
        self._pending += len(data)
        if self._pending >= FLUSH_BYTES:
            self._flush_raw()

    def _emit_compressed(self, data: list[bytes]) -> None:
        for part in data:
            if part:
                self._parts.append(part)
                self._pending += len(part)

    def _flush_raw(self) -> None:
        parts = self._parts
        for start in range(0, len(parts), _IOV_BATCH):
            batch = parts[start : start + _IOV_BATCH]
            size = sum(len(part) for part in batch)
            done = os.writev(self._fd, batch)
            if done < size:  # a short write: the rest the plain way
                self._write_all(b"".join(batch)[done:])
        self._position += self._pending
        self._parts.clear()
        self._pending = 0
        if self.durable and self._position - self._synced >= WRITEBACK_BYTES:
            self._start_writeback()

    def _start_writeback(self) -> None:
        """Have a second thread `fdatasync` what is written so far, while this one goes on:
        the disk writes then overlap the conversion instead of all waiting for the final
        fsync at close (a fifth of a fast conversion's time). One at a time; an error is
        raised by `_join_writeback` (a later fsync might not report it again)."""
        if self._writeback is not None and self._writeback.is_alive():
            return
        self._join_writeback()
        self._synced = self._position
        fd = self._fd

        def sync() -> None:
            try:
                os.fdatasync(fd)
            except OSError as error:
                self._writeback_error = error

        self._writeback = threading.Thread(target=sync, name="nanorec-writeback", daemon=True)
        self._writeback.start()

    def _join_writeback(self) -> None:
        """Wait for the background `fdatasync` (before the fd is synced again or closed)."""
        if self._writeback is not None:
            self._writeback.join()
            self._writeback = None
        error, self._writeback_error = self._writeback_error, None
        if error is not None:
            raise error

    def _write_all(self, data: bytes | bytearray) -> None:
        with memoryview(data) as view:
            done = 0
            while done < len(view):
                done += os.write(self._fd, view[done:])

    def _tell(self) -> int:
        return self._position + self._pending

    def _close_files(self) -> None:
        if self._writeback is not None:  # its error, if any, no longer matters
            self._writeback.join()
            self._writeback = None
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
        self._index.close()

    # -- close -----------------------------------------------------------------------------

    def _finish(self) -> None:
        self._index.spill()
        if self._blocks is not None:
            self._emit_compressed(self._blocks.finish())
        self.flush()
        self._in_messages = False
        stored_size = self._position - self._messages_start
        messages_size = stored_size if self._blocks is None else self._blocks.uncompressed_size
        crc = self._messages_crc if self._blocks is None else self._blocks.crc
        count = self._count
        # Finalise the messages member's local header first: from here on `recover` can trust
        # its size even if the rest of close is interrupted.
        messages_header = replace(
            self._messages_header,
            crc32=crc,
            compressed_size=stored_size,
            uncompressed_size=messages_size,
        )
        os.pwrite(self._fd, messages_header.build(), 0)
        self._central.append(self._central_for(messages_header, 0))

        index_chunks = self._index_chunks or self._iter_index_bytes(count, messages_size)
        index_header = self._write_streamed(INDEX_MEMBER, index_chunks, compress=self.compact)
        types_table = tuple(self._registry.table)
        fields = base_fields(
            producer=self.producer,
            created_utc=self._created_utc,
            source_format=self.source_format,
            source=self.source,
            message_count=count,
            messages_size=messages_size,
            index_size=index_header.uncompressed_size,
            index_crc32=index_header.crc32,
            types_table=types_table,
        )
        if self._blocks is not None:
            fields["blocks"] = self._blocks.table()
        self._write_streamed(
            DESCRIPTION_MEMBER,
            iter_description(fields, self._description_columns(count)),
            compress=self.compact,
        )
        for name, data in self._members.items():
            if isinstance(data, bytes):
                self._write_whole(name, data, compress=self._compress[name])
            else:
                self._write_streamed(name, data, compress=self._compress[name])

        cd_offset = self._tell()
        for header in self._central:
            self._emit(header.build())
        cd_size = self._tell() - cd_offset
        end = EndRecords(entries=len(self._central), cd_size=cd_size, cd_offset=cd_offset)
        self._emit(end.build(force_zip64=self._force_zip64))
        self.flush(fsync=self.durable)
        self._close_files()
        self._publish()

    def _iter_index_bytes(self, count: int, messages_size: int) -> Iterator[bytes]:
        yield array_header(count)
        packed_types = self._registry.packed()
        base = 0
        for columns, extra in self._index.chunks():
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

    def _description_columns(self, count: int) -> list[ColumnSource]:
        def column(name: str, dtype: np.dtype[Any], encoding: str) -> ColumnSource:
            chunks = (cols[name].astype(dtype).tobytes() for cols, _ in self._index.chunks())
            return ColumnSource(
                name=name, dtype=dtype, count=count, chunks=chunks, encoding=encoding
            )

        length_dtype = np.dtype("<u4") if self._index.max_length <= 0xFFFF_FFFF else np.dtype("<u8")
        columns = [
            column("length", length_dtype, ZLIB),
            column("timestamp_us", np.dtype("<i8"), DELTA_ZLIB),
            column("crc", np.dtype("<u4"), RAW),
            column("types", types_code_dtype(len(self._registry.table)), ZLIB),
        ]
        if self._index.max_flags:
            columns.append(column("flags", _flags_dtype(self._index.max_flags), ZLIB))
        return columns

    def _central_for(self, header: LocalHeader, offset: int) -> CentralHeader:
        return CentralHeader(
            name=header.name,
            crc32=header.crc32,
            compressed_size=header.compressed_size,
            uncompressed_size=header.uncompressed_size,
            local_header_offset=offset,
            method=header.method,
            force_zip64=self._force_zip64,
        )

    def _write_streamed(
        self, name: str, chunks: Iterable[bytes], *, compress: bool = False
    ) -> LocalHeader:
        """Write a member of not-yet-known size: placeholder header, data, header patched."""
        offset = self._tell()
        header = LocalHeader(name=name, zip64=True, method=DEFLATED if compress else STORED)
        self._emit(header.build())
        start = self._tell()
        crc = 0
        size = 0
        compressor = deflater() if compress else None
        for chunk in chunks:
            self._emit(chunk if compressor is None else compressor.compress(chunk))
            crc = zlib.crc32(chunk, crc)
            size += len(chunk)
        if compressor is not None:
            self._emit(compressor.flush())
        stored = self._tell() - start
        header = replace(header, crc32=crc, compressed_size=stored, uncompressed_size=size)
        self._flush_raw()
        os.pwrite(self._fd, header.build(), offset)
        self._central.append(self._central_for(header, offset))
        return header

    def _write_whole(self, name: str, data: bytes, *, compress: bool = False) -> None:
        offset = self._tell()
        size = len(data)
        stored, method = data, STORED
        if compress:
            compressor = deflater()
            deflated = compressor.compress(data) + compressor.flush()
            # already compressed data stays stored; so does data so redundant that readers
            # would take its deflated form for a zip bomb
            if len(deflated) < size and inflates_acceptably(size, len(deflated)):
                stored, method = deflated, DEFLATED
        header = LocalHeader(
            name=name,
            crc32=zlib.crc32(data),
            compressed_size=len(stored),
            uncompressed_size=size,
            method=method,
        )
        self._emit(header.build())
        self._emit(stored)
        self._central.append(self._central_for(header, offset))

    def _publish(self) -> None:
        """Move the finished partial file to its final name, atomically."""
        if self.overwrite:
            os.replace(self.partial_path, self.path)
        else:
            try:
                # link() fails if the target exists, so nothing can be clobbered in between.
                os.link(self.partial_path, self.path)
            except FileExistsError:
                raise OutputExistsError(
                    f"{self.path} appeared while writing; the archive is left at "
                    f"{self.partial_path}"
                ) from None
            except OSError:
                # File systems without hard links: check, then rename.
                if self.path.exists():
                    raise OutputExistsError(
                        f"{self.path} appeared while writing; the archive is left at "
                        f"{self.partial_path}"
                    ) from None
                os.replace(self.partial_path, self.path)
            else:
                self.partial_path.unlink()
        _fsync_directory(self.path.parent)


def _flags_dtype(maximum: int) -> np.dtype[Any]:
    for dtype in ("<u1", "<u2", "<u4"):
        if maximum <= np.iinfo(dtype).max:
            return np.dtype(dtype)
    return np.dtype("<u8")


def _fsync_directory(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


__all__ = [
    "FLUSH_BYTES",
    "FLUSH_MESSAGES",
    "FLUSH_SECONDS",
    "INDEX_MEMBER",
    "MESSAGES_MEMBER",
    "ArchiveWriter",
    "partial_path",
]
