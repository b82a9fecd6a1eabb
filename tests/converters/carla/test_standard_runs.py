"""CARLA's standard messages a run of frames at once (`standard_runs.py`) against the
reference, a `World` per frame (`standard.frame_messages`): the same topics, times and
values, hence the same CDR bytes, on every sample, the real recordings and a synthetic one
with what the run path leaves to the reference (spawns, an attached sensor, a pose that is
not finite)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import nanorec
from nanorec import standard
from nanorec.converters.carla.ids import ActorType, AttributeType
from nanorec.converters.carla.recording import CarlaRecording
from nanorec.converters.carla.standard import KIND_TOPICS, frame_messages
from nanorec.converters.carla.standard_runs import run_messages
from nanorec.converters.carla.writer import RecordingWriter
from nanorec.converters.ros.bridge.standard import StandardEncoder
from nanorec.converters.ros.ros2.cdr_encode import Encoder
from tests.conftest import SAMPLES, carla_realdata

SAMPLE_FILES = sorted(SAMPLES.glob("*.log"))
_S = int(AttributeType.STRING)


def reference(rec: CarlaRecording, topics: frozenset[str]) -> Iterator[standard.StandardMessage]:
    stamps = rec.reader.index.timestamp_us
    for number in range(len(rec)):
        yield from frame_messages(rec.frame(number), int(stamps[number]) * 1000, topics)


def assert_same(rec: CarlaRecording, topics: frozenset[str] = KIND_TOPICS["frame"]) -> int:
    """The run path's messages are the reference's: returns how many `Transforms` it gave
    (the frames it took itself)."""
    encoder = StandardEncoder()
    plain = Encoder(encoder.definitions)
    fast = list(run_messages(rec, list(range(len(rec))), topics))
    slow = list(reference(rec, topics))
    assert [(m.topic, m.type, m.time_ns) for m in fast] == [
        (m.topic, m.type, m.time_ns) for m in slow
    ]
    for got, want in zip(fast, slow, strict=True):
        assert dict(got.value) == dict(want.value)
        data = encoder.encode(got.type, got.value)
        assert data == plain.encode(want.type, want.value)
    return sum(isinstance(m.value, standard.Transforms) for m in fast)


@pytest.mark.parametrize("path", SAMPLE_FILES, ids=lambda p: p.name)
def test_every_sample_gives_the_reference_messages(path: Path) -> None:
    with nanorec.open(path) as rec:
        assert isinstance(rec, CarlaRecording)
        taken = assert_same(rec)
        assert taken > len(rec) // 2  # the run path did the work, not the fallback


@pytest.mark.parametrize("topics", [frozenset({"/tf"}), frozenset({"/carla/hero/pose"})])
def test_one_topic_alone(topics: frozenset[str]) -> None:
    with nanorec.open(SAMPLES / "carla-0.9.16-town03.log") as rec:
        assert isinstance(rec, CarlaRecording)
        assert_same(rec, topics)


@pytest.mark.slow  # 16 s: every frame of the real logs through the reference path
@pytest.mark.realdata
@pytest.mark.parametrize("path", carla_realdata(), ids=lambda p: p.name)
def test_real_recordings_give_the_reference_messages(path: Path, tmp_path: Path) -> None:
    with nanorec.open(path) as rec:
        assert isinstance(rec, CarlaRecording)
        assert_same(rec)


def test_spawns_sensors_and_lost_poses(tmp_path: Path) -> None:
    """A hero, an attached sensor never positioned (its frame is its parent's), an actor
    spawned midway, one whose pose turns NaN for a frame, one destroyed."""
    path = tmp_path / "synthetic.log"
    hero = [(_S, "role_name", "hero")]
    with RecordingWriter(path, "0.9.16", map_name="Town03") as writer:
        for k in range(12):
            with writer.frame(elapsed=0.05 * k):
                if k == 0:
                    writer.spawn(7, ActorType.VEHICLE, "vehicle.tesla.model3", attributes=hero)
                    writer.spawn(8, ActorType.VEHICLE, "vehicle.toyota.prius")
                    writer.spawn(10, ActorType.SENSOR, "sensor.camera.rgb", location=(50, 0, 170))
                    writer.parent([10], [7])
                if k == 5:
                    writer.spawn(1234, ActorType.WALKER, "walker.pedestrian.0001")
                if k == 9:
                    writer.destroy(8)
                ids = [7, 8] if k < 9 else [7]
                x = float("nan") if k == 7 else 100.0 * k
                locations = [(x, 250.0, 30.0), (-400.0, -800.0, 0.0)][: len(ids)]
                rotations = [(5.0, 30.0 + k, -10.0), (0.0, -90.0, 0.0)][: len(ids)]
                if k >= 5:
                    ids, locations = [*ids, 1234], [*locations, (1.0, 2.0, 3.0)]
                    rotations = [*rotations, (0.0, 0.0, 0.0)]
                writer.positions(ids, locations, rotations)
    with CarlaRecording.open(path) as rec:
        taken = assert_same(rec)
        assert 0 < taken < len(rec)
