"""ROS 2 bags pass the converter contract: the bundled single-file samples (sqlite3, MCAP)
and, when ../shared is present, every real storage file."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import REALDATA, SAMPLES
from tests.converters.contract import ConverterContract

pytest.importorskip("yaml")
pytest.importorskip("zstandard")
pytest.importorskip("mcap")


class TestRos2Contract(ConverterContract):
    name = "ros2"

    @pytest.fixture
    def samples(self) -> list[Path]:
        return [SAMPLES / "ros2-robot.db3", SAMPLES / "ros2-robot.mcap"]


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
