"""CARLA's MCAP messages are the same bytes on the export's fast path (actors built only as
far as drawing needs, `posed_actors`; `/tf` and `/carla/scene` encoded straight to bytes,
`mcap_json`) as on the reference path (whole actors, dicts, `json_bytes`), on every sample
and real file, and on a busy synthetic town."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("orjson")

from nanorec.converters.carla.generate import generate
from nanorec.converters.carla.mcap import TOPICS, frame_records
from nanorec.converters.carla.mcap_frames import FrameDrawer
from nanorec.converters.carla.recording import CarlaRecording
from tests.conftest import SAMPLES, carla_realdata

FILES = [*sorted(SAMPLES.glob("*.log")), *carla_realdata()]


def assert_same_messages(recording: CarlaRecording, step: int = 1) -> int:
    """Compares the frames 0, step, 2 step...; returns how many were drawn from arrays."""
    topics = set(TOPICS.values())
    stamps = recording.reader.index.timestamp_us
    drawer = FrameDrawer(recording, topics)
    from_arrays = 0
    for number in range(0, len(recording), step):
        time_ns = int(stamps[number]) * 1000
        drawn = drawer.records(number, time_ns)
        world = recording.frame(number)
        fast = [(r.topic, r.data) for r in frame_records(world, time_ns, topics)]
        if drawn is not None:
            from_arrays += 1
            fields = ("topic", "schema_name", "schema_data", "log_time_ns", "sequence", "data")
            reference = list(frame_records(world, time_ns, topics))
            for ours, theirs in zip(drawn, reference, strict=True):
                assert [getattr(ours, f) for f in fields] == [getattr(theirs, f) for f in fields]
        world = recording.frame(number)
        whole = [world.actors[actor_id] for actor_id in world.actors]
        reference = [
            (r.topic, r.data) for r in frame_records(world, time_ns, topics, whole, dicts=True)
        ]
        assert fast == reference, number
    return from_arrays


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_posed_actors_draw_the_same(path: Path) -> None:
    with CarlaRecording.open(path) as recording:
        assert_same_messages(recording, step=max(1, len(recording) // 200))


def test_a_busy_town_draws_the_same(tmp_path: Path) -> None:
    town = tmp_path / "town.log"
    town.write_bytes(
        generate("0.9.15", frames=40, vehicles=60, walkers=30, traffic_lights=20, sensors=3)
    )
    with CarlaRecording.open(town) as recording:
        assert assert_same_messages(recording) >= len(recording) // 2
