"""CARLA -> standard messages (what a ROS 2 bag writer is handed): per frame one `/tf` with
every posed actor and the hero's pose, in ROS's right-handed axes, at CARLA's elapsed time;
selections narrow it, an empty one is refused as everywhere else."""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import nanorec
from nanorec import standard
from nanorec.converters.carla.ids import ActorType, AttributeType
from nanorec.converters.carla.mcap_frames import RUN_FRAMES
from nanorec.converters.carla.recording import CarlaRecording
from nanorec.converters.carla.standard import HERO_TOPIC, TF_TOPIC
from nanorec.converters.carla.writer import RecordingWriter
from nanorec.errors import EmptySelectionError, UsageError
from nanorec.selection import Selection
from tests.conftest import SAMPLES
from tests.mcap.test_carla_axes import MIRROR, quaternion_matrix, unreal_matrix

SAMPLE_FILES = sorted(SAMPLES.glob("*.log"))
_S = int(AttributeType.STRING)
HERO_ROTATION = (5.0, 30.0, -10.0)  # pitch, yaw, roll (carla.Rotation's order)


@pytest.fixture(scope="module")
def sample() -> Iterator[CarlaRecording]:
    with CarlaRecording.open(SAMPLES / "carla-0.9.15-town03.log") as rec:
        yield rec


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CarlaRecording]:
    """Three frames 0.05 s apart: heroes 7 and 9 (7, the lowest id, is *the* hero), car 8,
    a spectator, and a sensor 10 attached to 7 and never positioned."""
    path = tmp_path_factory.mktemp("carla-standard") / "synthetic.log"
    hero = [(_S, "role_name", "hero")]
    with RecordingWriter(path, "0.9.16", map_name="Town03") as writer:
        for k in range(3):
            with writer.frame(elapsed=0.05 * k):
                if k == 0:
                    writer.spawn(1, ActorType.OTHER, "spectator")
                    writer.spawn(7, ActorType.VEHICLE, "vehicle.tesla.model3", attributes=hero)
                    writer.spawn(8, ActorType.VEHICLE, "vehicle.toyota.prius")
                    writer.spawn(9, ActorType.VEHICLE, "vehicle.audi.tt", attributes=hero)
                    writer.spawn(10, ActorType.SENSOR, "sensor.camera.rgb", location=(50, 0, 170))
                    writer.parent([10], [7])
                writer.positions(
                    [7, 8, 9],
                    [(1000.0 + 100 * k, 250.0, 30.0), (-400.0, -800.0, 0.0), (0.0, 0.0, 0.0)],
                    [HERO_ROTATION, (0.0, -90.0, 0.0), (0.0, 0.0, 0.0)],
                )
    with CarlaRecording.open(path) as rec:
        yield rec


def _tf(messages: list[standard.StandardMessage]) -> list[standard.StandardMessage]:
    return [m for m in messages if m.topic == TF_TOPIC]


def _child(message: standard.StandardMessage, child: str) -> dict[str, Any]:
    (found,) = [t for t in message.value["transforms"] if t["child_frame_id"] == child]
    return dict(found)


def _quaternion(rotation: dict[str, float]) -> np.ndarray[Any, np.dtype[np.float64]]:
    return np.array([rotation["x"], rotation["y"], rotation["z"], rotation["w"]])


@pytest.mark.parametrize("path", SAMPLE_FILES, ids=lambda p: p.name)
def test_every_sample_gives_standard_types_in_time_order(path: Path) -> None:
    with nanorec.open(path) as rec:
        assert isinstance(rec, CarlaRecording)
        messages = list(standard.standard_messages(rec, None))
        stamps = rec.reader.index.timestamp_us
        assert {m.type for m in messages} <= set(standard.TYPES)
        times = [m.time_ns for m in messages]
        assert times == sorted(times)
        tf = _tf(messages)
        assert len(tf) == len(rec)  # every frame has live actors
        assert [m.time_ns for m in tf] == [int(t) * 1000 for t in stamps]
        for message in tf[:: max(1, len(tf) // 20)]:
            children = {t["child_frame_id"] for t in message.value["transforms"]}
            for item in message.value["transforms"]:
                assert item["header"]["stamp"] == standard.stamp(message.time_ns)
                parent = item["header"]["frame_id"]
                assert parent == "map" or parent in children  # attached sensors
                norm = np.linalg.norm(_quaternion(item["transform"]["rotation"]))
                assert math.isclose(float(norm), 1.0, rel_tol=1e-9)
        heroes = [m for m in messages if m.topic == HERO_TOPIC]
        assert len(heroes) == len(rec)  # the generator's first vehicle is the hero
        assert all(m.value["header"]["frame_id"] == "map" for m in heroes)


def test_a_known_actor_is_where_carla_puts_it_with_y_negated(sample: CarlaRecording) -> None:
    number = len(sample) // 2
    world = sample.frame(number)
    selection = Selection.make(messages=f"{number}:{number + 1}")
    (message,) = _tf(list(sample.standard_messages(selection)))
    assert message.time_ns == round(world.elapsed * 1e6) * 1000
    vehicles = [a for a in world.actors.values() if a.type_id.startswith("vehicle.")]
    assert vehicles
    for actor in vehicles:
        moved = _child(message, f"actor_{actor.id}")["transform"]["translation"]
        x, y, z = actor.location
        assert (moved["x"], moved["y"], moved["z"]) == pytest.approx((x / 100, -y / 100, z / 100))


def test_rotation_is_unreal_mirrored_and_the_hero_is_the_lowest_id(
    synthetic: CarlaRecording,
) -> None:
    messages = list(synthetic.standard_messages())
    assert [m.topic for m in messages] == [TF_TOPIC, HERO_TOPIC] * 3
    assert [m.time_ns for m in messages] == [t for t in (0, 50_000_000, 100_000_000) for _ in "ab"]
    tf, hero = messages[4], messages[5]
    moved = _child(tf, "actor_7")
    assert moved["header"]["frame_id"] == "map"
    translation = moved["transform"]["translation"]
    assert (translation["x"], translation["y"], translation["z"]) == pytest.approx(
        (12.0, -2.5, 0.3)
    )
    q = _quaternion(moved["transform"]["rotation"])
    expected = MIRROR @ unreal_matrix(*HERO_ROTATION) @ MIRROR
    np.testing.assert_allclose(quaternion_matrix(q), expected, atol=1e-12)
    # the hero's pose is actor 7's transform (9 is a hero too, with a higher id)
    assert hero.value["header"] == standard.header(100_000_000, "map")
    position, orientation = hero.value["pose"]["position"], hero.value["pose"]["orientation"]
    assert position == translation and orientation == moved["transform"]["rotation"]
    # the sensor hangs from its parent at its spawn offset; the spectator is there too
    sensor = _child(tf, "actor_10")
    assert sensor["header"]["frame_id"] == "actor_7"
    assert sensor["transform"]["translation"] == pytest.approx({"x": 0.5, "y": 0.0, "z": 1.7})
    assert {t["child_frame_id"] for t in tf.value["transforms"]} == {
        f"actor_{i}" for i in (1, 7, 8, 9, 10)
    }


def test_selections_narrow_the_output(sample: CarlaRecording) -> None:
    everything = list(sample.standard_messages(None))
    ranged = list(sample.standard_messages(Selection.make(start=1.0, end=2.0)))
    assert 0 < len(ranged) < len(everything)
    start_ns = int(sample.reader.index.timestamp_us[0]) * 1000
    assert all(start_ns + 1e9 <= m.time_ns <= start_ns + 2e9 for m in ranged)
    numbered = list(sample.standard_messages(Selection.make(messages="10:15")))
    assert len(_tf(numbered)) == 5
    stamps = sample.reader.index.timestamp_us
    assert [m.time_ns for m in _tf(numbered)] == [int(t) * 1000 for t in stamps[10:15]]
    for kinds, topics in (
        (["/tf"], {TF_TOPIC}),
        (["tf2_msgs/msg/TFMessage"], {TF_TOPIC}),
        (["/carla/hero/pose"], {HERO_TOPIC}),
        (["hero"], {HERO_TOPIC}),
        (["frame"], {TF_TOPIC, HERO_TOPIC}),
        (["/tf", "/carla/hero/pose"], {TF_TOPIC, HERO_TOPIC}),
    ):
        chosen = list(sample.standard_messages(Selection.make(kinds=kinds, messages="0:20")))
        assert {m.topic for m in chosen} == topics, kinds
        assert len(chosen) == 20 * len(topics)


@pytest.mark.parametrize(
    "selection",
    [
        Selection.make(start=1e6),  # beyond the end
        Selection.make(messages="5:5"),
        Selection.make(kinds=["/carla/scene"]),  # an MCAP topic, not a standard one
        Selection.make(kinds=["/tf", "nope"]),
    ],
    ids=["late-start", "no-messages", "mcap-topic", "unknown-kind"],
)
def test_an_empty_selection_is_refused_at_the_call(
    sample: CarlaRecording, selection: Selection
) -> None:
    with pytest.raises(EmptySelectionError, match="selects no"):
        sample.standard_messages(selection)  # before iterating: the export writes nothing
    with pytest.raises(UsageError):
        list(standard.standard_messages(sample, selection))


def test_frames_are_read_one_at_a_time(
    sample: CarlaRecording, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Bounded memory: the first message costs one run of frames, not the recording."""
    read: list[int] = []
    reader_class = type(sample.reader)
    get = reader_class.__getitem__

    def counted(self: Any, index: int) -> Any:
        read.append(index)
        return get(self, index)

    monkeypatch.setattr(reader_class, "__getitem__", counted)
    first = list(itertools.islice(sample.standard_messages(), 1))
    assert first[0].topic == TF_TOPIC
    assert read and max(read) < RUN_FRAMES < len(sample)
