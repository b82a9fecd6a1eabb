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
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Any

from nanorec.errors import FormatError

from . import mcap_records as rec

#: Output asked of a decompressor at a time (why: a read is what bounds what it inflates).
_STEP = 1 << 16
MESSAGE_HEAD = rec.RECORD_HEAD.size + rec.MESSAGE_HEAD.size


@dataclass(frozen=True)
class Salvage:
    """What a cut or damaged chunk gives back.

    `records` is the decompressed prefix cut to its last complete record, `walked` the
    (offset, opcode, end) of those records; `lost_bytes` the declared uncompressed bytes not
    recovered; `lost_messages` a lower bound of the messages among them (the message record
    the prefix ends inside, or every message of a chunk failing its CRC); `why` says why the
    chunk stopped."""

    records: bytes
    walked: list[tuple[int, int, int]]
    messages: int
    lost_bytes: int
    lost_messages: int
    why: str


def _zstd(data: memoryview, limit: int) -> tuple[bytes, str]:
    zstandard = rec.load("zstandard")
    out = bytearray()
    why = "zstd stream ends early"
    try:
        reader = zstandard.ZstdDecompressor().stream_reader(
            data, read_size=1 << 16, read_across_frames=False
        )
        while len(out) < limit:
            block = reader.read(min(_STEP, limit - len(out)))
            if not block:
                break
            out += block
    except zstandard.ZstdError as exc:
        why = f"zstd stream damaged: {exc}"
    return bytes(out), why


def _lz4(data: memoryview, limit: int) -> tuple[bytes, str]:
    dec: Any = rec.load("lz4.frame").LZ4FrameDecompressor()
    out = bytearray()
    why = "lz4 frame ends early"
    try:
        out += dec.decompress(bytes(data), max_length=min(_STEP, limit))
        while len(out) < limit and not dec.eof and not dec.needs_input:
            out += dec.decompress(b"", max_length=min(_STEP, limit - len(out)))
    except RuntimeError as exc:  # lz4's error for a damaged frame
        why = f"lz4 frame damaged: {exc}"
    return bytes(out), why


def inflate_prefix(compression: str, data: memoryview, declared: int) -> tuple[bytes, str]:
    """The decompressed prefix of a chunk's (cut or damaged) compressed bytes `data`, at most
    `declared` bytes, and why it stops. Raises FormatError for an unknown compression."""
    limit = min(declared, rec.chunk_limit(compression, len(data)))
    if compression == "":
        return bytes(data[:limit]), "chunk cut short"
    if compression == "zstd":
        return _zstd(data, limit)
    if compression == "lz4":
        return _lz4(data, limit)
    raise FormatError(f"unsupported MCAP chunk compression {compression!r}")


def complete_records(records: bytes) -> tuple[list[tuple[int, int, int]], int]:
    """(offset, opcode, end) of the records of `records` up to the first one that is cut or
    malformed (a message record too short for its head), and how many are messages."""
    walked: list[tuple[int, int, int]] = []
    messages = 0
    head = rec.RECORD_HEAD
    pos, size = 0, len(records)
    while size - pos >= head.size:
        opcode, length = head.unpack_from(records, pos)
        end = pos + head.size + length
        if end > size or (opcode == rec.MESSAGE and end - pos < MESSAGE_HEAD):
            break
        walked.append((pos, opcode, end))
        messages += opcode == rec.MESSAGE
        pos = end
    return walked, messages


def salvage(compression: str, data: memoryview, declared: int, crc: int) -> Salvage:
    """What the chunk whose compressed bytes on disk are `data` (all of them, or up to a cut)
    gives back; `declared` and `crc` are its uncompressed size and CRC as it states them."""
    records, why = inflate_prefix(compression, data, declared)
    walked, messages = complete_records(records)
    end = walked[-1][2] if walked else 0
    if len(records) == declared and crc and zlib.crc32(records) != crc:
        # whole but wrong somewhere: nothing in it can be trusted
        return Salvage(b"", [], 0, declared, messages, "chunk CRC does not match its records")
    if len(records) == declared and end == declared:
        why = "chunk records whole"
    elif len(records) == declared:
        why = "chunk records do not parse to its end"
    rest = records[end:]
    partial = len(rest) >= 1 and rest[0] == rec.MESSAGE
    return Salvage(records[:end], walked, messages, declared - end, int(partial), why)


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
    pos: int,
    schemas: dict[int, rec.SchemaRecord],
    channels: dict[int, rec.ChannelRecord],
) -> None:
    """The schemas and channels a salvaged chunk (at `pos`) declares, added to the file's."""
    view = memoryview(found.records)
    for start, opcode, stop in found.walked:
        fields = rec.Fields(view, start + 9, stop, pos)
        try:
            if opcode == rec.SCHEMA:
                schema = rec.parse_schema(fields)
                schemas.setdefault(schema.id, schema)
            elif opcode == rec.CHANNEL:
                channel = rec.parse_channel(fields)
                channels.setdefault(channel.id, channel)
        except FormatError:
            pass  # a damaged schema or channel names nothing: its messages stay unnamed


def describe(chunk: rec.ChunkHead, found: Salvage) -> str:
    """The damage region's reason for a chunk cut short."""
    kind = f"{chunk.compression} chunk" if chunk.compression else "chunk"
    return (
        f"MCAP {kind} cut short: {found.messages} messages recovered, {lost_text(found)} "
        f"({found.lost_bytes} of its {chunk.uncompressed_size} record bytes not "
        f"recovered: {found.why})"
    )
