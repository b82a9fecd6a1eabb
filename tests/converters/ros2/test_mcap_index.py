"""A chunk's record starts from its MessageIndex records (`mcap_index`): the same answer as
the record-by-record walk for right, wrong and hostile offsets, and taken from the index
(not walked in Python) for the chunks rosbag2's writers and our generator make."""

from __future__ import annotations

import random
import struct
from pathlib import Path

import numpy as np
import pytest

from nanorec.converters.ros.ros2 import mcap_records as rec
from nanorec.converters.ros.ros2 import mcap_window
from nanorec.converters.ros.ros2.generate import generate
from nanorec.converters.ros.ros2.mcap_index import index_offsets, indexed_starts
from nanorec.converters.ros.ros2.mcap_records import EMPTY_RUN
from nanorec.converters.ros.ros2.mcap_window import record_starts
from tests.conftest import REALDATA

pytest.importorskip("zstandard")


def _record(opcode: int, content: bytes) -> bytes:
    return struct.pack("<BQ", opcode, len(content)) + content


def _chunk_records(messages: int, seed: int) -> tuple[bytes, list[int]]:
    """A schema and a channel, then messages of random sizes: the records and where each
    message starts."""
    rng = random.Random(seed)
    out = bytearray(_record(rec.SCHEMA, b"s" * 20) + _record(rec.CHANNEL, b"c" * 30))
    starts = []
    for n in range(messages):
        if n == messages // 2:  # a channel in the middle: a gap the index does not cover
            out += _record(rec.CHANNEL, b"d" * 12)
        starts.append(len(out))
        head = struct.pack("<HIQQ", 1, n, n, n)
        out += _record(rec.MESSAGE, head + bytes(rng.randrange(0, 300)))
    return bytes(out), starts


def _walked(records: bytes) -> tuple[list[int], int]:
    starts, end = record_starts(records, EMPTY_RUN)
    return starts.tolist(), end


def test_right_offsets_give_the_walk() -> None:
    records, starts = _chunk_records(500, 1)
    found = indexed_starts(records, np.array(starts, np.int64), EMPTY_RUN)
    assert found is not None
    assert (found[0].tolist(), found[1]) == _walked(records)


def test_lengths_read_a_block_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    from nanorec.converters.ros.ros2 import mcap_index

    monkeypatch.setattr(mcap_index, "_BLOCK", 7)
    records, starts = _chunk_records(100, 5)
    found = indexed_starts(records, np.array(starts, np.int64), EMPTY_RUN)
    assert found is not None
    assert (found[0].tolist(), found[1]) == _walked(records)


@pytest.mark.parametrize("tail", [b"", bytes(9 * EMPTY_RUN), b"\x05\x00\x00", bytes(5)])
def test_a_tail_is_walked_as_before(tail: bytes) -> None:
    records, starts = _chunk_records(50, 2)
    records += tail
    starts_, end = record_starts(records, EMPTY_RUN, np.array(starts, np.int64))
    assert (starts_.tolist(), end) == _walked(records)


def test_wrong_offsets_never_change_the_answer() -> None:
    records, starts = _chunk_records(200, 3)
    rng = random.Random(4)
    walked = _walked(records)
    for _ in range(300):
        guess = set(rng.sample(starts, rng.randrange(1, len(starts))))
        for _ in range(rng.randrange(0, 3)):  # offsets inside records, past the end
            guess.add(rng.randrange(0, len(records) + 40))
        offsets = np.array(sorted(guess), np.int64)
        got, end = record_starts(records, EMPTY_RUN, offsets)
        assert (got.tolist(), end) == walked


def test_hostile_lengths_are_refused() -> None:
    """A record claiming 2**64 - 1 bytes at an offset: no overflow, the walk decides."""
    records = _record(rec.MESSAGE, bytes(30)) + b"\x05" + b"\xff" * 8 + bytes(30)
    assert indexed_starts(records, np.array([0, 39], np.int64), EMPTY_RUN) is None
    got, end = record_starts(records, EMPTY_RUN, np.array([0, 39], np.int64))
    assert (got.tolist(), end) == _walked(records)


def _index_record(channel: int, offsets: list[int]) -> bytes:
    pairs = b"".join(struct.pack("<QQ", 0, at) for at in offsets)
    return _record(rec.MESSAGE_INDEX, struct.pack("<HI", channel, len(pairs)) + pairs)


def test_index_offsets_reads_every_channel() -> None:
    tail = _index_record(1, [40, 0, 90]) + _index_record(2, [60, 40]) + _record(rec.CHUNK, b"")
    offsets = index_offsets(b"xx" + tail, 2)
    assert offsets is not None and offsets.tolist() == [0, 40, 60, 90]
    assert index_offsets(b"xx" + _record(rec.CHUNK, b""), 2) is None
    bad = _record(rec.MESSAGE_INDEX, struct.pack("<HI", 1, 17) + bytes(17))
    assert index_offsets(bad, 0) is None  # pairs of 16 bytes
    huge = _record(rec.MESSAGE_INDEX, struct.pack("<HI", 1, 1 << 31))
    assert index_offsets(huge, 0) is None  # more pairs than the record holds
    assert index_offsets(_index_record(1, [1 << 63]), 0) is None


def _mcap_files() -> list[Path]:
    real = sorted((REALDATA / "ros2").glob("*/*.mcap")) if REALDATA.is_dir() else []
    return real


@pytest.fixture(scope="module")
def generated_mcap(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("mcap")
    folder = tmp_path_factory.mktemp("bags") / "small"
    generate(folder, seconds=40, storage="mcap")
    return next(folder.glob("*.mcap"))


def _chunks_use_the_index(path: Path, monkeypatch: pytest.MonkeyPatch) -> int:
    """Convert the file's bag; every chunk's starts came from its index (no walk)."""
    from nanorec.contract import ConvertRequest
    from nanorec.converters.ros.ros2.converter import CONVERTER

    answers = []
    real = indexed_starts

    def spy(*args: object) -> object:
        found = real(*args)  # type: ignore[arg-type]
        answers.append(found is not None)
        return found

    monkeypatch.setattr(mcap_window, "indexed_starts", spy)
    CONVERTER.convert(path, path.parent.parent / "out.zip", ConvertRequest(overwrite=True))
    assert answers and all(answers)
    return len(answers)


def test_generated_chunks_are_read_from_their_index(
    generated_mcap: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert _chunks_use_the_index(generated_mcap, monkeypatch) >= 2


@pytest.mark.parametrize("path", _mcap_files(), ids=lambda p: p.parent.name)
def test_real_chunks_are_read_from_their_index(
    path: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """rosbag2's own files (libmcap, the Python writer): each chunk from its index."""
    local = tmp_path / "bag" / path.name
    local.parent.mkdir()
    local.write_bytes(path.read_bytes())
    _chunks_use_the_index(local, monkeypatch)
