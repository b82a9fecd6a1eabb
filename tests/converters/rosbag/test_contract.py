"""ROS bags pass the converter contract: the bundled synthetic bags (none, bz2, lz4,
crashed) and, when ../shared is present, the real ones."""

from __future__ import annotations

from pathlib import Path

import pytest

from nanorec.converters.rosbag.records import VERSION_LINE, span_at
from nanorec.errors import NanorecError
from tests.conftest import REALDATA, SAMPLES
from tests.converters.contract import ConverterContract

pytest.importorskip("lz4")


def record_starts(data: bytes) -> list[int]:
    """Where each record starts, top level and inside uncompressed chunks, up to damage."""
    starts: list[int] = []

    def walk_records(pos: int, end: int, depth: int) -> None:
        while pos < end:
            try:
                span = span_at(data, pos, end)
            except NanorecError:
                return
            starts.append(pos)
            header = data[span.header_start : span.header_end]
            if depth == 0 and b"compression=none" in header:
                walk_records(span.data_start, span.data_end, 1)
            pos = span.data_end

    walk_records(len(VERSION_LINE), len(data), 0)
    return starts


class TestRosbagContract(ConverterContract):
    name = "rosbag"

    def fuzz_boundaries(self, data: bytes) -> list[int]:
        return record_starts(data)

    @pytest.fixture
    def samples(self) -> list[Path]:
        return sorted(p for p in SAMPLES.glob("rosbag-*") if p.suffix != ".json")


@pytest.mark.realdata
@pytest.mark.skipif(not (REALDATA / "rosbag").is_dir(), reason="../shared/realdata absent")
class TestRosbagContractRealdata(ConverterContract):
    name = "rosbag"

    def fuzz_boundaries(self, data: bytes) -> list[int]:
        return record_starts(data)

    @pytest.fixture
    def samples(self) -> list[Path]:
        return sorted((REALDATA / "rosbag").glob("*.bag"))
