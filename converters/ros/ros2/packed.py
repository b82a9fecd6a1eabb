"""A run of archive messages built at once with numpy: the very bytes that
`write_packed(msgpack.packb({topic: {"timestamp": t, "data": d}}))` stores for each.

Why: a bag of small messages (odometry, ~100 bytes) spent most of its conversion packing
and writing one message at a time. A stored message is a constant per topic, then the
timestamp, the bin header, the data and the `"nanorec.t"` entry (`nanorec.archive.wire`); all but
the data are a few bytes a message, laid out here as rows of a small table, and the whole
run is then the table's bytes and the datas interleaved by two boolean masks.
"""

from __future__ import annotations

from typing import Any, Final

import msgpack
import numpy as np
from numpy.typing import NDArray

from nanorec.archive.wire import TIMESTAMP_KEY_PACKED

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
_DATA_KEY_BYTES: Final = np.frombuffer(_DATA_KEY, np.uint8)


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


def _bin_fields(lengths: NDArray[np.int64]) -> tuple[NDArray[np.uint8], Any]:
    """Each length's msgpack bin header (bin 8, 16 or 32), left-aligned in 5 bytes, and the
    bytes used."""
    count = len(lengths)
    big = lengths.astype(">u4").view(np.uint8).reshape(count, 4)
    out = np.empty((count, 5), np.uint8)
    out[:, 0] = 0xC6
    out[:, 1:] = big
    width = np.full(count, 5, np.int64)
    for limit, code, size in ((1 << 16, 0xC5, 2), (1 << 8, 0xC4, 1)):
        chosen = lengths < limit
        out[chosen, 0] = code
        out[chosen, 1 : 1 + size] = big[chosen, 4 - size :]
        width[chosen] = 1 + size
    return out, width


def _rows(head: bytes, fields: list[tuple[NDArray[np.uint8], int]]) -> NDArray[np.uint8]:
    """The small bytes of messages of one class (one topic, each field of one width): the
    head, then each field's first `width` bytes, as a table of one row a message."""
    count = len(fields[0][0])
    out = np.empty((count, len(head) + sum(width for _, width in fields)), np.uint8)
    out[:, : len(head)] = np.frombuffer(head, np.uint8)
    at = len(head)
    for values, width in fields:
        out[:, at : at + width] = values[:, :width]
        at += width
    return out


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
    stamp, stamp_width = _int_fields(times_ns, entry=False)
    entry, entry_width = _int_fields(times_ns // 1000, entry=True)
    bins, bin_width = _bin_fields(lengths)
    # between the timestamp and the data: `"data"` and the bin header; after it the entry
    bins = np.concatenate((np.broadcast_to(_DATA_KEY_BYTES, (count, len(_DATA_KEY))), bins), 1)
    entry = np.concatenate((np.broadcast_to(_KEY, (count, len(_KEY))), entry), 1)
    bin_width += len(_DATA_KEY)
    entry_width += len(_KEY)
    head_width = np.array([len(h) for h in heads], np.int64)[topics]
    prefix = head_width + stamp_width + bin_width
    small = prefix + entry_width  # bytes of each message besides its data
    # a class: one topic, each field of one width (a run has a few: one or two a topic)
    key = ((topics.astype(np.int64) * 16 + stamp_width) * 16 + bin_width) * 32 + entry_width
    classes, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    inverse = inverse.reshape(-1)
    fields = [(stamp, stamp_width), (bins, bin_width), (entry, entry_width)]
    if len(classes) == 1:
        smalls = _rows(heads[int(topics[0])], [(f, int(w[0])) for f, w in fields]).reshape(-1)
    else:
        width = int(small.max())
        table = np.zeros((count, width), np.uint8)
        for k, n in enumerate(first.tolist()):
            chosen = np.flatnonzero(inverse == k)
            part = [(f[chosen], int(w[n])) for f, w in fields]
            rows = _rows(heads[int(topics[n])], part)
            table[chosen, : rows.shape[1]] = rows
        smalls = table[np.arange(width) < small[:, None]]
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
