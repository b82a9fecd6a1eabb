"""ROS 2 bags pass the converter contract: the bundled single-file samples (sqlite3, MCAP)
and, when ../shared is present, every real storage file."""

from __future__ import annotations

from pathlib import Path

import pytest

from nanorec import registry
from tests.conftest import REALDATA, SAMPLES
from tests.converters.contract import ConverterContract
from tests.converters.ros2 import hostile

pytest.importorskip("yaml")
pytest.importorskip("zstandard")
pytest.importorskip("mcap")


class TestRos2Contract(ConverterContract):
    name = "ros2"

    @pytest.fixture
    def samples(self) -> list[Path]:
        return [SAMPLES / "ros2-robot.db3", SAMPLES / "ros2-robot.mcap"]

    def hostile_inputs(self, folder: Path) -> list[Path]:
        """Issue #34's round 4 (`hostile.py`): chunk, file and message bombs, runs of zeros,
        and archives whose side members are short or a zlib bomb."""
        files = hostile.write_all(folder)
        archive = folder / "sample.nanover.zip"
        registry.for_native(hostile.SAMPLE_DB3).convert(hostile.SAMPLE_DB3, archive)
        for member, data in [
            ("ros2-time.bin", bytes(12)),
            ("ros2-rank.bin", b""),
            ("ros2.msgpack.zlib", hostile.zlib_bomb()),
        ]:
            name = f"{member.split('.')[0]}-hostile.nanover.zip"
            files.append(hostile.with_member(archive, folder / name, member, data))
        archive.unlink()
        return files


@pytest.mark.realdata
@pytest.mark.skipif(not (REALDATA / "ros2").is_dir(), reason="../shared/realdata absent")
class TestRos2ContractRealdata(ConverterContract):
    name = "ros2"

    @pytest.fixture
    def samples(self) -> list[Path]:
        files = sorted((REALDATA / "ros2").glob("*/*.db3")) + sorted(
            (REALDATA / "ros2").glob("*/*.mcap")
        )
        return [p for p in files if p.stat().st_size < 40_000][:6]
