"""Where the compact layout's blocks end, for a run of messages at once.

`BlockDeflater.add_run` decides message by message: a block ends before the message that would
take it past its limit, and after the message that brings it to its limit; the limit is
`block_bytes`, or half of it while the block holds 4-16 messages (`HALF_BLOCK`). `cuts`
gives the same ends for a run of message lengths with numpy (`BlockDeflater.add_joined`),
so a run written as one buffer is cut exactly where `add_run` would cut it.

For a block starting at message `i`, holding `c` messages of `B_c` bytes, the rule ends it
after `c` messages at the first `c` where `B_c >= limit(c)` or `B_{c+1} > limit(c)` (the next
message does not fit). Both tests only become true as `c` grows, so for a fixed limit the
first such `c` is found for every `i` at once by two `searchsorted` on the run's cumulative
sizes; the three stretches of `c` (below 4, 4-16, above 16) each take the first `c` of their
limit inside them, and the block ends at the smallest. Then only the block starts are
followed, one step a block.
"""

from __future__ import annotations

from typing import Any, Final

import numpy as np

#: A block ends at half its size while it holds between these many messages (messages of
#: 0.5-2 KiB: a read inflates up to half a block before its message, so half as much, for a
#: few % of size; smaller messages need the whole block to deflate well, and two or three
#: larger ones make a block anyway).
HALF_BLOCK: Final = (4, 16)

Lengths = np.ndarray[Any, np.dtype[np.int64]]


def limit(count: int, block_bytes: int) -> int:
    """The size a block of `count` messages ends at."""
    return block_bytes // 2 if HALF_BLOCK[0] <= count <= HALF_BLOCK[1] else block_bytes


def cuts(lengths: Lengths, block: int, count: int, block_bytes: int) -> tuple[list[int], int, int]:
    """Message `lengths` (each > 0) added after an open block of `block` bytes and `count`
    messages: the message numbers (0 to `len(lengths)`) before which a block ends, in order
    (0: the open block ends before the first message), and the `(bytes, count)` of the block
    left open after the last message."""
    total = len(lengths)
    ends: list[int] = []
    sizes = lengths.tolist()
    first = 0
    # The open block, message by message (as `add`), up to its end.
    while block and first < total:
        length = sizes[first]
        if block + length > limit(count, block_bytes):
            ends.append(first)
            block = count = 0
            break
        block += length
        count += 1
        first += 1
        if block >= limit(count, block_bytes):
            ends.append(first)
            block = count = 0
            break
    if first >= total or block:
        return ends, block, count
    # Every later block at once: the first end of a block starting at each message.
    starts = np.concatenate(([0], np.cumsum(lengths[first:])))
    span = len(starts) - 1
    rows = np.arange(span)
    full = _first_end(starts, rows, block_bytes)
    half = _first_end(starts, rows, block_bytes // 2)
    low, high = HALF_BLOCK
    never = np.iinfo(np.int64).max
    end = np.where(full < low, full, never)
    middle = np.maximum(half, low)
    end = np.minimum(end, np.where(middle <= high, middle, never))
    end = np.minimum(end, np.maximum(full, high + 1))
    end = np.where(rows + end <= span, end, never)  # the messages must be in the run
    steps = end.tolist()
    at = 0
    while at < span and steps[at] != never:
        at += steps[at]
        ends.append(first + at)
    if at < span:
        return ends, int(starts[span] - starts[at]), span - at
    return ends, 0, 0


def _first_end(starts: Lengths, rows: Lengths, size: int) -> Lengths:
    """For a block starting at each message: the first message count at which the rule ends
    it under a limit of `size` bytes (may lie past the run: the caller checks)."""
    goal = starts[:-1] + size
    reach = np.searchsorted(starts, goal, "left") - rows  # B_c >= size
    over = np.maximum(np.searchsorted(starts, goal, "right") - rows - 1, 1)  # B_{c+1} > size
    span = len(rows)
    over = np.where(rows + over + 1 <= span, over, np.iinfo(np.int64).max)
    result: Lengths = np.minimum(reach, over)
    return result


__all__ = ["HALF_BLOCK", "cuts", "limit"]
