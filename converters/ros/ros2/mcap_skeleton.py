"""The skeleton of an MCAP storage file, and the join that fills it again.

A skeleton is a list of operations over a blob of kept bytes: COPY n (the next n bytes of the
blob), DATA (the next message's data), DROP n (consume n datas: a kept chunk's), BEGIN
method / END size+crc (the pieces between are a chunk's records, compressed again). `Ops`
writes it while `mcap_file` walks the file; `join_mcap` reads it back.
"""

from __future__ import annotations

import struct
import sys
import zlib
from array import array
from collections.abc import Iterable, Iterator

from nanorec.errors import FormatError

from . import mcap_records as rec

SKELETON_MAGIC = b"nrMCAPsk"
SKELETON_VERSION = 1
_SKELETON_HEAD = struct.Struct("<BQQQ")  # version, file size, operations, blob size

COPY, DATA, DROP, BEGIN, END = range(5)

#: opcode u8 + length u64 + channel u16 + sequence u32 + log_time u64 + publish_time u64
MESSAGE_HEAD = rec.RECORD_HEAD.size + rec.MESSAGE_HEAD.size
_U64 = struct.Struct("<Q")


class Ops:
    """The skeleton being written: operations, and the blob of bytes COPY takes from."""

    def __init__(self) -> None:
        self.kinds = bytearray()
        self.args = array("Q")
        self.blob = bytearray()
        self.pending = 0

    def raw(self, piece: memoryview | bytes) -> None:
        self.blob += piece
        self.pending += len(piece)

    def op(self, kind: int, arg: int) -> None:
        if self.pending:
            self.kinds.append(COPY)
            self.args.append(self.pending)
            self.pending = 0
        self.kinds.append(kind)
        self.args.append(arg)

    def skeleton(self, file_size: int) -> bytes:
        if self.pending:
            self.kinds.append(COPY)
            self.args.append(self.pending)
            self.pending = 0
        args = self.args
        if sys.byteorder != "little":
            args = array("Q", args)
            args.byteswap()
        head = _SKELETON_HEAD.pack(SKELETON_VERSION, file_size, len(self.kinds), len(self.blob))
        return b"".join((SKELETON_MAGIC, head, self.kinds, args.tobytes(), self.blob))


def join_mcap(
    skeleton: bytes | memoryview, datas: Iterable[bytes | memoryview]
) -> Iterator[bytes | memoryview]:
    """The pieces of the original file, byte for byte: `skeleton` with `datas` (in the order
    `messages()` yielded them) put back, and rebuilt chunks compressed again.

    Raises FormatError when the datas do not fit (another count, another size) or a chunk does
    not compress back to its recorded size and CRC (another zstd/lz4 library release)."""
    sk = memoryview(skeleton)
    top = len(SKELETON_MAGIC) + _SKELETON_HEAD.size
    if len(sk) < top or bytes(sk[:8]) != SKELETON_MAGIC:
        raise FormatError("not an MCAP skeleton", offset=0)
    version, file_size, count, blob_size = _SKELETON_HEAD.unpack_from(sk, 8)
    if version != SKELETON_VERSION:
        raise FormatError("unknown MCAP skeleton version", offset=8, actual=version)
    if len(sk) != top + 9 * count + blob_size:
        raise FormatError("MCAP skeleton of another size", offset=0)
    kinds = sk[top : top + count]
    args = array("Q")
    args.frombytes(sk[top + count : top + 9 * count])
    if sys.byteorder != "little":
        args.byteswap()
    blob = sk[top + 9 * count :]
    source = iter(datas)
    pos = 0
    written = 0
    chunk: list[bytes | memoryview] | None = None
    method = 0
    last: memoryview = blob[:0]
    for kind, arg in zip(kinds, args, strict=True):
        if kind == COPY:
            if pos + arg > blob_size:
                raise FormatError("MCAP skeleton copies past its blob")
            last = blob[pos : pos + arg]
            pos += arg
            piece: bytes | memoryview = last
        elif kind == DATA:
            data = next(source, None)
            if data is None:
                raise FormatError("fewer message datas than the MCAP skeleton holds")
            if len(last) < MESSAGE_HEAD or (
                _U64.unpack_from(last, len(last) - MESSAGE_HEAD + 1)[0]
                != len(data) + rec.MESSAGE_HEAD.size
            ):
                raise FormatError("message data of another size than its MCAP record")
            piece = data
        elif kind == DROP:
            for _ in range(arg):
                if next(source, None) is None:
                    raise FormatError("fewer message datas than the MCAP skeleton holds")
            continue
        elif kind == BEGIN:
            chunk, method = [], arg
            continue
        elif kind == END and chunk is not None:
            out = rec.rebuild(method, b"".join(chunk))
            chunk = None
            if (len(out) << 32) | zlib.crc32(out) != arg:
                raise FormatError("MCAP chunk does not compress back to its bytes")
            written += len(out)
            yield out
            continue
        else:
            raise FormatError(f"bad MCAP skeleton operation {kind}")
        if chunk is not None:
            chunk.append(piece)
        else:
            written += len(piece)
            yield piece
    if next(source, None) is not None:
        raise FormatError("more message datas than the MCAP skeleton holds")
    if written != file_size or pos != blob_size:
        raise FormatError("MCAP skeleton does not join to its file size", expected=file_size)
