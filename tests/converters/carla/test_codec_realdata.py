"""Every real recording of ../shared/realdata/carla round-trips byte for byte, nothing raw.

Skipped when ../shared/realdata is absent (a fresh clone).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from nanorec.converters.carla.codec import Reader, decode, encode
from nanorec.converters.carla.roundtrip import roundtrip

pytestmark = pytest.mark.realdata

# file -> (family, PhysicsControl wheel sizes, frames)
EXPECTED = {
    "tkortz_isorc20_2762.rec": ("0.9.4-0.9.9", (), 237),
    "scenario_runner_2020_DistanceToLaneCenter.log": ("0.9.10-0.9.13", (36,), 461),
    "scenario_runner_DistanceToLaneCenter.log": ("0.9.10-0.9.13", (48,), 432),
    "mastersproj_scenic_scenario1.log": ("0.9.10-0.9.13", (), 116),
    "supp878_crash.log": ("0.9.15", (), 158),
}


def _files(realdata_dir: Path) -> list[Path]:
    files = sorted(p for p in (realdata_dir / "carla").iterdir() if p.is_file())
    if not files:
        pytest.skip("no CARLA recordings in ../shared/realdata/carla")
    return files


def test_every_real_file_round_trips_with_nothing_raw(realdata_dir: Path) -> None:
    for path in _files(realdata_dir):
        report = roundtrip(path, batch_bytes=64 << 10)  # several batches even for small files
        assert report.identical, path.name
        assert report.raw_by_id == {}, (path.name, report.misfit_examples)
        assert report.encoded_size == path.stat().st_size
        if path.name in EXPECTED:
            family, wheels, frames = EXPECTED[path.name]
            assert report.family == family, (path.name, report.reasons)
            assert report.physics_wheel_sizes == wheels, path.name
            assert report.frames == frames, path.name
            assert report.truncation is None and not report.incomplete_frame


def test_decode_in_memory_and_through_mmap_agree(realdata_dir: Path) -> None:
    path = realdata_dir / "carla" / "scenario_runner_DistanceToLaneCenter.log"
    if not path.exists():
        pytest.skip(f"{path.name} not present")
    data = path.read_bytes()
    whole = decode(data)
    assert encode(whole) == data
    with Reader(path, batch_bytes=256 << 10) as reader:
        batches = list(reader.iter_batches())
        assert reader.family is whole.family
    assert len(batches) > 1
    assert sum(len(b.packet_ids) for b in batches) == len(whole.batches[0].packet_ids)
    # Batches end on frame boundaries: each starts with a FrameStart.
    assert all(int(b.packet_ids[0]) == 0 for b in batches)
