"""CARLA passes the converter contract on every bundled sample."""

from __future__ import annotations

from pathlib import Path

import pytest

from nanorec.converters.carla.header import Header
from nanorec.converters.carla.walk import walk
from tests.conftest import SAMPLES
from tests.converters.contract import ConverterContract


class TestCarlaContract(ConverterContract):
    name = "carla"

    def fuzz_boundaries(self, data: bytes) -> list[int]:
        start = Header.parse(data).size
        return [start, *walk(data, start).offsets.tolist()]

    @pytest.fixture
    def samples(self) -> list[Path]:
        return sorted(SAMPLES.glob("carla-*.log"))
