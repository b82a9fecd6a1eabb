"""Rotations: pitch, yaw, roll by name everywhere, and a real trajectory written back through
`RecordingWriter` comes out the same (the bug: yaw moved by 180° through the writer)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import nanorec
from nanorec.cli import _register, app
from nanorec.converters.carla.recording import CarlaRecording
from nanorec.converters.carla.writer import RecordingWriter
from tests.conftest import SAMPLES, carla_realdata, make_runner


def _busiest(rec: CarlaRecording) -> int:
    ids, counts = np.unique([row["id"] for row in rec.rows("position")], return_counts=True)
    return int(ids[np.argmax(counts)])


@pytest.mark.parametrize(
    "path",
    [SAMPLES / "carla-0.9.16-town03.log", *carla_realdata()[:2]],
    ids=lambda p: p.name,
)
def test_a_real_trajectory_round_trips_through_the_writer(path: Path, tmp_path: Path) -> None:
    with nanorec.open(path) as rec:
        assert isinstance(rec, CarlaRecording)
        actor = _busiest(rec)
        track = rec.trajectory(actor)
        family = rec.family.name
    assert track.rotation.dtype.names == ("pitch", "yaw", "roll")
    assert "\n" not in repr(track) and "poses" in repr(track)
    out = tmp_path / "mine.log"
    with RecordingWriter(out, family, map_name="Town03") as writer:
        for k in range(len(track.time)):
            with writer.frame(elapsed=float(track.time[k])):
                if k == 0:
                    writer.spawn(actor, 1, "vehicle.test")
                writer.positions([actor], track.location[k : k + 1], track.rotation[k : k + 1])
    with nanorec.open(out) as again:
        back = again.trajectory(actor)
    assert np.array_equal(back.location, track.location)
    assert np.array_equal(back.rotation, track.rotation)  # every field, yaw included


def test_json_rotations_are_named() -> None:
    _register()
    runner = make_runner()
    sample = str(SAMPLES / "carla-0.9.16-town03.log")
    info = json.loads(runner.invoke(app, ["info", sample, "--json"]).stdout)
    assert set(info["actors"][0]["rotation"]) == {"pitch", "yaw", "roll"}
    line = runner.invoke(app, ["play", sample, "--immediate", "--end", "0"]).stdout.splitlines()[0]
    actor = json.loads(line)["actors"][0]
    assert set(actor["rotation"]) == {"pitch", "yaw", "roll"}


def test_traffic_lights_are_built_on_access() -> None:
    with nanorec.open(SAMPLES / "carla-0.9.16-town03.log") as rec:
        world = rec.frame(10)
        lights = world.traffic_lights
        assert not getattr(lights, "_built", None)  # nothing built by the seek itself
        first = next(iter(lights))
        assert lights[first].state is not None and len(lights) >= 1
