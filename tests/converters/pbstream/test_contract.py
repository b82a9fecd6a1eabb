"""pbstream passes the converter contract on the bundled samples (generated streams: format
version 2 with two trajectories, and a legacy stream without header)."""

from __future__ import annotations

from pathlib import Path

import pytest

from nanorec.converters.pbstream.stream import MAGIC, Frame, iter_frames
from tests.conftest import SAMPLES
from tests.converters.contract import ConverterContract


def record_starts(data: bytes) -> list[int]:
    """Each record's size prefix and the gzip member after it."""
    start = len(MAGIC) if data.startswith(MAGIC) else 0
    frames = [f for f in iter_frames(data, start) if isinstance(f, Frame)]
    return [start, *(f.offset for f in frames), *(f.start for f in frames)]


class TestPbstreamContract(ConverterContract):
    name = "pbstream"

    def fuzz_boundaries(self, data: bytes) -> list[int]:
        return record_starts(data)

    @pytest.fixture
    def samples(self) -> list[Path]:
        return sorted(SAMPLES.glob("pbstream-*.pbstream"), reverse=True)
