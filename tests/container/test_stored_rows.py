"""`ArchiveWriter.write_stored_rows` (runs of same-sized messages written at once) and the
CRC arithmetic behind its single pass (`nanorec.archive.crc`): the archive is the one that
`write_packed` message by message would make, valid for zipfile and NanoVer's index."""

from __future__ import annotations

import os
import random
import zipfile
import zlib
from pathlib import Path

import msgpack
import numpy as np
import pytest

from nanorec.archive.crc import joined_crc, part_crcs
from nanorec.archive.reader import ArchiveReader
from nanorec.archive.wire import timestamp_entry
from nanorec.archive.writer import ArchiveWriter
from nanorec.errors import UsageError


@pytest.mark.parametrize("length", [1, 3, 700, 15_000])
@pytest.mark.parametrize("count", [1, 2, 9, 300])
def test_part_crcs_equal_zlib_on_each_part(length: int, count: int) -> None:
    rng = random.Random(length * 1000 + count)
    parts = [rng.randbytes(length) for _ in range(count)]
    before = zlib.crc32(os.urandom(rng.randrange(0, 50)))
    running, chain = before, []
    for part in parts:
        running = zlib.crc32(part, running)
        chain.append(running)
    got = part_crcs(np.array(chain, np.uint32), before, length)
    assert got.tolist() == [zlib.crc32(part) for part in parts]


def _rows(values: list[int], stamps: list[int]) -> np.ndarray:
    """Stored messages {"v": bytes, "nanorec.t": stamp}, all of one size."""
    packed = [
        b"\x82"
        + msgpack.packb("v")
        + msgpack.packb(value.to_bytes(8, "little"))
        + timestamp_entry(stamp)
        for value, stamp in zip(values, stamps, strict=True)
    ]
    return np.frombuffer(b"".join(packed), np.uint8).reshape(len(packed), -1).copy()


@pytest.mark.parametrize("compact", [False, True])
def test_rows_read_back_like_packed_messages(tmp_path: Path, compact: bool) -> None:
    rows_path, packed_path = tmp_path / "rows.zip", tmp_path / "packed.zip"
    with ArchiveWriter(rows_path, compact=compact) as writer:
        writer.write({"v": b"first"}, timestamp_us=1)
        writer.write_stored_rows(
            _rows(list(range(50)), list(range(2, 52))), list(range(2, 52)), types=["v"], flags=3
        )
        writer.write({"v": b"middle"}, timestamp_us=60)
        writer.write_stored_rows(_rows([7, 8], [70, 70]), np.array([70, 70]), types=["v"])
    with ArchiveWriter(packed_path, compact=compact) as writer:
        writer.write({"v": b"first"}, timestamp_us=1)
        for i in range(50):
            writer.write({"v": i.to_bytes(8, "little")}, timestamp_us=i + 2, flags=3)
        writer.write({"v": b"middle"}, timestamp_us=60)
        for value in (7, 8):
            writer.write({"v": value.to_bytes(8, "little")}, timestamp_us=70)
    with ArchiveReader(rows_path) as rows, ArchiveReader(packed_path) as packed:
        assert len(rows) == len(packed) == 54
        for i in range(len(rows)):
            assert bytes(rows.raw(i)) == bytes(packed.raw(i))
        assert rows.index.timestamp_us.tolist() == packed.index.timestamp_us.tolist()
        assert rows.member("index.msgpack") == packed.member("index.msgpack")
    with zipfile.ZipFile(rows_path) as archive:
        assert archive.testzip() is None  # every member's CRC, messages included


def test_rows_refuse_decreasing_timestamps_and_bad_shapes(tmp_path: Path) -> None:
    with ArchiveWriter(tmp_path / "a.zip") as writer:
        writer.write({"v": b"x"}, timestamp_us=10)
        with pytest.raises(UsageError, match="must not decrease"):
            writer.write_stored_rows(_rows([1], [5]), [5], types=["v"])
        with pytest.raises(UsageError, match="must not decrease"):
            writer.write_stored_rows(_rows([1, 2], [20, 19]), [20, 19], types=["v"])
        with pytest.raises(UsageError, match="one timestamp per row"):
            writer.write_stored_rows(_rows([1, 2], [20, 21]), [20], types=["v"])
        assert writer.message_count == 1


def test_joined_crc_is_the_crc_of_the_parts_joined() -> None:
    rng = np.random.default_rng(11)
    for trial in range(200):
        sizes = rng.choice([0, 1, 3, 100, 4096, 70_000], size=int(rng.integers(0, 25)))
        parts = [rng.bytes(int(size)) for size in sizes]
        crcs = np.array([zlib.crc32(part) for part in parts], np.uint32)
        got = joined_crc(crcs, np.array([len(part) for part in parts], np.int64))
        assert got == zlib.crc32(b"".join(parts)), trial


@pytest.mark.parametrize("lengths", [[76], [76, 30], [0, 5, 9, 200], [1, 2, 3, 4, 5]])
@pytest.mark.parametrize("count", [4096, 4097, 9000])
def test_joined_crc_of_many_parts_of_few_lengths(lengths: list[int], count: int) -> None:
    """Thousands of parts of a few lengths (a run of small messages) are folded in groups
    first: still the CRC of the parts joined, whatever the padding of the last group."""
    rng = np.random.default_rng(count + len(lengths))
    sizes = rng.choice(lengths, size=count)
    parts = [rng.bytes(int(size)) for size in sizes]
    crcs = np.array([zlib.crc32(part) for part in parts], np.uint32)
    assert joined_crc(crcs, sizes.astype(np.int64)) == zlib.crc32(b"".join(parts))
