"""The MCAP record vocabulary (https://mcap.dev/spec) that `mcap_file.py` walks, and the chunk
compressors it can rebuild.

A record is opcode u8 + content length u64 LE + content. Only what a rosbag2 reader needs is
parsed (Header, Schema, Channel, Metadata, Statistics, Message and the Chunk framing); every
other record is kept as opaque bytes, so unknown or future records cost nothing and still
come back byte for byte. Every length read here is checked against the bytes that hold it
first: bad input raises `FormatError`, never an IndexError or a giant allocation.

Chunk compression: a compressed chunk can be stored decompressed (so its messages' data can be
cut out) only if compressing its records again gives the very same bytes. That holds when we
use the writer's own compressor with its own settings, which `REBUILDERS` lists: libmcap
(rosbag2's MCAP plugin, C++) and the Python `mcap` writer. The Go writer (`mcap convert`,
klauspost zstd) is not reproducible from Python; its chunks are kept compressed.
"""

from __future__ import annotations

import importlib
import struct
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any, TypeAlias

from nanorec.errors import FormatError, NanorecError, UnsupportedError

MAGIC = b"\x89MCAP0\r\n"

HEADER = 0x01
FOOTER = 0x02
SCHEMA = 0x03
CHANNEL = 0x04
MESSAGE = 0x05
CHUNK = 0x06
MESSAGE_INDEX = 0x07
CHUNK_INDEX = 0x08
ATTACHMENT = 0x09
ATTACHMENT_INDEX = 0x0A
STATISTICS = 0x0B
METADATA = 0x0C
METADATA_INDEX = 0x0D
SUMMARY_OFFSET = 0x0E
DATA_END = 0x0F

RECORD_HEAD = struct.Struct("<BQ")  # opcode, content length
#: Message content before its data: channel_id u16, sequence u32, log_time u64, publish_time u64.
MESSAGE_HEAD = struct.Struct("<HIQQ")
#: Chunk content before its compression string: start, end, uncompressed_size, uncompressed_crc.
CHUNK_HEAD = struct.Struct("<QQQI")
STATISTICS_HEAD = struct.Struct("<QHIIIIQQ")

#: Zero bytes, counted in empty records, that end the records: 9 zero bytes parse as an
#: empty record of the reserved opcode 0, which no writer emits, and a file of zeros walked
#: 119 M of them for minutes. A crashed writer's file often ends in such zeros (space the
#: file system had allotted but the writer never filled): they are its tail, not records.
EMPTY_RUN = 64

_U16 = struct.Struct("<H")
_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")


class Fields:
    """A cursor over one record's content that refuses to read past it (why: every length in
    an MCAP file is declared by the file, and a damaged one must fail as a FormatError at the
    record's offset, not as a slice that silently comes back short)."""

    __slots__ = ("base", "buf", "end", "pos")

    def __init__(self, buf: memoryview, start: int, end: int, base: int) -> None:
        self.buf = buf
        self.pos = start
        self.end = end
        self.base = base  # file offset of the record, for error messages

    def take(self, size: int) -> int:
        pos = self.pos
        if size < 0 or pos + size > self.end:
            raise FormatError(
                "MCAP record field runs past its record",
                offset=self.base,
                expected=size,
                actual=self.end - pos,
            )
        self.pos = pos + size
        return pos

    def u16(self) -> int:
        return int(_U16.unpack_from(self.buf, self.take(2))[0])

    def u32(self) -> int:
        return int(_U32.unpack_from(self.buf, self.take(4))[0])

    def u64(self) -> int:
        return int(_U64.unpack_from(self.buf, self.take(8))[0])

    def raw(self, size: int) -> memoryview:
        pos = self.take(size)
        return self.buf[pos : pos + size]

    def string(self) -> str:
        size = self.u32()
        try:
            return str(self.raw(size), "utf-8")
        except UnicodeDecodeError as exc:
            raise FormatError("MCAP string is not UTF-8", offset=self.base) from exc

    def string_map(self) -> dict[str, str]:
        size = self.u32()
        inner = Fields(self.buf, self.take(size), self.pos, self.base)
        out: dict[str, str] = {}
        while inner.pos < inner.end:
            key = inner.string()
            out[key] = inner.string()
        return out


@dataclass(frozen=True)
class SchemaRecord:
    id: int
    name: str
    encoding: str
    data: bytes


@dataclass(frozen=True)
class ChannelRecord:
    id: int
    schema_id: int
    topic: str
    message_encoding: str
    metadata: dict[str, str]


@dataclass(frozen=True)
class McapStatistics:
    """The file's Statistics record: counts and log-time range as the writer saw them."""

    message_count: int
    message_start_time: int
    message_end_time: int
    channel_message_counts: dict[int, int]


@dataclass(frozen=True)
class ChunkHead:
    """Where a Chunk record's parts are (offsets in the buffer read) and what it declares."""

    records_start: int
    records_end: int
    uncompressed_size: int
    uncompressed_crc: int
    compression: str


def chunk_head(buf: memoryview, pos: int, end: int, whole: bool = True) -> ChunkHead:
    """The chunk record at `pos`, which ends at `end`; `whole` False: its records may run
    past `end` (a cut chunk), `records_end` is then where they would end."""
    fields = Fields(buf, pos + 9, end, pos)
    start = fields.take(CHUNK_HEAD.size)
    _, _, usize, crc = CHUNK_HEAD.unpack_from(buf, start)
    compression = fields.string()
    length = fields.u64()
    records_start = fields.take(length) if whole else fields.pos
    return ChunkHead(records_start, records_start + length, usize, crc, compression)


def parse_header(f: Fields) -> tuple[str, str]:
    """Header: (profile, library)."""
    return f.string(), f.string()


def parse_schema(f: Fields) -> SchemaRecord:
    sid = f.u16()
    name = f.string()
    encoding = f.string()
    data = bytes(f.raw(f.u32()))
    return SchemaRecord(sid, name, encoding, data)


def parse_channel(f: Fields) -> ChannelRecord:
    cid = f.u16()
    schema_id = f.u16()
    topic = f.string()
    encoding = f.string()
    return ChannelRecord(cid, schema_id, topic, encoding, f.string_map())


def parse_metadata(f: Fields) -> tuple[str, dict[str, str]]:
    return f.string(), f.string_map()


def parse_statistics(f: Fields) -> McapStatistics:
    pos = f.take(STATISTICS_HEAD.size)
    count, _, _, _, _, _, start, end = STATISTICS_HEAD.unpack_from(f.buf, pos)
    size = f.u32()
    if size % 10:
        raise FormatError("MCAP statistics channel counts are not 10-byte pairs", offset=f.base)
    counts: dict[int, int] = {}
    for _ in range(size // 10):
        channel = f.u16()
        counts[channel] = f.u64()
    return McapStatistics(count, start, end, counts)


# --- chunk compression ---------------------------------------------------------------------

#: Largest chunk we decompress, whatever it declares (why: `uncompressed_size` comes from the
#: file; rosbag2 chunks are ~1 MiB, libmcap's default 768 KiB).
MAX_CHUNK = 1 << 32
#: zstd cannot expand more than this (its RLE blocks come closest, 32768x on 128 KiB blocks
#: of 4 bytes); a larger declared ratio is damage, not data.
MAX_RATIO = 1 << 16
#: Nor can lz4 (a match's length grows by 255 per extra byte: ~255x), so a 256 MiB lz4 chunk
#: needs a MiB of input, not a few KB.
MAX_RATIO_LZ4 = 1 << 8


def chunk_limit(compression: str, compressed: int) -> int:
    """The most a chunk of `compressed` bytes can decompress to."""
    ratio = MAX_RATIO_LZ4 if compression == "lz4" else MAX_RATIO
    return min(MAX_CHUNK, ratio * (compressed + 64))


#: lz4's `lz4.frame.LZ4FrameDecompressor` (lz4 is optional and ships no types).
LZ4Decompressor: TypeAlias = Any


def load(name: str) -> ModuleType:
    """`zstandard` or `lz4.frame`, imported when a file needs it (why: both are optional
    dependencies, as for ROS 1 bags; most rosbag2 MCAP files have uncompressed chunks)."""
    try:
        return importlib.import_module(name)
    except ImportError:
        package = name.split(".")[0]
        raise UnsupportedError(
            f"this MCAP file has {package} chunks: install the {package} package "
            "(pip install 'nanorec[ros]')"
        ) from None


def decompress(compression: str, data: memoryview, size: int) -> bytes:
    """A chunk's records: `data` decompressed to exactly the declared `size` bytes.

    Raises FormatError when the declared size is beyond reason or the stream does not give
    exactly that many bytes; the size is checked before any output is allocated.
    """
    if size > chunk_limit(compression, len(data)):
        raise FormatError("MCAP chunk declares an impossible uncompressed size", actual=size)
    try:
        if compression == "zstd":
            zstandard = load("zstandard")
            declared = zstandard.frame_content_size(data)
            if declared not in (size, -1):
                raise FormatError("zstd frame size differs from the chunk's", actual=declared)
            out = zstandard.ZstdDecompressor().decompress(data, max_output_size=size)
        elif compression == "lz4":
            dec = load("lz4.frame").LZ4FrameDecompressor()
            out = dec.decompress(data, max_length=size)
            if not dec.eof or dec.unused_data:
                raise FormatError("lz4 frame does not end with the chunk")
        else:
            raise FormatError(f"unsupported MCAP chunk compression {compression!r}")
    except NanorecError:
        raise
    except Exception as exc:  # zstd.ZstdError, lz4's RuntimeError, ...: damaged stream
        raise FormatError(f"{compression} chunk does not decompress: {exc}") from exc
    if len(out) != size:
        raise FormatError("MCAP chunk decompresses to another size", expected=size, actual=len(out))
    return bytes(out)


def _zstd(level: int) -> Callable[[bytes], bytes]:
    compressors: list[Any] = []

    def compress(data: bytes) -> bytes:
        if not compressors:
            compressors.append(load("zstandard").ZstdCompressor(level=level))
        out: bytes = compressors[0].compress(data)
        return out

    return compress


def _lz4(level: int, store_size: bool) -> Callable[[bytes], bytes]:
    def compress(data: bytes) -> bytes:
        frame = load("lz4.frame")
        out: bytes = frame.compress(data, compression_level=level, store_size=store_size)
        return out

    return compress


#: Chunk compressors by stable id (ids are written into skeletons: append, never renumber).
#: libmcap (rosbag2): zstd level Fastest -5, Fast -3, Default 1, Slow 5, Slowest 19 through
#: ZSTD_compress2 (content size written, no checksum); lz4 LZ4F_compressFrame with default
#: preferences (64 KiB linked blocks, no content size) at level Fastest -1, Fast 0, Default 9
#: (LZ4HC_CLEVEL_DEFAULT), Slow 10, Slowest 12. Python `mcap` writer: `zstandard.compress`
#: (level 3) and `lz4.frame.compress` (level 0, content size stored).
REBUILDERS: dict[int, tuple[str, str, Callable[[bytes], bytes]]] = {
    1: ("zstd", "libmcap default (1)", _zstd(1)),
    2: ("zstd", "python mcap (3)", _zstd(3)),
    3: ("zstd", "libmcap fast (-3)", _zstd(-3)),
    4: ("zstd", "libmcap fastest (-5)", _zstd(-5)),
    5: ("zstd", "libmcap slow (5)", _zstd(5)),
    6: ("zstd", "libmcap slowest (19)", _zstd(19)),
    11: ("lz4", "libmcap default (9)", _lz4(9, False)),
    12: ("lz4", "python mcap (0, size)", _lz4(0, True)),
    13: ("lz4", "libmcap fast (0)", _lz4(0, False)),
    14: ("lz4", "libmcap fastest (-1)", _lz4(-1, False)),
    15: ("lz4", "libmcap slow (10)", _lz4(10, False)),
    16: ("lz4", "libmcap slowest (12)", _lz4(12, False)),
}


def could_rebuild(compression: str, data: memoryview) -> bool:
    """Whether any of `REBUILDERS` can have written this frame, judged from its header alone
    (why: trying six compression levels, one of them zstd 19, on every chunk of a Go-written
    file would cost more than the whole conversion; the Go writer sets the checksum flag,
    which neither libmcap nor the Python writer does)."""
    if compression == "zstd":
        # magic (4) then frame header descriptor: bit 2 checksum; FCS flag in bits 6-7 or the
        # single-segment bit 5 (which implies a content size) say the size was written.
        if len(data) < 5 or bytes(data[:4]) != b"\x28\xb5\x2f\xfd":
            return False
        fhd = data[4]
        return not fhd & 0x04 and bool(fhd & 0xE0)
    if compression == "lz4":
        # magic (4) then FLG: bit 2 content checksum, bit 4 block checksum, bit 0 dict id.
        if len(data) < 5 or bytes(data[:4]) != b"\x04\x22\x4d\x18":
            return False
        return not data[4] & 0x15
    return False


def rebuild(method: int, records: bytes) -> bytes:
    """The compressed bytes of a chunk, written again with compressor `method`."""
    entry = REBUILDERS.get(method)
    if entry is None:
        raise FormatError(f"unknown chunk compressor id {method} in MCAP skeleton")
    return entry[2](records)


def find_rebuilder(
    compression: str, compressed: memoryview, records: bytes, order: list[int]
) -> int | None:
    """The id of the compressor that gives `compressed` back from `records`, or None; `order`
    (most recently matched first) is updated so a file's chunks cost one try each."""
    if not could_rebuild(compression, compressed):
        return None
    for method in order:
        kind, _, compress = REBUILDERS[method]
        if kind != compression:
            continue
        out = compress(records)
        if len(out) == len(compressed) and out == compressed:
            if order[0] != method:
                order.remove(method)
                order.insert(0, method)
            return method
    return None
