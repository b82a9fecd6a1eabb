"""The messages of an MCAP chunk cut short by a crash: as many of its records as a streaming
decompressor still gives, and what is lost.

Why: rosbag2's MCAP writer compresses each chunk, and a short bag is often one chunk. A
writer killed inside its last chunk leaves a compressed stream without its end; read as a
whole it does not decompress, and every message in it would be lost. A zstd or lz4 frame is
made of blocks, though, and a decompressor fed the bytes on disk gives back every block
that is whole: the records inside those blocks are exactly what the writer wrote. Only
complete records are kept (a record cut by the end of the decompressed prefix is lost, never
patched), and the output is bounded by the chunk's declared size, by `MAX_CHUNK` and by the
largest ratio zstd or lz4 can reach on the bytes at hand.

Only a cut chunk is salvaged, never a damaged one (a flipped byte, a failing CRC): its bytes
on disk are a prefix of what the writer wrote, while a damaged stream decompresses to wrong
bytes well before a zstd/lz4 decoder notices (measured: a byte flipped in a real bag's zstd
chunk gave wrong messages), and a message is never invented. A prefix that somehow spans
the whole chunk is still checked against the chunk's CRC.

A cut chunk may be big (a writer killed in a 1 GiB chunk): its prefix is inflated and walked
in windows of `WINDOW` bytes, twice (once to count and declare, once to give the messages),
never held whole (#34 item 1).
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field

from nanorec.errors import FormatError

from . import mcap_records as rec

#: Output asked of a decompressor at a time (why: a read is what bounds what it inflates).
_STEP = 1 << 16
#: Decompressed bytes walked at a time (a record longer than this is held whole, as it must
#: be to be given).
WINDOW = 8 << 20
MESSAGE_HEAD = rec.RECORD_HEAD.size + rec.MESSAGE_HEAD.size


@dataclass
class Salvage:
    """What a cut or damaged chunk gives back.

    `end` is where its last complete record ends in the decompressed prefix (what the
    messages are read up to), `messages` how many of those records are messages; `lost_bytes`
    the declared uncompressed bytes not recovered; `lost_messages` a lower bound of the
    messages among them (the message record the prefix ends inside, or every message of a
    chunk failing its CRC); `why` says why the chunk stopped; `schemas` and `channels` those
    its records declare."""

    end: int = 0
    messages: int = 0
    lost_bytes: int = 0
    lost_messages: int = 0
    why: str = ""
    schemas: dict[int, rec.SchemaRecord] = field(default_factory=dict)
    channels: dict[int, rec.ChannelRecord] = field(default_factory=dict)


class _Prefix:
    """The decompressed prefix of a chunk's (cut or damaged) compressed bytes, at most
    `limit` bytes, in pieces; `why` says why it stopped once they are all given."""

    def __init__(self, compression: str, data: memoryview, declared: int) -> None:
        if compression not in ("", "zstd", "lz4"):
            raise FormatError(f"unsupported MCAP chunk compression {compression!r}")
        self.compression = compression
        self.data = data
        self.limit = min(declared, rec.chunk_limit(compression, len(data)))
        self.why = "chunk cut short"
        self.rest = b""  # what follows the last whole record, once walked (`_windows`)

    def pieces(self) -> Iterator[bytes | memoryview]:
        if self.compression == "":
            for at in range(0, min(self.limit, len(self.data)), WINDOW):
                yield self.data[at : min(at + WINDOW, self.limit)]
        elif self.compression == "zstd":
            yield from self._zstd()
        else:
            yield from self._lz4()

    def _zstd(self) -> Iterator[bytes]:
        zstandard = rec.load("zstandard")
        self.why = "zstd stream ends early"
        given = 0
        try:
            reader = zstandard.ZstdDecompressor().stream_reader(
                self.data, read_size=1 << 16, read_across_frames=False
            )
            while given < self.limit:
                block = reader.read(min(_STEP, self.limit - given))
                if not block:
                    break
                given += len(block)
                yield block
        except zstandard.ZstdError as exc:
            self.why = f"zstd stream damaged: {exc}"

    def _lz4(self) -> Iterator[bytes]:
        dec: rec.LZ4Decompressor = rec.load("lz4.frame").LZ4FrameDecompressor()
        self.why = "lz4 frame ends early"
        given = 0
        try:
            block = dec.decompress(bytes(self.data), max_length=min(_STEP, self.limit))
            while True:
                given += len(block)
                yield block
                if given >= self.limit or dec.eof or dec.needs_input:
                    break
                block = dec.decompress(b"", max_length=min(_STEP, self.limit - given))
        except RuntimeError as exc:  # lz4's error for a damaged frame
            self.why = f"lz4 frame damaged: {exc}"


def complete_records(
    records: bytes | memoryview, pos: int = 0
) -> tuple[list[tuple[int, int, int]], bool]:
    """(offset, opcode, end) of the whole records of `records` from `pos`, and whether they
    stop at a malformed one (a message record too short for its head) rather than at a
    record running past the end."""
    walked: list[tuple[int, int, int]] = []
    head = rec.RECORD_HEAD
    size = len(records)
    while size - pos >= head.size:
        opcode, length = head.unpack_from(records, pos)
        end = pos + head.size + length
        if opcode == rec.MESSAGE and end - pos < MESSAGE_HEAD:
            return walked, True
        if end > size:
            break
        walked.append((pos, opcode, end))
        pos = end
    return walked, False


def _windows(
    prefix: _Prefix, stop: int | None = None
) -> Iterator[tuple[bytes, list[tuple[int, int, int]]]]:
    """The prefix's whole records, a window at a time: (the window's bytes, the records'
    (offset, opcode, end) in it), up to a malformed record or to byte `stop` of the prefix;
    the bytes after the last whole record are left in `prefix.rest`."""
    pending = bytearray()
    taken = 0  # prefix bytes before `pending`
    want = WINDOW  # bytes to gather before walking (more when a record is longer)
    pieces = prefix.pieces()
    while True:
        piece = next(pieces, None)
        if piece is not None:
            pending += piece
            if len(pending) < want and (stop is None or taken + len(pending) < stop):
                continue
        window = bytes(pending)
        walked, malformed = complete_records(window)
        if stop is not None:
            walked = [r for r in walked if taken + r[2] <= stop]
        end = walked[-1][2] if walked else 0
        yield window, walked
        done = malformed or piece is None or (stop is not None and taken + end >= stop)
        if done:
            prefix.rest = window[end:]
            return
        del pending[:end]
        taken += end
        head = rec.RECORD_HEAD
        length = head.unpack_from(pending)[1] if len(pending) >= head.size else 0
        want = max(WINDOW, head.size + length)


def salvage(compression: str, data: memoryview, declared: int, crc: int) -> Salvage:
    """What the chunk whose compressed bytes on disk are `data` (all of them, or up to a cut)
    gives back; `declared` and `crc` are its uncompressed size and CRC as it states them."""
    prefix = _Prefix(compression, data, declared)
    found = Salvage()
    running = 0
    given = 0
    for window, walked in _windows(prefix):
        view = memoryview(window)
        for start, opcode, stop in walked:
            if opcode == rec.MESSAGE:
                found.messages += 1
            elif opcode in (rec.SCHEMA, rec.CHANNEL):
                _declare_one(view, start, stop, opcode, found)
        end = walked[-1][2] if walked else 0
        running = zlib.crc32(view[:end], running)
        given += end
    rest = prefix.rest
    found.end = given
    whole = given + len(rest)
    why = prefix.why
    if whole == declared and crc and zlib.crc32(rest, running) != crc:
        # whole but wrong somewhere: nothing in it can be trusted
        why = "chunk CRC does not match its records"
        return Salvage(0, 0, declared, found.messages, why)
    if whole == declared and given == declared:
        why = "chunk records whole"
    elif whole == declared:
        why = "chunk records do not parse to its end"
    found.why = why
    found.lost_bytes = declared - given
    found.lost_messages = int(len(rest) >= 1 and rest[0] == rec.MESSAGE)
    return found


def _declare_one(view: memoryview, start: int, stop: int, opcode: int, found: Salvage) -> None:
    fields = rec.Fields(view, start + 9, stop, start)
    try:
        if opcode == rec.SCHEMA:
            schema = rec.parse_schema(fields)
            found.schemas.setdefault(schema.id, schema)
        else:
            channel = rec.parse_channel(fields)
            found.channels.setdefault(channel.id, channel)
    except FormatError:
        pass  # a damaged schema or channel names nothing: its messages stay unnamed


def salvaged_messages(
    buf: memoryview, chunk: rec.ChunkHead, found: Salvage, end: int
) -> Iterator[memoryview]:
    """The message records `found` counted in the chunk `chunk` whose bytes on disk end at
    `end`, inflated again a window at a time."""
    if not found.messages:
        return
    data = buf[chunk.records_start : min(chunk.records_end, end)]
    prefix = _Prefix(chunk.compression, data, chunk.uncompressed_size)
    for window, walked in _windows(prefix, stop=found.end):
        view = memoryview(window)
        for start, opcode, stop in walked:
            if opcode == rec.MESSAGE:
                yield view[start:stop]


def lost_text(found: Salvage) -> str:
    """How many messages a salvage lost, in words ("at least 3 messages lost")."""
    if not found.lost_bytes and not found.lost_messages:
        return "none lost"
    if found.lost_messages:
        return f"at least {found.lost_messages} lost"
    return "an unknown number lost"


def salvage_at(buf: memoryview, pos: int, end: int) -> tuple[rec.ChunkHead, Salvage]:
    """The chunk record at `pos` of `buf`, whose bytes on disk end at `end`, and what it
    gives back. Raises FormatError when not even its head can be read."""
    chunk = rec.chunk_head(buf, pos, end, whole=False)
    data = buf[chunk.records_start : min(chunk.records_end, end)]
    found = salvage(chunk.compression, data, chunk.uncompressed_size, chunk.uncompressed_crc)
    return chunk, found


def declare(
    found: Salvage,
    schemas: dict[int, rec.SchemaRecord],
    channels: dict[int, rec.ChannelRecord],
) -> None:
    """The schemas and channels a salvaged chunk declares, added to the file's."""
    for sid, schema in found.schemas.items():
        schemas.setdefault(sid, schema)
    for cid, channel in found.channels.items():
        channels.setdefault(cid, channel)


def describe(chunk: rec.ChunkHead, found: Salvage) -> str:
    """The damage region's reason for a chunk cut short."""
    kind = f"{chunk.compression} chunk" if chunk.compression else "chunk"
    return (
        f"MCAP {kind} cut short: {found.messages} messages recovered, {lost_text(found)} "
        f"({found.lost_bytes} of its {chunk.uncompressed_size} record bytes not "
        f"recovered: {found.why})"
    )
