"""`MessageStream`: the `messages.msgpack` member as it grows, one message or run at a time.

It exists so that how messages are stored lives apart from the public API that takes them
and from the zip that holds them: non-decreasing timestamps (each message's own rules and
form are `nanorec.archive.message_form`'s), the per-message CRCs, the index row each message adds
to the `IndexSpool`, the member's running CRC (stored layout) or its block deflater
(compact layout), and the flush policy that keeps every flushed message complete in the
partial file (so `nanorec recover` can rebuild an archive from it).
"""

from __future__ import annotations

import itertools
import operator
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, Final
from zipfile import ZIP_DEFLATED, ZIP_STORED

import numpy as np

from nanorec.archive.blocks import BlockDeflater
from nanorec.archive.crc import crc32, part_crcs, pieces_crc
from nanorec.archive.index import TypesRegistry
from nanorec.archive.message_form import (
    FIXMAP_HEADERS,
    INT64_MAX,
    INT64_MIN,
    check_types,
    checked_flags,
    embed_timestamp,
    pack_metadata,
    run_length,
)
from nanorec.archive.spool import IndexSpool
from nanorec.archive.wire import MESSAGES_MEMBER, timestamp_entry
from nanorec.archive.zipfile64 import LocalHeader
from nanorec.archive.zipout import FLUSH_BYTES, ZipOutput
from nanorec.errors import UsageError

#: Write what is ready when this many messages were written since the last flush...
FLUSH_MESSAGES: Final = 1024
#: ...or this many seconds passed (checked when a message or run is written), or
#: `nanorec.archive.zipout.FLUSH_BYTES` are buffered (see `MessageStream._flush_auto`).
FLUSH_SECONDS: Final = 1.0


class MessageStream:
    """Writes `messages.msgpack` at offset 0 of `out` (its local header with a zip64 extra,
    66 bytes as NanoVer writes it, patched by `finish`); each message's index row goes to
    `index`. `blocks` deflates the member (compact layout) or is None (stored)."""

    def __init__(self, out: ZipOutput, index: IndexSpool, blocks: BlockDeflater | None) -> None:
        self._out = out
        self._index = index
        self._blocks = blocks
        self._messages_crc = 0
        self._last_flush_count = 0
        self._last_flush_time = time.monotonic()
        #: Messages written so far.
        self.count = 0
        self._last_timestamp = INT64_MIN
        self.registry = TypesRegistry()
        self._valid_types: dict[tuple[str, ...], int] = {}
        self._in_messages = False  # whether flushed bytes belong to messages.msgpack
        self._header = LocalHeader(
            name=MESSAGES_MEMBER,
            zip64=True,
            method=ZIP_DEFLATED if blocks is not None else ZIP_STORED,
        )
        out.emit(self._header.build())
        self._start = out.pending
        self.flush()
        self._in_messages = True

    def append(
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
        timestamp = timestamp_us if type(timestamp_us) is int else operator.index(timestamp_us)
        if not self._last_timestamp <= timestamp <= INT64_MAX:
            if not INT64_MIN <= timestamp <= INT64_MAX:
                raise UsageError(f"timestamp {timestamp} us does not fit in 64 bits")
            raise UsageError(
                f"timestamps must not decrease: message {self.count} has {timestamp} us after "
                f"{self._last_timestamp} us"
            )
        flag_bits = checked_flags(flags)
        code = self._valid_types.get(types)
        if code is None:
            code = self._register_types(types)
        extra = pack_metadata(metadata) if metadata else b""
        number = self.count
        pieces = (
            embed_timestamp(packed, len(types), timestamp, number) if embed else (bytes(packed),)
        )
        length, crc = sum(map(len, pieces)), pieces_crc(pieces)
        out = self._out
        if self._blocks is None:
            out.parts += pieces
            out.pending += length
        else:
            out.emit_compressed(self._blocks.add(pieces, length, crc))
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
        self.count = number + 1
        self._flush_if_due()
        return number

    def append_run(
        self,
        packed: Sequence[bytes],
        types: Sequence[tuple[str, ...]],
        timestamps_us: Sequence[int],
    ) -> int:
        """`ArchiveWriter.write_packed_run`: a run of packed maps; the first one's number."""
        if not run_length(packed, types, timestamps_us):
            return self.count
        column = self._run_times(timestamps_us)
        codes = self._codes(types)
        lengths: list[int] = []
        crcs: list[int] = []
        blocks = self._blocks
        out = self._out
        parts = out.parts
        blocked: list[tuple[bytes | memoryview, ...]] = []  # each message's pieces
        headers = FIXMAP_HEADERS
        for message, key, stamp in zip(packed, types, column.tolist(), strict=True):
            entries = len(key)
            if message[0] == 0x80 | entries and entries < 15 and len(message) < 4096:
                # `embed_timestamp`'s common case inline: one piece, one CRC
                data = b"".join((headers[entries + 1], message[1:], timestamp_entry(stamp)))
                length = len(data)
                crc = crc32(data)
                pieces: tuple[bytes | memoryview, ...] = (data,)
            else:
                pieces = embed_timestamp(message, entries, stamp, self.count + len(lengths))
                length, crc = sum(map(len, pieces)), pieces_crc(pieces)
            lengths.append(length)
            crcs.append(crc)
            if blocks is None:
                parts += pieces
            else:
                blocked.append(pieces)
        if blocks is None:
            out.pending += sum(lengths)
        else:
            out.emit_compressed(blocks.add_run(blocked, lengths, crcs))
        return self._end_run(
            np.array(lengths, np.int64), column, np.array(crcs, np.uint32), 0, codes
        )

    def append_stored_run(
        self,
        stored: Sequence[bytes],
        types: Sequence[tuple[str, ...]],
        timestamps_us: Sequence[int],
    ) -> int:
        """`ArchiveWriter.write_stored_run`: complete stored messages; the first one's number.

        Each message is one piece: the block deflater takes it without a copy when it fills
        a block alone (a large message), and its CRC is taken once."""
        if not run_length(stored, types, timestamps_us):
            return self.count
        column = self._run_times(timestamps_us)
        codes = self._codes(types)
        lengths = [len(message) for message in stored]
        crcs = np.fromiter(map(crc32, stored), np.uint32, len(stored))
        out = self._out
        if self._blocks is None:
            out.parts += stored
            out.pending += sum(lengths)
        else:
            out.emit_compressed(self._blocks.add_run([(m,) for m in stored], lengths, crcs))
        return self._end_run(np.array(lengths, np.int64), column, crcs, 0, codes)

    def append_lent_run(
        self,
        messages: Sequence[Sequence[bytes | memoryview]],
        types: Sequence[tuple[str, ...]],
        timestamps_us: Sequence[int],
    ) -> int:
        """`ArchiveWriter.write_lent_run`: `append_stored_run` for messages given as their
        pieces, which stay unchanged until the writer is flushed or closed: none is joined
        or copied here (the stored layout writes them, the compact one deflates a message
        of its own block from them)."""
        if not run_length(messages, types, timestamps_us):
            return self.count
        column = self._run_times(timestamps_us)
        codes = self._codes(types)
        lengths = [sum(map(len, pieces)) for pieces in messages]
        crcs = np.fromiter(map(pieces_crc, messages), np.uint32, len(messages))
        out = self._out
        if self._blocks is None:
            out.parts += itertools.chain.from_iterable(messages)
            out.pending += sum(lengths)
        else:
            out.emit_compressed(self._blocks.add_run(messages, lengths, crcs, lent=True))
        return self._end_run(np.array(lengths, np.int64), column, crcs, 0, codes)

    def append_joined(
        self,
        joined: bytes,
        lengths: np.ndarray[Any, np.dtype[np.int64]],
        types: Sequence[tuple[str, ...]],
        kinds: np.ndarray[Any, np.dtype[np.int64]],
        timestamps_us: Sequence[int] | np.ndarray[Any, np.dtype[np.int64]],
    ) -> int:
        """`ArchiveWriter.write_joined_run`: complete stored messages back to back in one
        buffer; the first one's number. Per message only its CRC is a Python call."""
        count = len(lengths)
        if len(kinds) != count or len(timestamps_us) != count:
            raise UsageError("one kind and one timestamp per message are needed")
        if not count:
            return self.count
        lengths = np.asarray(lengths, np.int64)
        kinds = np.asarray(kinds, np.int64)
        ends = np.cumsum(lengths)
        if int(ends[-1]) != len(joined) or (lengths <= 0).any():
            raise UsageError("the message lengths must be positive and add up to the buffer")
        if (kinds < 0).any() or (kinds >= len(types)).any():
            raise UsageError("a message's kind is not a number of one of the types given")
        column = self._run_times(timestamps_us)
        # types registered in the order their messages come, as one message at a time would
        used, seen = np.unique(kinds, return_index=True)
        table = np.zeros(len(types), np.uint32)
        for kind in used[np.argsort(seen)].tolist():
            key = types[kind]
            code = self._valid_types.get(key)
            table[kind] = self._register_types(tuple(key)) if code is None else code
        codes = table.take(kinds)
        view = memoryview(joined)
        crcs = np.array(
            [
                crc32(view[start:end])
                for start, end in zip((ends - lengths).tolist(), ends.tolist(), strict=True)
            ],
            np.uint32,
        )
        blocks = self._blocks
        out = self._out
        if blocks is None:
            out.parts.append(joined)
            out.pending += len(joined)
        else:
            out.emit_compressed(blocks.add_joined(joined, lengths, crcs))
        return self._end_run(lengths, column, crcs, 0, codes)

    def append_rows(
        self,
        rows: np.ndarray[Any, np.dtype[np.uint8]],
        timestamps_us: Sequence[int] | np.ndarray[Any, np.dtype[np.int64]],
        types: Sequence[str],
        flags: int,
    ) -> int:
        """`ArchiveWriter.write_stored_rows`: one stored message per row; the first's number."""
        count, length = rows.shape
        if len(timestamps_us) != count or not rows.flags.c_contiguous:
            raise UsageError("one timestamp per row, and C-contiguous rows, are needed")
        first = self.count
        if not count:
            return first
        column = self._run_times(timestamps_us)
        checked_flags(flags)
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
            out = self._out
            out.parts.append(view)
            out.pending += total
            out.flush_buffer(behind=True)  # no CRC pass at flush: it is taken
            self._last_flush_count = first + count
            self._last_flush_time = time.monotonic()
        else:  # the block deflater takes the stream's CRC (see `BlockDeflater`)
            crcs = np.fromiter(map(crc32, pieces), np.uint32, count)
            blocks = self._blocks
            self._out.emit_compressed(
                blocks.add_run([(p,) for p in pieces], [length] * count, crcs)
            )
        return self._end_run(np.full(count, length), column, crcs, flags, code)

    def _run_times(
        self, timestamps_us: Sequence[int] | np.ndarray[Any, np.dtype[np.int64]]
    ) -> np.ndarray[Any, np.dtype[np.int64]]:
        """A run's timestamps as a column, checked: none before the last message's, none
        decreasing (raises `OverflowError` past 64 bits)."""
        column = np.asarray(timestamps_us, np.int64)
        if column[0] < self._last_timestamp or (np.diff(column) < 0).any():
            raise UsageError(f"timestamps must not decrease (messages from {self.count})")
        return column

    def _end_run(
        self,
        lengths: np.ndarray[Any, np.dtype[np.int64]],
        column: np.ndarray[Any, np.dtype[np.int64]],
        crcs: np.ndarray[Any, np.dtype[np.uint32]],
        flags: int,
        codes: int | list[int] | np.ndarray[Any, np.dtype[np.uint32]],
    ) -> int:
        """Index a run written to the stream; the first message's number."""
        first = self.count
        self._index.extend(lengths, column, crcs, flags, np.array(codes, np.uint32))
        self._last_timestamp = int(column[-1])
        self.count = first + len(column)
        self._flush_if_due()
        return first

    def _flush_if_due(self) -> None:
        if (
            self._out.pending >= FLUSH_BYTES
            or self.count - self._last_flush_count >= FLUSH_MESSAGES
            or time.monotonic() - self._last_flush_time >= FLUSH_SECONDS
        ):
            self._flush_auto()

    def _flush_auto(self) -> None:
        """A flush the writer decides (by count, time or buffered output). The stored layout
        writes every message; the compact one the blocks finished so far, leaving the open
        block open: ending it here would put a block end where the machine's speed or the
        caller's runs fell, so the same messages could give other bytes, and waiting for the
        deflating threads at every flush held a conversion of large messages back."""
        if self._blocks is None:
            self.flush()
            return
        self._out.emit_compressed(self._blocks.ready())
        if self._out.parts:
            self._out.flush_buffer()
        self._last_flush_count = self.count
        self._last_flush_time = time.monotonic()

    def _codes(self, types: Sequence[tuple[str, ...]]) -> list[int]:
        """The type code of each message's types, registering new ones."""
        valid = self._valid_types
        codes: list[int] = []
        for key in types:
            code = valid.get(key)
            codes.append(self._register_types(tuple(key)) if code is None else code)
        return codes

    def _register_types(self, types: tuple[str, ...]) -> int:
        check_types(types)
        code = self._valid_types[types] = self.registry.code(types)
        return code

    def flush(self) -> None:
        """Write buffered bytes to the partial file, every message in them complete."""
        out = self._out
        if self._blocks is not None and self._in_messages:
            # the file ends at a block boundary: every flushed message can be inflated
            out.emit_compressed(self._blocks.end_block())
        if out.parts:
            if self._in_messages and self._blocks is None:
                crc = self._messages_crc
                for part in out.parts:
                    crc = crc32(part, crc)
                self._messages_crc = crc
            # stored messages go to the file on the write-behind thread
            # (`nanorec.archive.writebehind`); compact ones are written here: the deflate threads
            # have the other core
            out.flush_buffer(behind=self._in_messages and self._blocks is None)
        self._last_flush_count = self.count
        self._last_flush_time = time.monotonic()

    @property
    def data_start(self) -> int:
        """Where the member's data starts in the file (after its local header)."""
        return self._start

    def finish(self) -> LocalHeader:
        """End the member: flush it and patch its local header with the final sizes and CRC
        (from here on `recover` can trust its size even if the rest of close is interrupted);
        returns that header. Later flushes are of other members."""
        self._index.spill(last=True)
        if self._blocks is not None:
            self._out.emit_compressed(self._blocks.finish())
        self.flush()
        self._in_messages = False
        stored_size = self._out.position - self._start
        messages_size = stored_size if self._blocks is None else self._blocks.uncompressed_size
        crc = self._messages_crc if self._blocks is None else self._blocks.crc
        header = replace(
            self._header, crc32=crc, compressed_size=stored_size, uncompressed_size=messages_size
        )
        self._out.finish_member(header, 0)
        return header


__all__ = ["FLUSH_MESSAGES", "FLUSH_SECONDS", "MESSAGES_MEMBER", "MessageStream"]
