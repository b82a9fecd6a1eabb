"""One block of the messages stream, deflated (`nanorec.archive.blocks` cuts the stream into
blocks and hands them over): each with a fresh compressor at a sampled level
(`compress_blocks`, the deflating threads' way), or by one compressor a level kept from
block to block (`FastBlocks`, a small source's, in the writing thread); a block whose bytes
do not deflate is written as stored deflate blocks (`stored`), so the member stays one
deflate stream that any zip reader inflates."""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable
from typing import Final

from nanorec.archive.crc import crc32, pieces_crc
from nanorec.archive.deflate import LEVEL, Compressor, isal_deflate, raw_compressor
from nanorec.buffers import Buffer

#: Compressed bytes, as pieces written one after the other.
Pieces = list[bytes | memoryview]
#: A block's uncompressed bytes: its pieces in order (one, unless the caller lent them).
Block = tuple[bytes | memoryview, ...]
#: ISA-L deflates a block up to this size before the block's sample would be set up: the
#: block itself says whether it deflates.
_SMALL_BLOCK: Final = 32 << 10
#: A block is stored when this many bytes from its middle deflate (level 1) to more than
#: `_STORE_ABOVE` of their size.
_SAMPLE: Final = 1024
_STORE_ABOVE: Final = 0.9
_STORED_MAX: Final = 0xFFFF
_STORED_HEADER: Final = struct.Struct("<BHH")


class FastBlocks:
    """The blocks of a small source (a CARLA log of 0.1-2 MB), deflated in the writing thread
    at the level `compress_block` gives them, but by one compressor a level kept from block
    to block (fully flushed after each), each block's own deflate deciding whether it is
    stored instead. A fresh compressor and a sampled level per 16 KiB block cost ~60 us to set
    up (its 256 KiB allocated and faulted in again) and ~100 us to sample, about what the
    level-1 deflate of a block of CARLA frames takes. A full flush ends every back-reference,
    so each block still inflates on its own. The bytes may differ from fresh compressors' (a
    match may be chosen by the bytes a previous block left beyond this one's end, and the
    store rule looks at the whole block, not a sample) but depend on the messages alone: the
    same source gives the same archive (identical to fresh compressors' on every real CARLA
    log and sample)."""

    def __init__(self) -> None:
        self._compressors: dict[bool, Compressor] = {}
        #: The CRC-32 of the blocks so far, in order (they come in order): one pass over bytes
        #: in cache, where joining a CRC a block (`crc.joined_crc`) cost ~0.7 ms a file.
        self.crc = 0

    def compress(self, batch: list[tuple[Block, bool, bool, bool]]) -> list[tuple[Pieces, int]]:
        """`compress_blocks` of a batch, the fast way (no CRC a block: see `crc`)."""
        out: list[tuple[Pieces, int]] = []
        for data, fast, _, _ in batch:
            for piece in data:
                self.crc = crc32(piece, self.crc)
            out.append((self._block(data, fast), -1))
        return out

    def _block(self, data: Block, fast: bool) -> Pieces:
        compressor = self._compressors.get(fast)
        if compressor is None:
            compressor = self._compressors[fast] = raw_compressor(fast=fast)
        return _flushed(compressor, data, sum(map(len, data)), may_store=True)


def _level(data: bytes | memoryview) -> int:
    """`LEVEL`, or 0 (stored deflate blocks, still one valid deflate stream for any zip
    reader) when a sample from the middle of `data` does not deflate: already-compressed
    bytes such as gzip members, where deflating costs ~15 ms a MB for nothing."""
    sample = _middle(data)
    if sample is not None and len(_sample_deflate(sample, 1)) > _STORE_ABOVE * _SAMPLE:
        return 0
    return LEVEL


def _sample_expands(data: bytes | memoryview) -> bool:
    """Whether `_SAMPLE` bytes from the middle of a small block grow under ISA-L's level 0
    (~4 us): already-compressed bytes, which deflating the whole block (~30-60 us) would
    only find out to store them (pbstream's blocks of gzip members: a fifth of a compact
    conversion's CPU)."""
    sample = _middle(data)
    return sample is not None and len(_sample_deflate(sample, 0)) > _SAMPLE


def _middle(data: bytes | memoryview) -> bytes | memoryview | None:
    """`_SAMPLE` bytes from the middle of `data`; None when it is too short to sample."""
    if len(data) < 2 * _SAMPLE:
        return None
    middle = len(data) // 2
    return data[middle - _SAMPLE // 2 : middle + _SAMPLE // 2]


#: zlib's `compress` sets up a compressor per call: ~80 us for a 1 KiB sample, more than
#: deflating a block of small messages; ISA-L's level 1 gives about the same size in ~10 us.
_sample_deflate: Callable[[Buffer, int], bytes] = (
    zlib.compress if isal_deflate is None else isal_deflate.compress
)


def compress_blocks(batch: list[tuple[Block, bool, bool, bool]]) -> list[tuple[Pieces, int]]:
    """A batch of blocks, each `(pieces, fast, with_crc, precompressed)`, compressed in order,
    each with its CRC-32 when `with_crc` (else -1)."""
    return [
        (compress_block(data, fast, precompressed), pieces_crc(data) if with_crc else -1)
        for data, fast, with_crc, precompressed in batch
    ]


def compress_block(data: Block, fast: bool, precompressed: bool = False) -> Pieces:
    """One block, fully flushed: stored (`_stored`) when it does not deflate, else deflated
    (the fast way when `fast`: see `nanorec.archive.deflate`). Whether it deflates: a sample's say
    (`_level`),
    or for a small ISA-L block the block's own deflate, which costs about what setting up a
    level-1 sample does; with `precompressed` (most blocks will not deflate), unless a
    cheaper sample already grows (`_sample_expands`; for CARLA's frames, which all deflate,
    it cost ~5 % of a compact conversion). The sample comes from the block's largest piece."""
    size = sum(map(len, data))
    largest = max(data, key=len)
    small = fast and isal_deflate is not None and size <= _SMALL_BLOCK
    if small and precompressed and _sample_expands(largest):
        return stored(data)
    if not small and _level(largest) == 0:
        return stored(data)
    return _flushed(raw_compressor(fast=fast), data, size, may_store=small)


def _flushed(compressor: Compressor, data: Block, size: int, *, may_store: bool) -> Pieces:
    """`data` (`size` bytes) deflated by `compressor` and fully flushed (each block inflates
    on its own); stored instead, when `may_store`, if deflating made it grow."""
    out = [compressor.compress(piece) for piece in data]
    out.append(compressor.flush(zlib.Z_FULL_FLUSH))
    deflated = b"".join(out)
    if may_store and len(deflated) > _STORE_ABOVE * size:
        return stored(data)
    return [deflated]


def stored(data: Block) -> Pieces:
    """`data` as stored deflate blocks (BTYPE 00: a zero header byte, LEN, NLEN, up to 65,535
    bytes each), byte-aligned like a full flush: what zlib writes at level 0, without the
    ~70 µs zlib spends setting up a compressor for a block, and without copying `data`."""
    if len(data) > 1:
        return _stored_pieces(data)
    view = memoryview(data[0])
    parts: Pieces = []
    for start in range(0, len(view), _STORED_MAX):
        chunk = view[start : start + _STORED_MAX]
        parts += (_STORED_HEADER.pack(0, len(chunk), len(chunk) ^ 0xFFFF), chunk)
    return parts


def _stored_pieces(data: Block) -> Pieces:
    """`_stored` of a block of several pieces: a stored block may span pieces."""
    parts: Pieces = []
    held: Pieces = []  # the open stored block's slices
    room = _STORED_MAX
    for piece in data:
        view = memoryview(piece)
        while len(view):
            held.append(view[:room])
            room -= len(held[-1])
            view = view[len(held[-1]) :]
            if not room:
                parts += (_STORED_HEADER.pack(0, _STORED_MAX, 0), *held)
                held, room = [], _STORED_MAX
    if held:
        length = _STORED_MAX - room
        parts += (_STORED_HEADER.pack(0, length, length ^ 0xFFFF), *held)
    return parts


__all__ = ["Block", "FastBlocks", "Pieces", "compress_blocks", "stored"]
