"""ROS bag 2.0 records: `u32 header length, header, u32 data length, data`.

A header is a list of fields, each `u32 length` + `name=value` (the name runs to the first
`=`; the value is raw bytes). Field order differs between ROS's writers, so a field list is
kept as read (`Fields`, a tuple of `(name, value)` pairs) and looked up by name.
"""

from __future__ import annotations

import contextlib
import mmap
import struct
from typing import Final, TypeAlias

from nanorec.buffers import Buffer
from nanorec.errors import FormatError, NanorecError, TruncatedError

VERSION_LINE: Final = b"#ROSBAG V2.0\n"
#: Where ROS's writers start the first chunk: version line + bag header record of 4104 bytes.
BAG_HEADER_SPACE: Final = 4096

OP_MESSAGE: Final = 0x02
OP_BAG_HEADER: Final = 0x03
OP_INDEX: Final = 0x04
OP_CHUNK: Final = 0x05
OP_CHUNK_INFO: Final = 0x06
OP_CONNECTION: Final = 0x07

#: A record header longer than this is taken as damage, not allocated (real ones: < 200 B;
#: connection definitions are in the data, not the header).
MAX_HEADER: Final = 1 << 20

Fields = tuple[tuple[bytes, bytes], ...]
#: A bag's bytes as its walk reads them: the file (or the spool) mapped, or bytes (an empty
#: file): both search (`find`) and slice to bytes, which a memoryview does not.
BagBytes: TypeAlias = bytes | mmap.mmap

_U32: Final = struct.Struct("<I")
_U64: Final = struct.Struct("<Q")
_TIME: Final = struct.Struct("<II")


def parse_fields(data: Buffer, start: int, end: int, where: int) -> Fields:
    """The fields of the header `data[start:end]`; `where` is its offset in the file (for
    errors). Raises `FormatError` for a field running past the header or without `=`."""
    fields = []
    pos = start
    while pos < end:
        if pos + 4 > end:
            raise FormatError("a header field length is cut", offset=where + pos - start)
        (length,) = _U32.unpack_from(data, pos)
        pos += 4
        if length > end - pos:
            raise FormatError(
                f"a header field of {length} bytes runs past its header", offset=where + pos - start
            )
        field = bytes(data[pos : pos + length])
        eq = field.find(b"=")
        if eq < 0:
            raise FormatError("a header field has no '='", offset=where + pos - start)
        fields.append((field[:eq], field[eq + 1 :]))
        pos += length
    return tuple(fields)


def build_fields(fields: Fields) -> bytes:
    """The header bytes of `fields`, in their order."""
    return b"".join(_U32.pack(len(n) + 1 + len(v)) + n + b"=" + v for n, v in fields)


def record(fields: Fields, data: bytes) -> bytes:
    """A whole record: header length, header, data length, data."""
    header = build_fields(fields)
    return _U32.pack(len(header)) + header + _U32.pack(len(data)) + data


def get(fields: Fields, name: bytes) -> bytes | None:
    for key, value in fields:
        if key == name:
            return value
    return None


def need(fields: Fields, name: bytes, size: int | None, where: int) -> bytes:
    """Field `name`, of `size` bytes when given; `FormatError` naming `where` otherwise."""
    value = get(fields, name)
    if value is None:
        raise FormatError(f"record has no {name.decode()!r} field", offset=where)
    if size is not None and len(value) != size:
        raise FormatError(
            f"field {name.decode()!r} has {len(value)} bytes, not {size}", offset=where
        )
    return value


def u32(value: bytes) -> int:
    return int(_U32.unpack(value)[0])


def u64(value: bytes) -> int:
    return int(_U64.unpack(value)[0])


def time_ns(value: bytes) -> int:
    sec, nsec = _TIME.unpack(value)
    return int(sec) * 1_000_000_000 + int(nsec)


def op_of(fields: Fields, where: int) -> int:
    return need(fields, b"op", 1, where)[0]


class Span:
    """Where one record lies: `start` (its header-length word), header and data ranges."""

    __slots__ = ("data_end", "data_start", "header_end", "header_start", "start")

    def __init__(self, start: int, header_end: int, data_start: int, data_end: int) -> None:
        self.start = start
        self.header_start = start + 4
        self.header_end = header_end
        self.data_start = data_start
        self.data_end = data_end


def span_at(data: Buffer, pos: int, end: int) -> Span:
    """The record at `data[pos:]` bounded by `end`. Raises `TruncatedError` when its lengths run
    past `end`, `FormatError` for an absurd header length."""
    if pos + 4 > end:
        raise TruncatedError("a record header length is cut", offset=pos)
    (header_len,) = _U32.unpack_from(data, pos)
    if header_len > MAX_HEADER:
        raise FormatError(f"a record header of {header_len} bytes is not believable", offset=pos)
    header_end = pos + 4 + header_len
    if header_end + 4 > end:
        raise TruncatedError("a record header is cut", offset=pos)
    (data_len,) = _U32.unpack_from(data, header_end)
    data_end = header_end + 4 + data_len
    if data_end > end:
        raise TruncatedError(
            f"a record's {data_len} data bytes run past the end", offset=pos, expected=data_len
        )
    return Span(pos, header_end, header_end + 4, data_end)


#: How far before its `op` field a plausible record may start (its header's other fields).
_RESYNC_BACK: Final = 512
_RESYNC_WINDOW: Final = 16 << 20
_OP_FIELD: Final = b"\x04\x00\x00\x00op="


def _plausible(data: Buffer, pos: int, end: int) -> bool:
    """Whether a message or connection record with its fields starts at `pos`, and the
    record after it parses too (or it ends at `end`)."""
    try:
        span = span_at(data, pos, end)
        fields = parse_fields(data, span.header_start, span.header_end, pos)
        op = op_of(fields, pos)
        need(fields, b"conn", 4, pos)
        if op == OP_MESSAGE:
            need(fields, b"time", 8, pos)
        elif op == OP_CONNECTION:
            need(fields, b"topic", None, pos)
        else:
            return False
        if span.data_end < end:
            after = span_at(data, span.data_end, end)
            op_of(parse_fields(data, after.header_start, after.header_end, after.start), pos)
    except NanorecError:
        return False
    return True


def next_record(data: BagBytes, pos: int, end: int) -> int:
    """Where the first plausible record after a damaged one at `pos` starts (`end` if none):
    found by its `op` field (`find` runs in C), then the record start before it that
    parses. `data` is bytes or an mmap, searched a window at a time (a map's pages dropped
    after each: a damaged stretch may be gigabytes)."""
    at = pos + 1
    while at < end:
        stop = min(at + _RESYNC_WINDOW, end)
        found = data.find(_OP_FIELD, at, stop)
        if found < 0:
            if stop == end:
                break
            at = stop - len(_OP_FIELD) + 1
            if isinstance(data, mmap.mmap):
                with contextlib.suppress(OSError, ValueError):
                    data.madvise(mmap.MADV_DONTNEED)
            continue
        for start in range(found - 4, max(pos, found - 4 - _RESYNC_BACK), -1):
            header_len = _U32.unpack_from(data, start)[0]
            if start + 4 + header_len >= found + 8 and _plausible(data, start, end):
                return start
        at = found + 1
    return end


def pack_u32(value: int) -> bytes:
    return _U32.pack(value)


def pack_u64(value: int) -> bytes:
    return _U64.pack(value)


def pack_time(ns: int) -> bytes:
    """A ROS1 `time` (two uint32: seconds, nanoseconds); a time it cannot hold (before 1970,
    or 2^32 s on) is a FormatError saying so, not a struct.error."""
    secs, nsecs = divmod(ns, 1_000_000_000)
    if not 0 <= secs < 1 << 32:
        raise FormatError(f"time {ns} ns is outside what a ROS1 bag holds (0 to 2^32 s)")
    return _TIME.pack(secs, nsecs)
