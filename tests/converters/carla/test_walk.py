"""The packet walker: columns, batch boundaries on frames, clean stops at a cut."""

from __future__ import annotations

import itertools
import random
import struct

import numpy as np

from nanorec.converters.carla.ids import Engine
from nanorec.converters.carla.walk import gather, iter_walk, scatter, walk
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


def _plain(data: bytes, start: int) -> tuple[list[int], int]:
    """The reference: a plain header walk; (offsets of complete packets, end)."""
    offsets = []
    off = start
    while off + 5 <= len(data):
        (size,) = struct.unpack_from("<I", data, off + 1)
        if off + 5 + size > len(data):
            break
        offsets.append(off)
        off += 5 + size
    return offsets, off


def _inputs() -> list[bytes]:
    from nanorec.converters.carla.generate import generate

    rng = random.Random(3)
    steady = generate("0.9.16", seed=1, frames=300, vehicles=5, walkers=2)
    varied = generate("0.9.15", seed=2, frames=120, vehicles=9, additional_data=True)
    inputs = [steady, varied, _file(40), steady[: len(steady) - 777], varied[:-3]]
    for _ in range(30):  # one changed frame somewhere, one flipped byte, cuts
        data = bytearray(steady)
        data[rng.randrange(len(cb.header()), len(data))] ^= 1 << rng.randrange(8)
        inputs.append(bytes(data[: rng.randrange(len(data) // 2, len(data) + 1)]))
    return inputs


def test_look_ahead_finds_exactly_the_plain_walk() -> None:
    start = len(cb.header())
    for data in _inputs():
        expected, end = _plain(data, start)
        packets = walk(data, start)
        assert packets.offsets.tolist() == expected
        assert packets.end == end
        assert (packets.truncation is None) == (end == len(data))
        # In batches too: the same packets, each batch ending after a FrameEnd.
        for batch_bytes in (1000, 50_000):
            batches = list(iter_walk(data, start, batch_bytes=batch_bytes))
            joined = np.concatenate([b.offsets for b in batches]) if batches else []
            assert list(joined) == expected
            assert all(int(b.ids[-1]) == 1 for b in batches[:-1])
