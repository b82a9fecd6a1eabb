"""Where a chunk's records start, taken from the MessageIndex records after it and checked.

Why: a chunk's records can only be found one after another (each says its own length), a
Python turn a record: ~1.5 µs, most of reading a chunk of small messages, done twice (when
the file opens and when its messages are read). rosbag2's writers (libmcap, the Python
`mcap` writer) follow each chunk with MessageIndex records that give the offset of every
message in it. Those offsets are only a guess: each one's record length is read with
numpy, and the walk is followed in Python only where a record does not end where the next
offset begins (schemas and channels at a chunk's start, the records after the last
message). A guess that leads anywhere else than that walk would is dropped whole, and the
walk is made record by record (`mcap_window.record_starts`): the answer is the same either
way, only faster with an index.
"""

from __future__ import annotations

import struct
from array import array
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from nanorec.buffers import Buffer

from .mcap_records import MESSAGE_INDEX

_LENGTH: Final = struct.Struct("<Q")
_COUNT: Final = struct.Struct("<I")
#: A MessageIndex record's content: channel id (2 bytes), then the byte length of its
#: (log_time, offset) pairs (4 bytes), then the pairs (16 bytes each).
_PAIRS_AT: Final = 6
#: A record's length: the 8 bytes after its opcode.
_LENGTH_BYTES: Final = np.arange(1, 9)
#: Offsets whose record lengths are read at once (a 64 MiB chunk of tiny messages has ~2 M).
_BLOCK: Final = 1 << 16


def index_offsets(buf: Any, end: int) -> NDArray[np.int64] | None:
    """The message offsets the MessageIndex records right after a chunk (ending at `end`
    in `buf`) give, sorted and unique; None when none follows (or one is malformed: it is
    only a guess, and the records are then walked one by one)."""
    size = len(buf)
    parts: list[NDArray[np.uint64]] = []
    pos = end
    while size - pos >= 9 + _PAIRS_AT and buf[pos] == MESSAGE_INDEX:
        length = _LENGTH.unpack_from(buf, pos + 1)[0]
        stop = pos + 9 + length
        pairs = _COUNT.unpack_from(buf, pos + 11)[0]
        if stop > size or length < _PAIRS_AT or pairs % 16 or pairs > length - _PAIRS_AT:
            return None
        at = pos + 9 + _PAIRS_AT
        parts.append(np.frombuffer(buf, "<u8", pairs // 8, at)[1::2])
        pos = stop
    if not parts:
        return None
    offsets = np.sort(np.concatenate(parts))  # (np.unique hashes: several times slower)
    if not len(offsets) or int(offsets[-1]) >= 1 << 62:
        return None
    offsets = offsets.astype(np.int64)
    distinct: NDArray[np.int64] = offsets[np.append(True, offsets[1:] != offsets[:-1])]
    return distinct


def indexed_starts(
    records: Buffer, offsets: NDArray[np.int64], empty_run: int
) -> tuple[NDArray[np.int64], int] | None:
    """`mcap_window.record_starts(records, empty_run)` from `offsets` (`index_offsets`), or
    None when they are not where that walk goes (then walk it)."""
    size = len(records)
    if int(offsets[-1]) > size - 9:
        return None
    data = np.frombuffer(records, np.uint8)
    lengths = np.empty(len(offsets), np.uint64)
    for at in range(0, len(offsets), _BLOCK):  # (8 int64 a message of index: in blocks)
        part = data[offsets[at : at + _BLOCK, None] + _LENGTH_BYTES]
        lengths[at : at + _BLOCK] = np.ascontiguousarray(part).view("<u8").reshape(-1)
    if int(lengths.max()) > size or not data[offsets].all():
        return None  # (an opcode 0 could be the start of a run of zeros: walked instead)
    ends = offsets + 9 + lengths.astype(np.int64)
    if int(ends.max()) > size:
        return None
    extra = array("q")
    # the walk from the start to the first offset, then wherever a record does not end at
    # the next offset, then on from the last one's end
    froms = [0, *ends[np.flatnonzero(ends[:-1] != offsets[1:])].tolist()]
    targets = [int(offsets[0]), *offsets[1:][ends[:-1] != offsets[1:]].tolist()]
    for start, target in zip(froms, targets, strict=True):
        if walk_records(records, start, target, empty_run, extra) != target:
            return None
    last = walk_records(records, int(ends[-1]), size, empty_run, extra)
    if not extra:
        return offsets, last
    starts = np.concatenate((offsets, np.frombuffer(extra, np.int64)))
    starts.sort()
    return starts, last


def walk_records(records: Any, pos: int, target: int, empty_run: int, starts: array[int]) -> int:
    """A chunk's records walked from `pos` as `mcap_file._walk` walks them, stopping at
    `target` or before a record running past the end or where `empty_run` empty records'
    worth of zeros begins; the starts it passes are added to `starts`; where it stopped."""
    size = len(records)
    unpack = _LENGTH.unpack_from
    add = starts.append
    zeros = bytes(9 * empty_run)
    while pos < target:
        if size - pos < 9:
            return pos
        length = unpack(records, pos + 1)[0]
        end = pos + 9 + length
        if end > size:
            return pos
        if not length and not records[pos] and records[pos : pos + len(zeros)] == zeros:
            return pos
        add(pos)
        pos = end
    return pos
