"""`rosbag info` of a native bag checks its uncompressed chunks for damage with numpy over
the chunk's index offsets; it must find exactly what walking every record finds."""

from __future__ import annotations

import mmap
import random
from pathlib import Path

import numpy as np

from nanorec.converters.ros.ros1.generate import generate
from nanorec.converters.ros.ros1.index import _damage, read_index
from nanorec.converters.ros.ros1.records import OP_INDEX, parse_fields, span_at


def _chunks(buf: mmap.mmap | bytes, path: Path) -> list[tuple[object, np.ndarray]]:
    """Each uncompressed chunk's span and its message offsets from the index data records."""
    index = read_index(path)
    found = []
    for chunk in index.chunks:
        span = span_at(buf, chunk.position, len(buf))
        pos, offsets = span.data_end, []
        for _ in chunk.counts:
            entry = span_at(buf, pos, len(buf))
            fields = dict(parse_fields(buf, entry.header_start, entry.header_end, pos))
            assert fields[b"op"][0] == OP_INDEX
            count = int.from_bytes(fields[b"count"], "little")
            rows = np.frombuffer(buf, np.dtype("<u4"), count * 3, entry.data_start)
            offsets.append(rows[2::3].astype(np.int64))
            pos = entry.data_end
        found.append((span, np.concatenate(offsets)))
    return found


def test_the_numpy_check_agrees_with_the_walk_on_damaged_chunks(tmp_path: Path) -> None:
    bag = generate(tmp_path / "small.bag", seconds=2.0, image=0, seed=3)
    clean = bag.read_bytes()
    chunks = _chunks(clean, bag)
    assert all(_damage(clean, span, offsets) is None for span, offsets in chunks)
    rng = random.Random(7)
    disagreements = found = 0
    for _ in range(300):
        data = bytearray(clean)
        span, offsets = rng.choice(chunks)
        start, end = span.data_start, span.data_end  # type: ignore[attr-defined]
        for _ in range(rng.choice((1, 1, 2, 4))):
            if rng.random() < 0.5:  # in a record's lengths or header
                at = start + int(rng.choice(offsets)) + rng.randrange(40)
            else:
                at = rng.randrange(start, end)
            data[min(at, end - 1)] = rng.randrange(256)
        fast, slow = _damage(bytes(data), span, offsets), _damage(bytes(data), span)
        disagreements += fast != slow
        found += slow is not None
    assert disagreements == 0 and found > 60


def test_info_of_a_bag_of_many_small_messages_reads_few_records(tmp_path: Path) -> None:
    """The check is one numpy pass per chunk: parse_fields runs once a chunk, not per record."""
    bag = generate(tmp_path / "small.bag", seconds=4.0, image=0, seed=1)
    calls = 0
    import nanorec.converters.ros.ros1.index as index_module

    real = index_module.parse_fields

    def counted(*args: object) -> object:
        nonlocal calls
        calls += 1
        return real(*args)  # type: ignore[arg-type]

    index_module.parse_fields = counted  # type: ignore[assignment]
    try:
        index = read_index(bag)
    finally:
        index_module.parse_fields = real
    messages = sum(sum(c.counts.values()) for c in index.chunks)
    assert not index.damaged
    assert calls < messages / 10, (calls, messages)
