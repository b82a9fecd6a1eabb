"""CRC-32 (zlib's) of the parts of a stream from its running CRC, vectorised with numpy.

An archive needs the CRC of every message (the index) and of the whole messages member (the
zip entry): computing both reads every byte twice. The running CRC of the stream, taken
after each message, gives both in one pass: the CRC of `A + B` is
`shift(crc(A), len(B)) ^ crc(B)` (zlib's `crc32_combine`, which Python does not expose), so
`crc(B)` is the running CRC after B xor the shifted one before it. `shift` is linear over
GF(2): four 256-entry tables apply it to many values at once.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any

import numpy as np
import numpy.typing as npt

from nanorec.archive.deflate import isal_zlib
from nanorec.buffers import Buffer

_POLY = 0xEDB88320  # reflected
_ONE = 1 << 31  # the polynomial 1, reflected

U32 = npt.NDArray[np.uint32]


#: `crc32(data, value=0)`, as `zlib.crc32`: ISA-L's when installed (the `fast` extra: the
#: same values, ~4x faster with the CPU's carry-less multiply), else zlib's.
crc32: Callable[..., int] = zlib.crc32 if isal_zlib is None else isal_zlib.crc32


def pieces_crc(pieces: Sequence[Buffer]) -> int:
    """The CRC-32 of `pieces` joined, without joining them."""
    crc = 0
    for piece in pieces:
        crc = crc32(piece, crc)
    return crc


def _multiply(a: int, b: U32) -> U32:
    """`a * b` modulo the CRC polynomial (reflected), for every value of `b`."""
    product = np.zeros_like(b)
    b = b.copy()
    for bit in range(31, -1, -1):
        if a & (1 << bit):
            product ^= b
        b = np.where(b & 1, (b >> 1) ^ np.uint32(_POLY), b >> 1).astype(np.uint32)
    return product


def _multiply_scalar(a: int, b: int) -> int:
    """`a * b` modulo the CRC polynomial (reflected), in plain Python (one value)."""
    product = 0
    for bit in range(31, -1, -1):
        if a & (1 << bit):
            product ^= b
        b = (b >> 1) ^ _POLY if b & 1 else b >> 1
    return product


@lru_cache(maxsize=1)
def _powers() -> list[int]:
    """x^(2^k) modulo the polynomial, k = 0..31."""
    powers = [1 << 30]  # x^1
    for _ in range(31):
        powers.append(_multiply_scalar(powers[-1], powers[-1]))
    return powers


def _x8n(length: int) -> int:
    """x^(8 * length) modulo the polynomial: what appending `length` bytes multiplies by."""
    powers = _powers()
    result = _ONE
    k = 3
    while length:
        if length & 1:
            result = _multiply_scalar(powers[k & 31], result)
        length >>= 1
        k += 1
    return result


@lru_cache(maxsize=64)
def _tables(length: int) -> U32:
    """The shift by `length` bytes as four tables: entry [j, v] shifts `v << 8j`."""
    values = (
        np.arange(256, dtype=np.uint32)[None, :] << (8 * np.arange(4, dtype=np.uint32))[:, None]
    )
    return _multiply(_x8n(length), values.ravel()).reshape(4, 256)


def _shift(tables: U32, crcs: U32) -> U32:
    """`shift` applied to every value of `crcs`."""
    shifted: U32 = (
        tables[0][crcs & 0xFF]
        ^ tables[1][(crcs >> 8) & 0xFF]
        ^ tables[2][(crcs >> 16) & 0xFF]
        ^ tables[3][crcs >> 24]
    )
    return shifted


@lru_cache(maxsize=64)
def _power_tables(bit: int) -> U32:
    """`_tables(2**bit)`, kept apart from `_tables`' cache of part lengths."""
    return _tables.__wrapped__(1 << bit)


def joined_crc(crcs: npt.NDArray[Any], lengths: npt.NDArray[Any]) -> int:
    """The CRC-32 of parts joined in order, from each part's CRC and length (the parts' bytes
    are not read again). The CRC of the whole is the XOR of every part's CRC shifted by the
    bytes after it; the shifts run bit by bit over those counts, for all parts at once.
    Many parts of few lengths (a run of small messages) are first folded in groups
    (`_folded`): the same value, several times sooner."""
    values = np.array(crcs, np.uint32)
    sizes = np.asarray(lengths, np.int64)
    if len(values) >= _FOLD_FROM:
        distinct = np.unique(sizes)
        if len(distinct) <= _FOLD_LENGTHS:
            values, sizes = _folded(values, sizes, distinct.tolist())
    after = (int(sizes.sum()) - np.cumsum(sizes)).astype(np.uint64)
    index = np.flatnonzero(after)  # the parts still to shift
    after = after[index]
    bit = 0
    while len(index):
        odd = (after & np.uint64(1)).astype(bool)
        if odd.any():
            chosen = index[odd]
            values[chosen] = _shift(_power_tables(bit), values[chosen])
        after >>= np.uint64(1)
        keep = after != 0
        after, index = after[keep], index[keep]
        bit += 1
    return int(np.bitwise_xor.reduce(values)) if len(values) else 0


#: `joined_crc` folds groups when there are this many parts, of at most this many lengths.
_FOLD_FROM = 4096
_FOLD_LENGTHS = 4
_GROUP = 64


def _folded(values: U32, sizes: npt.NDArray[np.int64], distinct: list[int]) -> tuple[
    U32, npt.NDArray[np.int64]
]:  # fmt: skip
    """Each group of `_GROUP` consecutive parts as one part (its CRC, its length): Horner's
    rule, `crc(A + B) = shift(crc(A), len(B)) ^ crc(B)`, for all groups at once, one
    part of each a step; a shift by one of the few lengths is one set of tables."""
    pad = -len(values) % _GROUP  # empty parts first: CRC 0, shift by 0 bytes
    table = np.concatenate((np.zeros(pad, np.uint32), values)).reshape(-1, _GROUP)
    lengths = np.concatenate((np.zeros(pad, np.int64), sizes)).reshape(-1, _GROUP)
    folded = np.zeros(len(table), np.uint32)
    for step in range(_GROUP):
        column = lengths[:, step]
        for length in distinct:
            if not length:
                continue
            if len(distinct) == 1 and not pad:
                folded = _shift(_tables(length), folded)
            else:
                chosen = column == length
                folded[chosen] = _shift(_tables(length), folded[chosen])
        folded ^= table[:, step]
    return folded, lengths.sum(axis=1)


def part_crcs(running: npt.NDArray[Any], before: int, length: int) -> U32:
    """The CRC-32 of each part of a stream cut into parts all `length` bytes long, from the
    running CRCs after each part (`zlib.crc32(part, previous running CRC)`, which also gives
    the whole stream's) and the running CRC `before` the first: one pass over the bytes for
    both."""
    running = np.asarray(running, np.uint32)
    previous = np.empty_like(running)
    previous[0] = before
    previous[1:] = running[:-1]
    return running ^ _shift(_tables(length), previous)
