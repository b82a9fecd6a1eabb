"""Export reads messages' data in runs and joins each block of pieces at once
(`datas.py`, `db3_skeleton.join_db3`, `mcap_skeleton.join_mcap`): the same bytes as the joins
fed one message at a time (`reference_join.py`, the code as it was), on generated bags of
both storages, with blocks made tiny so that messages and chunks straddle them, on every
real bag (compressed and multi-file ones included), on a crashed bag with its WAL, and a
damaged message is still named by its CRC."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from nanorec import registry
from nanorec.archive.layout import use_layout
from nanorec.archive.reader import ArchiveReader
from nanorec.contract import ConvertRequest
from nanorec.converters.ros.ros2 import db3_skeleton, mcap_skeleton
from nanorec.converters.ros.ros2.datas import Datas, data_of
from nanorec.converters.ros.ros2.generate import generate
from nanorec.converters.ros.ros2.members import skeleton_member
from nanorec.converters.ros.ros2.meta import Ros2Meta
from nanorec.converters.ros.ros2.pieces import file_pieces
from nanorec.errors import ChecksumError
from tests.conftest import REALDATA
from tests.converters.ros2.reference_join import old_join_db3, old_join_mcap

pytest.importorskip("zstandard")
pytest.importorskip("mcap")

REAL = sorted(p for p in (REALDATA / "ros2").glob("*") if p.is_dir()) if REALDATA.is_dir() else []
REAL = [p for p in REAL if any(f.suffix in (".db3", ".mcap", ".zstd") for f in p.iterdir())]


def _convert(bag: Path, tmp_path: Path) -> Path:
    archive = tmp_path / "a.nanover.zip"
    registry.get("ros2").convert(bag, archive, ConvertRequest(overwrite=True))
    return archive


def _check_same_as_before(archive: Path) -> int:
    """Every bag file of `archive` joins back as the one-message-at-a-time join gave it; the
    number of files compared."""
    compared = 0
    with ArchiveReader(archive) as reader:
        meta = Ros2Meta(reader)
        if meta.adopted:
            return 0
        for index, entry in enumerate(meta.files):
            if entry["compressed"]:
                continue
            numbers = meta.numbers_of_file(index)
            datas = Datas(reader, numbers)
            buffer, starts, lengths = datas.take(0, len(numbers))
            for k, number in enumerate(numbers.tolist()):
                assert buffer[starts[k] : starts[k] + lengths[k]] == bytes(data_of(reader, number))
            old = old_join_db3 if entry["storage"] == "sqlite3" else old_join_mcap
            skeleton = reader.member(skeleton_member(index))
            before = b"".join(old(skeleton, [data_of(reader, n) for n in numbers.tolist()]))
            now = b"".join(file_pieces(reader, meta, index))
            assert now == before
            compared += 1
    return compared


@pytest.fixture
def tiny_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Blocks of a few pieces, batches of a few datas, windows of a few operations:
    messages spread over several pages and chunks over several batches cross them."""
    monkeypatch.setattr(db3_skeleton, "_BLOCK", 7)
    monkeypatch.setattr(db3_skeleton, "_BLOCK_BYTES", 3000)
    monkeypatch.setattr(mcap_skeleton, "_BATCH", 5)
    monkeypatch.setattr(mcap_skeleton, "_BATCH_BYTES", 2000)
    monkeypatch.setattr(mcap_skeleton, "_WINDOW", 7)


@pytest.mark.parametrize("storage", ["sqlite3", "mcap"])
@pytest.mark.parametrize("image", [0, 48])
@pytest.mark.parametrize("tiny", [False, True], ids=["blocks", "tiny-blocks"])
def test_generated_bags_join_as_before(
    storage: str, image: int, tiny: bool, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    if tiny:
        request.getfixturevalue("tiny_blocks")
    bag = tmp_path / "bag"
    generate(bag, seconds=30, storage=storage, image=image)
    archive = _convert(bag, tmp_path)
    assert _check_same_as_before(archive) == 1
    back = tmp_path / "back"
    with ArchiveReader(archive) as reader:
        assert registry.get("ros2").export(reader, back).identical is True


@pytest.mark.parametrize("bag", REAL, ids=lambda p: p.name)
def test_real_bags_join_as_before(bag: Path, tmp_path: Path, tiny_blocks: None) -> None:
    archive = _convert(bag, tmp_path)
    _check_same_as_before(archive)
    back = tmp_path / "back"
    with ArchiveReader(archive) as reader:
        assert registry.get("ros2").export(reader, back).identical is True


def test_crashed_bag_with_its_wal_joins_as_before(tmp_path: Path, tiny_blocks: None) -> None:
    from tests.converters.ros2.test_recover_wal import crashed, live_writer

    with live_writer(tmp_path, 300, 100) as con:
        path = crashed(con, tmp_path / "bag")
    archive = _convert(path, tmp_path)
    assert _check_same_as_before(archive) == 1
    back = tmp_path / "back.db3"
    with ArchiveReader(archive) as reader:
        assert registry.get("ros2").export(reader, back).identical is True
    assert back.with_name("back.db3-wal").read_bytes() == (
        path.with_name("bag_0.db3-wal").read_bytes()
    )


def test_a_damaged_message_is_named_by_its_crc(tmp_path: Path) -> None:
    bag = tmp_path / "bag"
    generate(bag, seconds=5, storage="sqlite3")
    archive = tmp_path / "a.nanover.zip"
    with use_layout("stored"):  # a byte flipped at the message's stored offset
        registry.get("ros2").convert(bag, archive)
    with ArchiveReader(archive) as reader:
        middle = reader._messages_start + int(reader.index.offset[37])
        middle += int(reader.index.length[37]) - 20
        assert reader.raw_run(0, len(reader))[0][: len(reader.raw(0))] == reader.raw(0)
    with archive.open("r+b") as handle:
        handle.seek(middle)
        byte = handle.read(1)
        handle.seek(middle)
        handle.write(bytes([byte[0] ^ 0x10]))
    with ArchiveReader(archive) as reader:
        with pytest.raises(ChecksumError, match="message 37 fails its CRC-32"):
            reader.raw_run(30, 40)
        reader.raw_run(0, 37)
        with pytest.raises(ChecksumError, match="message 37 fails its CRC-32"):
            registry.get("ros2").export(reader, tmp_path / "back")
    assert not (tmp_path / "back").exists()


def test_runs_of_scattered_numbers(tmp_path: Path) -> None:
    """Positions picked in any order, far apart or repeated, give each one's data."""
    bag = tmp_path / "bag"
    generate(bag, seconds=20, storage="mcap")
    archive = _convert(bag, tmp_path)
    with ArchiveReader(archive) as reader:
        numbers = np.arange(len(reader))[::-1].copy()
        datas = Datas(reader, numbers)
        picks = np.array([5, 0, len(numbers) - 1, 5, 300, 2, 299], np.int64)
        buffer, starts, lengths = datas.pick(picks)
        for k, position in enumerate(picks.tolist()):
            got = buffer[starts[k] : starts[k] + lengths[k]]
            assert got == bytes(data_of(reader, int(numbers[position])))
