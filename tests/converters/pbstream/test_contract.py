"""pbstream passes the converter contract on the bundled samples (generated streams: format
version 2 with two trajectories, and a legacy stream without header)."""

from __future__ import annotations

import struct
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

    def hostile_inputs(self, folder: Path) -> list[Path]:
        """A record inflating past the cap (honest and lying sizes), a node time of the
        wrong wire type, and absurd varint lengths inside a valid gzip member."""
        from nanorec.converters.pbstream.wire import FIXED64, field_bytes, key
        from tests.converters.pbstream.test_broken import _bomb, _stream

        bomb = _bomb(300 << 20)
        timed = field_bytes(1, b"\x08\x00\x10\x00") + field_bytes(
            5, key(1, FIXED64) + struct.pack("<q", 638220896057529180)
        )
        files = {
            "bomb": _stream([b"\x08\x02", b""], {1: bomb}),
            "bomb-lying": _stream([b"\x08\x02", b""], {1: _bomb(300 << 20, declared=1000)}),
            "wire-type": _stream([b"\x08\x02", field_bytes(4, timed)]),
            "huge-length": _stream([b"\x08\x02", b"\x22\xff\xff\xff\xff\x0f\x0a\x00"]),
            "deep": _stream([b"\x08\x02", b"\x22\x02" * 2000]),
        }
        for name, data in files.items():
            (folder / f"{name}.pbstream").write_bytes(data)
        return sorted(folder.glob("*.pbstream"))

    @pytest.fixture
    def samples(self) -> list[Path]:
        return sorted(SAMPLES.glob("pbstream-*.pbstream"), reverse=True)
