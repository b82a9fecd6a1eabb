"""ROS bags pass the converter contract: the bundled synthetic bags (none, bz2, lz4,
crashed) and, when ../shared is present, the real ones."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import REALDATA, SAMPLES
from tests.converters.contract import ConverterContract

pytest.importorskip("lz4")


class TestRosbagContract(ConverterContract):
    name = "rosbag"

    @pytest.fixture
    def samples(self) -> list[Path]:
        return sorted(p for p in SAMPLES.glob("rosbag-*") if p.suffix != ".json")


@pytest.mark.realdata
@pytest.mark.skipif(not (REALDATA / "rosbag").is_dir(), reason="../shared/realdata absent")
class TestRosbagContractRealdata(ConverterContract):
    name = "rosbag"

    @pytest.fixture
    def samples(self) -> list[Path]:
        return sorted((REALDATA / "rosbag").glob("*.bag"))
