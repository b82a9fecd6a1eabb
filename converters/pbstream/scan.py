"""The fast path of `convert`: all frame boundaries in one pass, and small members inflated
whole in one C call that also checks them.

Converting is bound by per-record Python work (~0.5 KB a record), so what is done per record
is cut to the least: the size prefixes are read in one tight loop before any record is
described (`frame_table`); the members of Cartographer's header up to `WHOLE_BELOW` bytes
(most records: odometry, IMU, nodes) of a run are inflated whole by ISA-L (`isal`, the `fast`
extra) in one call, each with its gzip CRC-32 and ISIZE checked (`inflate_run`; one
`whole_payload` a member without ISA-L, or when the run holds anything unusual), which costs
less than inflating their first bytes and inflating them again on the checking thread; only
larger members (submaps, pose graphs: few, but most of the bytes) are peeked and checked
whole beside the conversion (`crc.MemberCheck`, one long call each, so the two threads seldom
wait for each other's GIL). Anything unusual (another gzip header, damage, a record the
prefix scan does not know) returns None here and takes the general path, which reports it.
"""

from __future__ import annotations

import importlib
import io
import os
import zlib
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import IO, Any, Final, TypeAlias

import numpy as np

from nanorec.archive.deflate import Decompressor, isal_zlib
from nanorec.buffers import Buffer

from .stream import GZIP_HEADER, MAX_PAYLOAD, SIZE, Cut

#: Members below this many bytes are inflated whole on the converting thread.
WHOLE_BELOW: Final = 4096
_GZIP_WBITS: Final = 31


#: ISA-L's `GzipFile` class (loaded by name: isal is an optional extra).
_MembersFile: TypeAlias = Callable[..., AbstractContextManager[IO[bytes]]]

#: ISA-L's zlib-compatible module (~1.5x zlib on these members), else zlib.
_decompressobj: Callable[[int], Decompressor] = (
    zlib.decompressobj if isal_zlib is None else isal_zlib.decompressobj
)
_errors: Final = (zlib.error,) if isal_zlib is None else (zlib.error, isal_zlib.error)


def _members_reader() -> _MembersFile | None:
    """ISA-L's `GzipFile`: many members read in one C call, up to a bound, or None."""
    try:
        found: _MembersFile = importlib.import_module("isal.igzip").GzipFile
        return found
    except ImportError:  # pragma: no cover - depends on the environment
        return None


_members_file = _members_reader()
_SIGNATURE: Final = GZIP_HEADER[:3]
#: Cartographer's gzip header with the FNAME flag: a name of `_NAME` random bytes and its
#: zero follow, as long as a size prefix and the header it replaces (`inflate_run`).
_NAMED_HEADER: Final = GZIP_HEADER[:3] + bytes((GZIP_HEADER[3] | 0x08,)) + GZIP_HEADER[4:]
_NAME: Final = SIZE.size - 1
_HEADER_SPAN: Final = np.arange(SIZE.size + len(GZIP_HEADER))
_FOUR: Final = np.arange(4)


def frame_table(buf: Buffer, start: int) -> tuple[list[int], list[int], Cut | None]:
    """The offset and size of every complete record from `start`, and the `Cut` where the
    file ends inside one (as `stream.iter_frames`, without an object per record). The loop
    reads a memoryview (`unpack_from` on an mmap costs more) and keeps only the offsets."""
    view = memoryview(buf)
    total = len(view)
    unpack = SIZE.unpack_from
    offsets: list[int] = []
    add_offset = offsets.append
    pos = start
    last = total - 8  # the last offset an 8-byte size fits at
    cut: Cut | None = None
    try:
        while pos <= last:
            (size,) = unpack(view, pos)
            if size > last - pos:
                left = last - pos
                cut = Cut(pos, f"the record size says {size} bytes but only {left} follow")
                break
            add_offset(pos)
            pos += 8 + size
        else:
            if pos < total:
                cut = Cut(pos, f"{total - pos} bytes left where an 8-byte record size belongs")
    finally:
        view.release()
    ends = np.array([*offsets[1:], pos], np.int64)
    sizes: list[int] = (ends - np.array(offsets, np.int64) - 8).tolist()
    return offsets, sizes, cut


def whole_payload(member: bytes) -> bytes | None:
    """The payload of a member with Cartographer's gzip header, inflated whole and checked
    as `stream.inflate_member` checks it (one member, CRC-32, ISIZE; its output is bounded
    by the member's size, below `WHOLE_BELOW`); None for anything else, which the general
    path then reads and reports."""
    if member[:10] != GZIP_HEADER:
        return None
    return _inflated(member)


def declared_payload(member: bytes) -> bytes | None:
    """`whole_payload` for a member of any size (Parquet export), its output bounded by the
    size its trailer declares (ISIZE, at most `MAX_PAYLOAD`) and required to be exactly
    that; None for anything else (`stream.inflate_member` says what). ISA-L and its own
    CRC check cost ~0.6x `inflate_member`'s zlib and separate CRC."""
    if member[:10] != GZIP_HEADER or len(member) < 18:
        return None
    declared = int.from_bytes(member[-4:], "little")
    if declared > MAX_PAYLOAD:
        return None
    payload = _inflated(member, declared + 1)
    return payload if payload is not None and len(payload) == declared else None


def _inflated(member: bytes, limit: int = 0) -> bytes | None:
    """The one gzip member `member` inflated (at most `limit` bytes; 0: no bound) and
    checked to end where it does (its CRC-32 and ISIZE checked by the inflater), else None."""
    inflater = _decompressobj(_GZIP_WBITS)
    try:
        payload: bytes = inflater.decompress(member, limit)
    except _errors:
        return None
    if not inflater.eof or inflater.unused_data:
        return None
    return payload


def inflate_run(
    source: Buffer,
    starts: np.ndarray[Any, np.dtype[np.int64]],
    sizes: np.ndarray[Any, np.dtype[np.int64]],
) -> tuple[bytes, np.ndarray[Any, np.dtype[np.int64]]] | None:
    """The payloads of the members of `source` at `starts` (`sizes` bytes each, each after
    its 8-byte size prefix, in order), that each start with Cartographer's gzip header
    (below `WHOLE_BELOW` bytes; the caller checks the header and bounds the sizes they
    declare), inflated in one ISA-L call, joined, and each one's size; None when they do not
    read exactly as one `whole_payload` per member would (or without ISA-L): the caller then
    takes them one at a time. No more is inflated than their trailers declare (ISIZE).

    The buffer inflated is the members as they lie, copied a stretch of adjacent records at
    a time, with each record's size prefix and gzip header (18 bytes) overwritten by
    Cartographer's header with a name (FNAME) of random bytes: decoding one member into the
    next would put bytes nobody could know into its CRC, so each member ends inside its own
    bytes. Exactly one gzip signature per member (none inside: no member holds a second one)
    and sizes from the trailers (ISIZE) that add up to the output leave only one way to read
    them: each member whole, ending at its last byte (a member with zeros after it reads a
    smaller ISIZE there: the sum falls short, unless its payload is empty, which the caller
    sends to the general path as it does when `whole_payload` refuses it)."""
    if _members_file is None or not len(starts):
        return None
    name = bytes(byte or 1 for byte in os.urandom(_NAME))
    header = np.frombuffer(_NAMED_HEADER + name + b"\0", np.uint8)
    ends = starts + sizes
    breaks = np.flatnonzero(starts[1:] != ends[:-1] + SIZE.size) + 1
    first = np.concatenate(([0], breaks))
    last = np.concatenate((breaks, [len(starts)])) - 1
    joined = bytearray().join(
        [
            source[a:b]
            for a, b in zip((starts[first] - SIZE.size).tolist(), ends[last].tolist(), strict=True)
        ]
    )
    flat = np.frombuffer(joined, np.uint8)
    records = sizes + SIZE.size
    at = np.cumsum(records) - records  # where each record's size prefix lies in `joined`
    flat[at[:, None] + _HEADER_SPAN] = header
    if joined.count(_SIGNATURE) != len(starts):
        return None
    # each member's ISIZE: its last four bytes
    trailers = flat.take((at + records - 4)[:, None] + _FOUR)
    found: np.ndarray[Any, np.dtype[np.int64]] = trailers.view("<u4")[:, 0].astype(np.int64)
    declared = int(found.sum())
    try:
        with _members_file(fileobj=io.BytesIO(joined)) as members:
            payloads: bytes = members.read(declared + 1)
    except (*_errors, OSError, EOFError, ValueError):
        return None
    if len(payloads) != declared:
        return None
    return payloads, found


def check_whole(member: bytes, limit: int) -> bool:
    """Whether a member with Cartographer's header inflates whole to at most `limit` bytes,
    CRC-32 and ISIZE right, nothing after it (False: the general check tells what is wrong)."""
    if member[:10] != GZIP_HEADER:
        return False
    inflater = _decompressobj(_GZIP_WBITS)
    try:
        inflater.decompress(member, limit + 1)
    except _errors:
        return False
    return bool(inflater.eof) and not inflater.unused_data


__all__ = [
    "WHOLE_BELOW",
    "check_whole",
    "declared_payload",
    "frame_table",
    "inflate_run",
    "whole_payload",
]
