"""The stored archive messages of a run of records, built at once with numpy.

A record described by `vector.describe_run` becomes the message `convert` documents,
`{kind: {"member": <gzip member>, "trajectory_id": t, ["index": i,] "timestamp": ticks}}`
followed by the writer's `"nanorec.t"` entry (`nanorec.archive.wire.timestamp_entry`): msgpack bytes
before its member (map headers, kind, the "member" key, the bin header, and the member's
10-byte gzip header, the same in every member this path takes) and after it (the other
entries). Those bytes ("glue") are built for the whole run as one byte matrix, a row a
message and a column slot a field, each field right-aligned in its slot with the bytes it
uses masked, and compacted in one step; the run is then one join of glue, member body, glue,
member body... (the members are not copied before it: between two bodies lies the tail of
one message and the head of the next, adjacent in the compacted glue). The bytes are what
`msgpack.packb` and `MessageStream.append_run` make of the same message, byte for byte
(tests compare them); records given as already stored messages (`slow`: the per-record
path) take their place in the join.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any, Final

import msgpack
import numpy as np

from nanorec.archive.wire import TIMESTAMP_KEY

from .stream import GZIP_HEADER

U8 = np.ndarray[Any, np.dtype[np.uint8]]
Ints = np.ndarray[Any, np.dtype[np.int64]]
Bools = np.ndarray[Any, np.dtype[np.bool_]]

#: msgpack's int encodings, by how many of these bounds a value reaches: marker, bytes.
_BOUNDS: Final = np.array([-(1 << 31), -(1 << 15), -(1 << 7), -32, 128, 1 << 8, 1 << 16, 1 << 32])
_MARKERS: Final = np.array([0xD3, 0xD2, 0xD1, 0xD0, 0, 0xCC, 0xCD, 0xCE, 0xCF], np.uint8)
_SIZES: Final = np.array([8, 4, 2, 1, 0, 1, 2, 4, 8], np.int64)
_BIN_BOUNDS: Final = np.array([1 << 8, 1 << 16])
_BIN_MARKERS: Final = np.array([0xC4, 0xC5, 0xC6], np.uint8)
_BIN_SIZES: Final = np.array([1, 2, 4], np.int64)
#: The slots `_pack_columns` fills, in its order.
_INT_SLOTS: Final = ("bin", "trajectory", "index", "ticks", "stamp")


def _encode(values: Ints, marker: U8, size: Ints) -> tuple[U8, Ints]:
    """`marker` then the low `size` bytes of each value, big-endian, right-aligned in 9
    bytes a row (`size` 0: the value's low byte alone, a fixint), and each length."""
    count = len(values)
    out = np.empty((count, 9), np.uint8)
    out[:, 1:] = values.astype(">i8").view(np.uint8).reshape(count, 8)
    head = np.where(size == 0, out[:, 8], marker)
    out.reshape(-1)[np.arange(8, 9 * count, 9) - size] = head
    return out, size + 1


def pack_ints(values: Ints) -> tuple[U8, Ints]:
    """Each int64 as `msgpack.packb` packs it (right-aligned in 9 bytes) and its length."""
    kind = np.searchsorted(_BOUNDS, values, "right")
    return _encode(values, _MARKERS.take(kind), _SIZES.take(kind))


def pack_stamps(stamps: Ints) -> tuple[U8, Ints]:
    """The value of each `"nanorec.t"` entry as `timestamp_entry` packs it: a uint32 or
    uint64 for a time from 1970, msgpack's own encoding before it."""
    kind = np.searchsorted(_BOUNDS, stamps, "right")
    small = stamps <= 0xFFFF_FFFF
    marker = np.where(stamps < 0, _MARKERS.take(kind), np.where(small, 0xCE, 0xCF))
    size = np.where(stamps < 0, _SIZES.take(kind), np.where(small, 4, 8))
    return _encode(stamps, marker.astype(np.uint8), size)


def bin_headers(sizes: Ints) -> tuple[U8, Ints]:
    """The msgpack bin header of each size (right-aligned in 9 bytes) and its length."""
    kind = np.searchsorted(_BIN_BOUNDS, sizes, "right")
    return _encode(sizes, _BIN_MARKERS.take(kind), _BIN_SIZES.take(kind))


def _pack_columns(sizes: Ints, columns: tuple[Ints, Ints, Ints, Ints]) -> tuple[U8, Ints]:
    """`bin_headers(sizes)`, `pack_ints` of trajectory, index and ticks, and `pack_stamps`
    of the index times, in one pass: (rows, 5, 9) bytes and (rows, 5) lengths."""
    values = np.stack((sizes, *columns), axis=1)
    kind = np.searchsorted(_BOUNDS, values, "right")
    marker = _MARKERS.take(kind)
    size = _SIZES.take(kind)
    bins = np.searchsorted(_BIN_BOUNDS, sizes, "right")
    marker[:, 0] = _BIN_MARKERS.take(bins)
    size[:, 0] = _BIN_SIZES.take(bins)
    stamps = columns[3]
    since_1970 = stamps >= 0
    small = stamps <= 0xFFFF_FFFF
    marker[:, 4] = np.where(since_1970, np.where(small, 0xCE, 0xCF), marker[:, 4])
    size[:, 4] = np.where(since_1970, np.where(small, 4, 8), size[:, 4])
    data, length = _encode(values.reshape(-1), marker.reshape(-1), size.reshape(-1))
    return data.reshape(len(sizes), 5, 9), length.reshape(len(sizes), 5)


class KindNames:
    """The kind name of each one-byte SerializedData key (`names[key]`), packed,
    right-aligned in rows to gather from."""

    def __init__(self, names: Sequence[str]) -> None:
        packed = [msgpack.packb(name) for name in names]
        self.width = max(map(len, packed))
        self.table = np.zeros((len(packed), self.width), np.uint8)
        self.lengths = np.array([len(item) for item in packed], np.int64)
        for row, item in enumerate(packed):
            self.table[row, self.width - len(item) :] = np.frombuffer(item, np.uint8)
        self.layout = _Layout(self.width)

    def rows(self, keys: Ints) -> tuple[U8, Ints]:
        return self.table.take(keys, axis=0), self.lengths.take(keys)


class _Layout:
    """The slots of a message row: (name, width, constant bytes or None)."""

    def __init__(self, kind_width: int) -> None:
        def key(name: str) -> tuple[str, int, bytes]:
            packed = msgpack.packb(name)
            return f"key {name}", len(packed), packed

        slots: list[tuple[str, int, bytes | None]] = [
            ("outer", 1, b"\x82"),  # {kind: entry, "nanorec.t": time}
            ("kind", kind_width, None),
            ("entry", 1, None),  # a map of 3 entries, 4 for a node
            key("member"),
            ("bin", 9, None),
            ("gzip", len(GZIP_HEADER), GZIP_HEADER),  # the member's header: see `build_run`
            # after the member
            key("trajectory_id"),
            ("trajectory", 9, None),
            key("index"),
            ("index", 9, None),
            key("timestamp"),
            ("ticks", 9, None),
            key(TIMESTAMP_KEY),
            ("stamp", 9, None),
        ]
        widths = np.array([width for _, width, _ in slots], np.uint8)
        self.head = 6  # slots before the member's bytes after its header
        self.column = dict(
            zip([name for name, _, _ in slots], (np.cumsum(widths) - widths).tolist(), strict=True)
        )
        self.number = {name: number for number, (name, _, _) in enumerate(slots)}
        self.widths = widths
        self.template = np.zeros(int(widths.sum()), np.uint8)
        for name, width, constant in slots:
            if constant is not None:
                at = self.column[name]
                self.template[at : at + width] = np.frombuffer(constant, np.uint8)
        self.slot_of = np.repeat(np.arange(len(slots)), widths)
        # a byte is used when its distance to its slot's end is below the slot's length
        ends = np.repeat(np.cumsum(widths, dtype=np.int64), widths)
        self.from_end = (ends - np.arange(len(self.template))).astype(np.uint8)


def build_run(
    bodies: Sequence[bytes | memoryview],
    sizes: Ints,
    fast: Bools,
    keys: Ints,
    nodes: Bools,
    columns: tuple[Ints, Ints, Ints, Ints],
    names: KindNames,
    slow: Mapping[int, bytes],
) -> tuple[bytes, Ints]:
    """The run's stored messages joined, and each one's length. Row `r`: where `fast[r]`,
    the message of a member with Cartographer's gzip header (`stream.GZIP_HEADER`) followed
    by `bodies[r]` (`sizes[r]` bytes in all, of kind `keys[r]`, a node when `nodes[r]`) with
    `columns` (trajectory, index, ticks, index time) of row `r`; elsewhere `slow[r]`, a
    stored message as given."""
    layout = names.layout
    count = len(sizes)
    data = np.broadcast_to(layout.template, (count, len(layout.template))).copy()
    used = layout.widths * fast[:, None]
    ints, int_lengths = _pack_columns(sizes, columns)
    kind, kind_length = names.rows(keys)
    variable: list[tuple[str, U8, Ints | int]] = [
        ("kind", kind, kind_length),
        ("entry", np.where(nodes, 0x84, 0x83).astype(np.uint8)[:, None], 1),
        *((name, ints[:, at], int_lengths[:, at]) for at, name in enumerate(_INT_SLOTS)),
    ]
    for name, values, length in variable:
        at = layout.column[name]
        data[:, at : at + values.shape[1]] = values
        used[:, layout.number[name]] = np.multiply(length, fast)
    node_used = fast & nodes
    used[:, layout.number["key index"]] *= node_used  # nodes only
    used[:, layout.number["index"]] *= node_used
    mask = used.take(layout.slot_of, axis=1) >= layout.from_end
    raw = data[mask].tobytes()
    head = used[:, : layout.head].sum(axis=1, dtype=np.int64)
    glue = used.sum(axis=1, dtype=np.int64)
    rows = np.cumsum(glue)
    # glue g: from the end of message g - 1's head to the end of message g's head
    cuts = [0, *(rows - glue + head).tolist(), int(rows[-1]) if count else 0]
    pieces: list[Any] = [None] * (2 * count + 1)
    pieces[0::2] = [raw[start:end] for start, end in itertools.pairwise(cuts)]
    items = list(bodies)
    lengths = glue + sizes - len(GZIP_HEADER)  # the header is in the glue
    for row, stored in slow.items():
        items[row] = stored
        lengths[row] = len(stored)
    pieces[1::2] = items
    return b"".join(pieces), lengths


__all__ = ["KindNames", "bin_headers", "build_run", "pack_ints", "pack_stamps"]
