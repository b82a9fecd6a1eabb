"""Runs of same-layout frames written at once (`runs.py`) give the very archive that the
per-frame path gives: same messages, timestamps, index and side members, and the file back
byte for byte. The per-frame path is the reference: `fast_rows` returning None forces it."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from nanorec.archive.layout import COMPACT, STORED, use_layout
from nanorec.archive.reader import ArchiveReader
from nanorec.converters.carla import convert as convert_module
from nanorec.converters.carla.convert import convert, export
from nanorec.converters.carla.frames import Run, iter_frames
from nanorec.converters.carla.generate import generate_to
from nanorec.converters.carla.header import Header
from nanorec.converters.carla.ids import FAMILIES
from tests.conftest import carla_realdata
from tests.converters.carla import carla_bytes as cb

SAMPLES = sorted((Path(__file__).resolve().parents[3] / "samples").glob("carla-*.log"))


FAST_ROWS = convert_module.fast_rows


def _archive(
    path: Path, out: Path, *, fast: bool, monkeypatch: pytest.MonkeyPatch, family: str | None
) -> Any:
    """Everything an archive holds that a reader sees, converted with or without runs."""
    written = [0]

    def counted(*args: Any, **kwargs: Any) -> Any:
        rows = FAST_ROWS(*args, **kwargs) if fast else None
        written[0] += 0 if rows is None else rows.count
        return rows

    with monkeypatch.context() as patch:
        patch.setattr(convert_module, "fast_rows", counted)
        report = convert(path, out, overwrite=True, family=family)
    _archive.fast_rows = written[0]  # type: ignore[attr-defined]
    with ArchiveReader(out) as reader:
        messages = [bytes(reader.raw(i)) for i in range(len(reader))]
        index = reader.index
        columns = (index.timestamp_us.tolist(), [index.types(i) for i in range(len(reader))])
        members = {name: reader.member(name) for name in reader.member_names if "carla" in name}
    back = out.with_suffix(".back")
    assert export(out, back, overwrite=True).identical is True
    assert back.read_bytes() == path.read_bytes()
    return messages, columns, members, report.messages, report.sha256, report.cut


def _same_both_ways(
    path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, family: str | None = None
) -> int:
    """Asserts both ways give the same archive; returns how many frames took the fast way."""
    fast = _archive(path, tmp_path / "fast.zip", fast=True, monkeypatch=monkeypatch, family=family)
    rows: int = _archive.fast_rows  # type: ignore[attr-defined]
    slow = _archive(path, tmp_path / "slow.zip", fast=False, monkeypatch=monkeypatch, family=family)
    assert fast == slow, path.name
    return rows


@pytest.mark.parametrize("path", SAMPLES + carla_realdata(), ids=lambda p: p.name)
def test_samples_and_real_files_convert_the_same_with_runs(
    path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _same_both_ways(path, tmp_path, monkeypatch)


@pytest.mark.parametrize("name", list(FAMILIES))
@pytest.mark.parametrize("layout", [STORED, COMPACT])
def test_generated_recordings_convert_the_same_with_runs(
    name: str, layout: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "gen.log"
    generate_to(path, name, frames=40, vehicles=4, walkers=2, traffic_lights=3, crash=True)
    with use_layout(layout):
        _same_both_ways(path, tmp_path, monkeypatch)


def _wheels_recording(bodies: list[bytes]) -> bytes:
    return cb.header() + b"".join(
        cb.packet(0, cb.frame_start(i + 1, 0.05, 0.05 * i))
        + cb.packet(21, body)
        + cb.packet(1, b"")
        for i, body in enumerate(bodies)
    )


def test_a_run_whose_wheel_records_change_within_the_same_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Same packet sizes, other records: the frames stay a run for the walk, and the
    wheel-count check sends the changed ones the per-frame way."""
    car = [(0, 1.0, 2.0), (1, 1.0, 2.0), (2, 0.0, 2.0), (3, 0.0, 2.0)]
    bike = [(0, 5.0, 9.0), (1, 0.0, 9.0)]
    same = cb.counted(
        [cb.vehicle_wheels(1, car), cb.vehicle_wheels(2, car), cb.vehicle_wheels(3, bike)]
    )
    swapped = cb.counted(
        [cb.vehicle_wheels(3, bike), cb.vehicle_wheels(1, car), cb.vehicle_wheels(2, car)]
    )
    three = cb.counted([cb.vehicle_wheels(7, bike)] * 3 + [cb.vehicle_wheels(8, bike)] * 2)
    assert len(three) != len(same)
    rng = random.Random(3)
    bodies = [rng.choice([same, same, same, swapped]) for _ in range(60)]
    data = _wheels_recording(bodies)
    path = tmp_path / "wheels.log"
    path.write_bytes(data)
    family = FAMILIES["0.9.16"]
    runs = [item for item in iter_frames(data, len(cb.header()), family) if isinstance(item, Run)]
    assert runs and max(run.count for run in runs) > 10
    assert 10 < _same_both_ways(path, tmp_path, monkeypatch, "0.9.16") < 50


def test_a_damaged_count_inside_a_run_is_carried_raw_like_the_per_frame_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    family = FAMILIES["0.9.16"]
    path = tmp_path / "gen.log"
    generate_to(path, family, frames=50, vehicles=5, walkers=2, traffic_lights=3)
    data = bytearray(path.read_bytes())
    start = Header.parse(bytes(data)).size
    runs = [item for item in iter_frames(bytes(data), start, family) if isinstance(item, Run)]
    run = max(runs, key=lambda item: item.count)
    middle = run.frame(run.count // 2)
    position = middle.ids.index(6)  # Position: a count, then 28-byte records
    at = middle.offsets[position] + 5
    data[at : at + 2] = (int.from_bytes(data[at : at + 2], "little") + 1).to_bytes(2, "little")
    path.write_bytes(bytes(data))
    assert _same_both_ways(path, tmp_path, monkeypatch) > 10
    with ArchiveReader(tmp_path / "fast.zip") as reader:
        raw = [i for i in range(len(reader)) if "raw" in reader[i]["frame"]]
    assert len(raw) == 1


def test_timestamps_of_a_run_follow_the_per_frame_rules(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Elapsed times that go back, are NaN or negative keep the previous timestamp; a
    timestamp past 2^32 µs switches the message's timestamp entry to 64 bits mid-run."""
    family = FAMILIES["0.9.16"]
    body = cb.counted([cb.position(family.engine, 1, (0, 0, 0), (0, 0, 0))])
    elapsed = [0.05 * i for i in range(40)]
    elapsed[5] = float("nan")
    elapsed[9] = -1.0
    elapsed[12] = 0.01
    elapsed[20:] = [4294.9 + 0.05 * i for i in range(20)]  # crosses 2^32 µs
    data = cb.header() + b"".join(
        cb.packet(0, cb.frame_start(i + 1, 0.05, t)) + cb.packet(6, body) + cb.packet(1, b"")
        for i, t in enumerate(elapsed)
    )
    path = tmp_path / "times.log"
    path.write_bytes(data)
    assert _same_both_ways(path, tmp_path, monkeypatch, "0.9.16") > 30
    with ArchiveReader(tmp_path / "fast.zip") as reader:
        stamps = reader.index.timestamp_us
    assert (np.diff(stamps) >= 0).all() and stamps[-1] > 1 << 32
