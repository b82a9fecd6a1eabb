"""The packet walker: columns, batch boundaries on frames, clean stops at a cut."""

from __future__ import annotations

import itertools

import numpy as np

from converters.carla.ids import Engine
from converters.carla.walk import gather, iter_walk, scatter, walk
from tests.converters.carla import carla_bytes as cb


def _file(frames: int = 5) -> bytes:
    body = b"".join(
        cb.packet(0, cb.frame_start(i + 1, 0.05, 0.05 * i))
        + cb.packet(6, cb.counted([cb.position(Engine.UE4, 7, (1, 2, 3), (0, 0, 0))] * i))
        + cb.packet(1, b"")
        for i in range(frames)
    )
    return cb.header() + body


def test_columns() -> None:
    data = _file(3)
    start = len(cb.header())
    packets = walk(data, start)
    assert packets.ids.tolist() == [0, 6, 1] * 3
    assert packets.sizes.tolist() == [24, 2, 0, 24, 30, 0, 24, 58, 0]
    assert packets.offsets[0] == start
    assert np.all(packets.offsets[1:] == packets.offsets[:-1] + 5 + packets.sizes[:-1])
    assert packets.end == len(data) and packets.truncation is None


def test_batches_end_after_a_frame_end() -> None:
    data = _file(20)
    start = len(cb.header())
    batches = list(iter_walk(data, start, batch_bytes=100))
    assert len(batches) > 3
    assert all(int(b.ids[-1]) == 1 and int(b.ids[0]) == 0 for b in batches)
    assert batches[0].start == start
    assert all(a.end == b.start for a, b in itertools.pairwise(batches))
    assert batches[-1].end == len(data)


def test_stops_cleanly_at_a_cut_header_or_body() -> None:
    data = _file(2)
    start = len(cb.header())
    last = walk(data, start).offsets[-2]  # the last Position packet
    cut_header = walk(data[: last + 3], start)
    assert cut_header.truncation is not None and cut_header.truncation.offset == last
    assert "3 of 5" in cut_header.truncation.reason
    cut_body = walk(data[: last + 7], start)
    assert cut_body.truncation is not None and cut_body.truncation.offset == last
    assert cut_body.end == last and int(cut_body.ids[-1]) == 0


def test_gather_and_scatter_at_unaligned_offsets() -> None:
    data = bytes(range(256)) * 4
    positions = np.array([3, 1001, 17, 500], dtype=np.int64)
    dtype = np.dtype([("a", "<u2"), ("b", "u1")])
    records = gather(data, positions, dtype)
    assert records["b"].tolist() == [(p + 2) % 256 for p in positions.tolist()]
    out = bytearray(len(data))
    scatter(out, positions, records)
    for p in positions.tolist():
        assert out[p : p + 3] == data[p : p + 3]
