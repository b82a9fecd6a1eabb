"""`ArchiveWriter.write_joined_run` (a run's stored messages in one buffer) writes the same
archive bytes as `write_stored_run` (both layouts, blocks cut at the same messages), and
`blockcut.cuts` ends blocks where `BlockDeflater.add` would, message by message."""

from __future__ import annotations

import itertools
import random
from pathlib import Path
from typing import Any

import msgpack
import numpy as np
import pytest

from nanorec.archive import blockcut
from nanorec.archive.wire import timestamp_entry
from nanorec.archive.writer import ArchiveWriter
from nanorec.errors import UsageError

from .helpers import block_ends

_KINDS = [("a",), ("b",), ("x", "y")]


def _messages(seed: int, count: int) -> list[tuple[bytes, int, int]]:
    """(stored bytes, kind number, timestamp) of messages of very different sizes."""
    rng = random.Random(seed)
    out = []
    stamp = 0
    for number in range(count):
        kind = rng.randrange(len(_KINDS))
        size = rng.choice([0, 10, 300, 555, 2000, 9000, 40000]) + rng.randrange(200)
        body: dict[str, Any] = {
            name: bytes(size) if not at else number for at, name in enumerate(_KINDS[kind])
        }
        if len(_KINDS[kind]) == 1:
            body = {_KINDS[kind][0]: {"member": rng.randbytes(size), "n": number}}
        stamp += rng.choice([0, 1, 1000])
        if number == count // 2:
            stamp = 1_700_000_000_000_000  # past 32 bits: a longer timestamp entry
        packed = msgpack.packb(body)
        stored = bytes((0x80 | (len(body) + 1),)) + packed[1:] + timestamp_entry(stamp)
        out.append((stored, kind, stamp))
    return out


def _splits(rng: random.Random, count: int) -> list[tuple[int, int]]:
    edges = sorted({0, count, *(rng.randrange(count) for _ in range(6))})
    return list(itertools.pairwise(edges))


@pytest.mark.parametrize(("compact", "threads"), [(False, None), (True, None), (True, 0)])
@pytest.mark.parametrize("block_bytes", [1 << 10, 16 << 10])
def test_joined_run_writes_the_same_bytes(
    tmp_path: Path, compact: bool, threads: int | None, block_bytes: int
) -> None:
    for seed in range(3):
        messages = _messages(seed, 400)
        rng = random.Random(seed)
        one, joined = tmp_path / f"one{seed}.zip", tmp_path / f"joined{seed}.zip"
        options: dict[str, Any] = {
            "compact": compact,
            "block_bytes": block_bytes,
            "deflate_threads": threads,
        }
        with ArchiveWriter(one, overwrite=True, **options) as writer:
            writer.write_stored_run(
                [m[0] for m in messages],
                types=[_KINDS[m[1]] for m in messages],
                timestamps_us=[m[2] for m in messages],
            )
        with ArchiveWriter(joined, overwrite=True, **options) as writer:
            for start, stop in _splits(rng, len(messages)):
                part = messages[start:stop]
                if rng.random() < 0.3:  # a run of another kind between joined ones
                    writer.write_stored_run(
                        [m[0] for m in part],
                        types=[_KINDS[m[1]] for m in part],
                        timestamps_us=[m[2] for m in part],
                    )
                    continue
                first = writer.write_joined_run(
                    b"".join(m[0] for m in part),
                    np.array([len(m[0]) for m in part], np.int64),
                    types=_KINDS,
                    kinds=np.array([m[1] for m in part], np.int64),
                    timestamps_us=np.array([m[2] for m in part], np.int64),
                )
                assert first == start
        assert one.read_bytes() == joined.read_bytes(), seed


def test_cuts_follow_the_per_message_rule() -> None:
    rng = random.Random(5)
    for trial in range(3000):
        size = rng.choice([64, 1000, 16 << 10])
        scale = rng.choice([1, 10, 100, 1000, 5000, 40000])
        lengths = [rng.randrange(1, scale + 2) for _ in range(rng.randrange(0, 200))]
        count = rng.choice([0, 0, 1, 3, 4, 10, 16, 17, 300])
        block = 0 if not count else rng.randrange(1, size + 1)
        got = blockcut.cuts(np.array(lengths, np.int64), block, count, size)
        assert got == block_ends(lengths, block, count, size), trial


def test_joined_run_refuses_what_it_cannot_hold(tmp_path: Path) -> None:
    stored = bytes((0x82,)) + msgpack.packb({"a": 1})[1:] + timestamp_entry(5)
    with ArchiveWriter(tmp_path / "t.zip") as writer:
        lengths = np.array([len(stored)], np.int64)
        kinds = np.zeros(1, np.int64)
        with pytest.raises(UsageError):  # lengths not adding up to the buffer
            writer.write_joined_run(
                stored + b"x", lengths, types=[("a",)], kinds=kinds, timestamps_us=[5]
            )
        with pytest.raises(UsageError):  # a kind with no types
            writer.write_joined_run(
                stored, lengths, types=[("a",)], kinds=kinds + 1, timestamps_us=[5]
            )
        with pytest.raises(UsageError):  # a reserved key
            writer.write_joined_run(
                stored, lengths, types=[("nanorec.t",)], kinds=kinds, timestamps_us=[5]
            )
        writer.write_joined_run(stored, lengths, types=[("a",)], kinds=kinds, timestamps_us=[5])
        with pytest.raises(UsageError):  # time going back
            writer.write_joined_run(stored, lengths, types=[("a",)], kinds=kinds, timestamps_us=[4])
        assert writer.message_count == 1
