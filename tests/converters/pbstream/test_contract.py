"""pbstream passes the converter contract on the bundled samples (generated streams: format
version 2 with two trajectories, and a legacy stream without header)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import SAMPLES
from tests.converters.contract import ConverterContract


class TestPbstreamContract(ConverterContract):
    name = "pbstream"

    @pytest.fixture
    def samples(self) -> list[Path]:
        return sorted(SAMPLES.glob("pbstream-*.pbstream"), reverse=True)
