"""ROS bags pass the converter contract: the bundled synthetic bags (none, bz2, lz4,
crashed) and, when ../shared is present, the real ones."""

from __future__ import annotations

from pathlib import Path

import pytest

from nanorec.converters.ros.ros1.records import VERSION_LINE, span_at
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


CHAIN = "T1 next\n" + "".join(
    f"{'=' * 80}\nMSG: p/T{i}\n" + (f"T{i + 1} next\n" if i < 3000 else "int32 x")
    for i in range(1, 3001)
)


def hostile_bags(folder: Path) -> list[Path]:
    """Legal framing around hostile content: arrays of zero-size elements claiming 2^32-1
    items, a type containing itself, arrays and strings longer than their payload, a bz2
    chunk of 64 MiB of zeros whose size field says 4 GiB, an index pointing at a non-chunk."""
    from tests.converters.rosbag.test_trust import EMPTY, _bag_of, _bomb

    made = [
        _bag_of(folder / "empty-array.bag", "p/B", "std_msgs/Empty[] a" + EMPTY, b"\xff" * 4),
        _bag_of(folder / "empty-fixed.bag", "p/B", "std_msgs/Empty[4294967295] a" + EMPTY, b""),
        _bag_of(folder / "self.bag", "p/A", "int32 x\np/A next", bytes(4000)),
        _bag_of(folder / "strings.bag", "p/S", "string[] s", b"\xff\xff\xff\x7f" + bytes(8)),
        _bag_of(folder / "no-def.bag", "p/N", "", b"\x01\x02"),
        _bag_of(folder / "bad-def.bag", "p/D", "int32[ x\n}}}", b"\x01\x02\x03\x04"),
        _bomb(folder / "bomb.bag", 64),
        _bag_of(folder / "chain.bag", "p/A", CHAIN, bytes(4)),  # #34 item 5: 3,000 types deep
    ]
    data = bytearray(SAMPLES.joinpath("rosbag-robot-bz2.bag").read_bytes())
    field = data.index(b"chunk_pos=") + len(b"chunk_pos=")
    data[field : field + 8] = (13).to_bytes(8, "little")  # the bag header record
    made.append(folder / "lying-index.bag")
    made[-1].write_bytes(bytes(data))
    return made


class TestRosbagContract(ConverterContract):
    name = "rosbag"

    def fuzz_boundaries(self, data: bytes) -> list[int]:
        return record_starts(data)

    def hostile_inputs(self, folder: Path) -> list[Path]:
        return hostile_bags(folder)

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
