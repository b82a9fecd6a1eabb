"""The joins as they were before export read data in runs (one message at a time): the
reference the batched joins (`db3_skeleton.join_db3`, `mcap_skeleton.join_mcap`) must equal,
byte for byte and error for error."""

# ruff: noqa
# mypy: ignore-errors

from __future__ import annotations

import struct
import sys
import zlib
from array import array
from collections.abc import Iterable, Iterator

import numpy as np

from nanorec.converters.ros.ros2 import mcap_records as rec
from nanorec.converters.ros.ros2 import db3_skeleton as db3
from nanorec.converters.ros.ros2.db3_skeleton import _unleb, _unzigzag
from nanorec.converters.ros.ros2.mcap_skeleton import (
    _U64,
    BEGIN,
    COPY,
    DATA,
    DROP,
    END,
    MESSAGE_HEAD,
    SKELETON_HEAD,
    SKELETON_MAGIC,
    SKELETON_VERSION,
)
from nanorec.errors import FormatError, TruncatedError


def old_join_db3(
    skeleton: bytes | memoryview, datas: Iterable[bytes | memoryview]
) -> Iterator[bytes | memoryview]:
    """The pieces of the original file, from its skeleton and the messages' data in the
    order `messages()` gave them. Data is held only while the file order still needs it."""
    sk = memoryview(skeleton).cast("B")
    if len(sk) < db3.SKELETON_HEAD.size or bytes(sk[:8]) != db3.SKELETON_MAGIC:
        raise FormatError("not a .db3 skeleton", offset=0)
    _, nmsg, npieces, *sizes = db3.SKELETON_HEAD.unpack_from(sk)
    at = db3.SKELETON_HEAD.size
    arrays = []
    for size, count in zip(sizes, (nmsg, npieces, npieces), strict=True):
        if at + size > len(sk) or count > size:
            raise TruncatedError("skeleton table cut short", offset=at)
        arrays.append(_unleb(sk[at : at + size], count))
        at += size
    body = sk[at:]
    counts = arrays[0].astype(np.int64)
    lens = arrays[2].astype(np.int64)
    if int(counts.sum()) != npieces or np.any(lens <= 0) or int(lens.sum()) > 1 << 50:
        raise FormatError("skeleton table is inconsistent")
    csum = np.cumsum(lens)
    pos = np.cumsum(_unzigzag(arrays[1])) + csum - lens
    order = np.argsort(pos, kind="stable")
    spos = pos[order]
    ends = spos + lens[order]
    total = len(body) + (int(csum[-1]) if npieces else 0)
    if npieces and (spos[0] < 0 or ends[-1] > total or np.any(spos[1:] < ends[:-1])):
        raise FormatError("skeleton pieces overlap or lie outside the file")
    msg = np.repeat(np.arange(nmsg), counts)
    first = np.cumsum(counts) - counts
    starts = (
        (csum - lens)[np.minimum(first, max(npieces - 1, 0))]
        if npieces
        else np.zeros(nmsg, np.int64)
    )
    inner = csum - lens - np.repeat(starts, counts)
    sizes_of = np.zeros(nmsg, np.int64)
    np.add.at(sizes_of, msg, lens)
    source = iter(datas)
    held: dict[int, memoryview] = {}
    left: dict[int, int] = {}
    pulled = 0
    fpos = bpos = 0
    for m, off, k, p in zip(
        msg[order].tolist(), inner[order].tolist(), lens[order].tolist(), spos.tolist(), strict=True
    ):
        while m not in held:
            pulled = _pull(source, pulled, sizes_of, held, left)
        if p > fpos:
            yield body[bpos : bpos + p - fpos]
            bpos += p - fpos
        yield held[m][off : off + k]
        fpos = p + k
        left[m] -= k
        if not left[m]:
            del held[m], left[m]
    while pulled < nmsg:
        pulled = _pull(source, pulled, sizes_of, held, left)
    if next(source, None) is not None:
        raise FormatError(f"more data than the {nmsg} messages of the skeleton")
    if bpos < len(body):
        yield body[bpos:]


def _pull(
    source: Iterator[bytes | memoryview],
    pulled: int,
    sizes: npt.NDArray[np.int64],
    held: dict[int, memoryview],
    left: dict[int, int],
) -> int:
    """Take the next message's data from `source`, checking its length."""
    if pulled >= len(sizes):
        raise FormatError("skeleton pieces name a message that does not exist")
    data = next(source, None)
    if data is None:
        raise FormatError(f"{pulled} data given, the skeleton has {len(sizes)} messages")
    view = memoryview(data).cast("B")
    if len(view) != sizes[pulled]:
        raise FormatError(
            f"message {pulled} has {len(view)} bytes, the skeleton {int(sizes[pulled])}"
        )
    if len(view):
        held[pulled] = view
        left[pulled] = len(view)
    return pulled + 1


def old_join_mcap(
    skeleton: bytes | memoryview, datas: Iterable[bytes | memoryview]
) -> Iterator[bytes | memoryview]:
    """The pieces of the original file, byte for byte: `skeleton` with `datas` (in the order
    `messages()` yielded them) put back, and rebuilt chunks compressed again.

    Raises FormatError when the datas do not fit (another count, another size) or a chunk does
    not compress back to its recorded size and CRC (another zstd/lz4 library release)."""
    sk = memoryview(skeleton)
    top = len(SKELETON_MAGIC) + SKELETON_HEAD.size
    if len(sk) < top or bytes(sk[:8]) != SKELETON_MAGIC:
        raise FormatError("not an MCAP skeleton", offset=0)
    version, file_size, count, blob_size = SKELETON_HEAD.unpack_from(sk, 8)
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
