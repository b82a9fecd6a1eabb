"""A run of archive messages built at once with numpy: the very bytes that
`write_packed(msgpack.packb({topic: {"timestamp": t, "data": d}}))` stores for each.

Why: a bag of small messages (odometry, ~100 bytes) spent most of its conversion packing
and writing one message at a time. A stored message is a constant per topic, then the
timestamp, the bin header, the data and the `"nanorec.t"` entry (`nanorec.wire`); all but
the data are a few bytes a message, laid out here as rows of a small table, and the whole
run is then the table's bytes and the datas interleaved by two boolean masks.
"""

from __future__ import annotations

from typing import Any, Final

import msgpack
import numpy as np
from numpy.typing import NDArray

from nanorec.wire import TIMESTAMP_KEY_PACKED

#: msgpack's int forms below 64 bits: (from, below, marker, payload bytes); marker -1 is a
#: fixint (the value's own byte). Anything else takes 8 bytes (0xCF, or 0xD3 if negative).
_FORMS: Final = (
    (0, 128, -1, 0),
    (128, 1 << 8, 0xCC, 1),
    (1 << 8, 1 << 16, 0xCD, 2),
    (1 << 16, 1 << 32, 0xCE, 4),
    (-32, 0, -1, 0),
    (-128, -32, 0xD0, 1),
    (-(1 << 15), -128, 0xD1, 2),
    (-(1 << 31), -(1 << 15), 0xD2, 4),
)
#: `timestamp_entry`'s: a non-negative value at 32 bits or 64, a negative one as msgpack's.
_ENTRY_FORMS: Final = ((0, 1 << 32, 0xCE, 4), *_FORMS[4:])
_DATA_KEY: Final = msgpack.packb("data")
_KEY: Final = np.frombuffer(TIMESTAMP_KEY_PACKED, np.uint8)


def head(topic: str) -> bytes:
    """A topic's messages up to the timestamp value (the map's count includes the entry)."""
    return b"\x82" + msgpack.packb(topic) + b"\x82" + msgpack.packb("timestamp")


def _int_fields(values: NDArray[np.int64], entry: bool) -> tuple[NDArray[np.uint8], Any]:
    """Each value as msgpack packs it (`entry`: as `timestamp_entry` does, a non-negative one
    at 32 or 64 bits): a row of 9 bytes, left-aligned, and the bytes used."""
    count = len(values)
    big = values.astype(">i8").view(np.uint8).reshape(count, 8)
    out = np.zeros((count, 9), np.uint8)
    width = np.full(count, 9, np.int64)
    out[:, 0] = 0xCF
    out[:, 1:] = big
    negative = values < 0
    out[negative, 0] = 0xD3
    for low, high, marker, size in _ENTRY_FORMS if entry else _FORMS:
        chosen = (values >= low) & (values < high)
        if not chosen.any():
            continue
        width[chosen] = 1 + size
        if marker < 0:
            out[chosen, 0] = big[chosen, 7]
        else:
            out[chosen, 0] = marker
            out[chosen, 1 : 1 + size] = big[chosen, 8 - size :]
    return out, width


def _put(rows: NDArray[np.uint8], at: Any, fields: NDArray[np.uint8], width: Any) -> None:
    """Write row i's first `width[i]` bytes of `fields` into `rows` (flat) from `at[i]`."""
    used = np.arange(fields.shape[1]) < np.asarray(width)[:, None]
    spots = np.asarray(at)[:, None] + np.arange(fields.shape[1])
    rows[spots[used]] = fields[used]


def pack_run(
    heads: list[bytes],
    topics: NDArray[Any],
    times_ns: NDArray[np.int64],
    datas: NDArray[np.uint8],
    lengths: NDArray[np.int64],
) -> tuple[bytes, NDArray[np.int64]]:
    """The stored messages of a run (message i: topic `heads[topics[i]]`, time `times_ns[i]`,
    data the next `lengths[i]` bytes of `datas`; every length below 2**32) back to back,
    and each one's length."""
    count = len(times_ns)
    heads_used = np.unique(topics)
    width_of = max(len(heads[k]) for k in heads_used.tolist())
    head_table = np.zeros((len(heads), width_of), np.uint8)
    head_width = np.zeros(len(heads), np.int64)
    for k in heads_used.tolist():
        head_table[k, : len(heads[k])] = np.frombuffer(heads[k], np.uint8)
        head_width[k] = len(heads[k])
    stamp, stamp_width = _int_fields(times_ns, entry=False)
    entry, entry_width = _int_fields(times_ns // 1000, entry=True)
    bin_head = np.zeros((count, len(_DATA_KEY) + 5), np.uint8)
    bin_head[:, : len(_DATA_KEY)] = np.frombuffer(_DATA_KEY, np.uint8)
    big = lengths.astype(">u4").view(np.uint8).reshape(count, 4)
    marker = len(_DATA_KEY)
    bin_width = np.full(count, marker + 5, np.int64)
    bin_head[:, marker] = 0xC6
    bin_head[:, marker + 1 :] = big
    for limit, code, size in ((1 << 16, 0xC5, 2), (1 << 8, 0xC4, 1)):
        chosen = lengths < limit
        bin_head[chosen, marker] = code
        bin_head[chosen, marker + 1 : marker + 1 + size] = big[chosen, 4 - size :]
        bin_width[chosen] = marker + 1 + size
    hw = head_width[topics]
    prefix = hw + stamp_width + bin_width
    entry_width = entry_width + len(_KEY)
    small = prefix + entry_width  # bytes of each message besides its data
    row = width_of + 9 + bin_head.shape[1] + 9 + len(_KEY)
    table = np.zeros(count * row, np.uint8)
    at = np.arange(0, count * row, row, dtype=np.int64)
    _put(table, at, head_table[topics], hw)
    _put(table, at + hw, stamp, stamp_width)
    _put(table, at + hw + stamp_width, bin_head, bin_width)
    entries = np.empty((count, 9 + len(_KEY)), np.uint8)
    entries[:, : len(_KEY)] = _KEY
    entries[:, len(_KEY) :] = entry
    _put(table, at + prefix, entries, entry_width)
    smalls = table.reshape(count, row)[np.arange(row) < small[:, None]]
    # the run alternates small and data stretches: pre_0, d_0, e_0 + pre_1, d_1, ..., e_last
    stretches = np.empty(2 * count + 1, np.int64)
    stretches[0] = prefix[0]
    stretches[2:-1:2] = entry_width[:-1] + prefix[1:]
    stretches[-1] = entry_width[-1]
    stretches[1::2] = lengths
    is_data = np.repeat(np.tile(np.array([False, True]), count + 1)[: 2 * count + 1], stretches)
    out = np.empty(len(is_data), np.uint8)
    out[is_data] = datas
    out[~is_data] = smalls
    return out.tobytes(), small + lengths
