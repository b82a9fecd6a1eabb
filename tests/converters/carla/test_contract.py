"""CARLA passes the converter contract on every bundled sample."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import SAMPLES
from tests.converters.contract import ConverterContract


class TestCarlaContract(ConverterContract):
    name = "carla"

    @pytest.fixture
    def samples(self) -> list[Path]:
        return sorted(SAMPLES.glob("carla-*.log"))
