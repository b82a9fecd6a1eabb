"""CARLA's MCAP messages are the same on every path, on every sample and real file and on a
busy synthetic town: frames drawn in runs from the archive's arrays (`mcap_frames`) give
the bytes of the reference path (`mcap.frame_records`: a `World` per frame, actors built as
far as drawing needs, `mcap_proto`), and those protobuf messages, decoded by the `protobuf`
package, are the values of Foxglove's JSON built as dicts from whole actors (the reference
in tests/converters/carla/reference/mcap_dicts.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("google.protobuf")

from nanorec.converters.carla.generate import generate
from nanorec.converters.carla.mcap import frame_records
from nanorec.converters.carla.mcap_frames import RUN_FRAMES, FrameDrawer
from nanorec.converters.carla.mcap_scene import TOPICS
from nanorec.converters.carla.recording import CarlaRecording
from tests.conftest import SAMPLES, carla_realdata
from tests.converters.carla.reference import mcap_dicts
from tests.mcap.decode import record_value

FILES = [*sorted(SAMPLES.glob("*.log")), *carla_realdata()]
FIELDS = ("topic", "schema_name", "schema_data", "message_encoding", "log_time_ns", "sequence")


def assert_same_messages(recording: CarlaRecording, numbers: list[int]) -> int:
    """Compares the frames `numbers` (drawn in runs as the export does); returns how many
    the arrays drew."""
    topics = set(TOPICS.values())
    stamps = recording.reader.index.timestamp_us
    drawer = FrameDrawer(recording, topics)
    from_arrays = 0
    for lo in range(0, len(numbers), RUN_FRAMES):
        run = numbers[lo : lo + RUN_FRAMES]
        times = [int(stamps[number]) * 1000 for number in run]
        for number, time_ns, drawn in zip(run, times, drawer.draw(run, times), strict=True):
            world = recording.frame(number)
            reference = list(frame_records(world, time_ns, topics))
            if drawn is not None:
                from_arrays += 1
                for ours, theirs in zip(drawn, reference, strict=True):
                    assert [getattr(ours, f) for f in FIELDS] == [
                        getattr(theirs, f) for f in FIELDS
                    ]
                    assert ours.data == theirs.data, (number, ours.topic)
            whole = [world.actors[actor_id] for actor_id in world.actors]
            dicts = list(mcap_dicts.frame_records(world, time_ns, topics, whole))
            assert [r.topic for r in reference] == [r.topic for r in dicts]
            for ours, theirs in zip(reference, dicts, strict=True):
                assert record_value(ours) == record_value(theirs), (number, ours.topic)
    return from_arrays


@pytest.mark.slow
@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_posed_actors_draw_the_same(path: Path) -> None:
    with CarlaRecording.open(path) as recording:
        step = max(1, len(recording) // 40)
        assert_same_messages(recording, list(range(0, len(recording), step)))
        # a whole run and into the next: the arrays carried across a run's boundary
        assert_same_messages(recording, list(range(min(len(recording), RUN_FRAMES + 16))))


@pytest.mark.slow
def test_a_busy_town_draws_the_same(tmp_path: Path) -> None:
    town = tmp_path / "town.log"
    town.write_bytes(
        generate("0.9.15", frames=90, vehicles=60, walkers=30, traffic_lights=20, sensors=3)
    )
    with CarlaRecording.open(town) as recording:
        numbers = list(range(len(recording)))
        assert assert_same_messages(recording, numbers) >= len(recording) // 2


def test_poses_that_are_not_finite_leave_their_actor_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An actor whose pose is NaN in a few frames (inside a run of the array path) is left
    out of those frames' /tf and scene, on both paths alike."""
    import numpy as np

    from nanorec.converters.carla.ids import Kind
    from nanorec.converters.carla.message import kind_key, records

    town = tmp_path / "town.log"
    town.write_bytes(generate("0.9.15", frames=40, vehicles=20, walkers=10, traffic_lights=6))
    with CarlaRecording.open(town) as recording:
        reader = recording.reader
        read = reader.read
        key = kind_key(Kind.POSITION)
        dtype = records({}, Kind.POSITION, recording.tables.engine).dtype
        hidden: dict[int, int] = {}

        def damaged(number: int, **options: object) -> dict[str, object]:
            message = read(number, **options)
            if not 20 <= number < 24 or key not in message["frame"]:
                return message
            poses = np.frombuffer(message["frame"][key], dtype).copy()
            poses["location"][1, 0] = np.nan
            hidden[number] = int(poses["id"][1])
            return dict(message, frame=dict(message["frame"], **{key: poses.tobytes()}))

        monkeypatch.setattr(reader, "read", damaged)
        numbers = list(range(len(recording)))
        assert assert_same_messages(recording, numbers) >= len(recording) // 2
        stamps = recording.reader.index.timestamp_us
        drawer = FrameDrawer(recording, {TOPICS["tf"]})
        times = [int(stamps[n]) * 1000 for n in numbers]
        checked = 0
        for number, drawn in zip(numbers, drawer.draw(numbers, times), strict=True):
            if number not in hidden or drawn is None:
                continue
            (tf,) = drawn
            children = {t["child_frame_id"] for t in record_value(tf)["transforms"]}
            assert f"actor/{hidden[number]}" not in children
            assert hidden[number] in recording.frame(number).actors  # alive, left out
            checked += 1
        assert checked


def test_the_json_reference_ships_with_the_tests_only() -> None:
    """Foxglove JSON built as dicts is what the tests compare the protobuf with: it lives in
    tests/converters/carla/reference/, not in the shipped package nor behind an option."""
    import importlib.util
    import inspect

    assert importlib.util.find_spec("nanorec.converters.carla.mcap_dicts") is None
    assert "dicts" not in inspect.signature(frame_records).parameters
