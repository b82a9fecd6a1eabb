"""CARLA draws itself for `nanorec view`: one box per actor of `World.actors` at any frame,
at `plot`'s footprint with y flipped up, traffic lights by state, the hero followed, recent
collisions marked; the overview's bounds and hero path."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from nanorec.contract import Viewable
from nanorec.converters.carla.ids import ActorType
from nanorec.converters.carla.plot_data import (
    CM_PER_M,
    actor_kinds,
    collisions,
    footprint,
    heroes,
    traffic_lights,
)
from nanorec.converters.carla.recording import CarlaRecording
from nanorec.converters.carla.view import KINDS, LIGHT_STATES, RECENT_S, CarlaView
from nanorec.errors import OutOfRangeError
from nanorec.outputs.layers import check_view
from tests.conftest import SAMPLES, carla_realdata

SAMPLE_FILES = sorted(SAMPLES.glob("carla-*.log"))
SAMPLE = SAMPLES / "carla-0.9.15-town03.log"
CRASH = SAMPLES / "carla-0.9.15-crash-town05.log"


@pytest.fixture(scope="module")
def rec() -> Iterator[CarlaRecording]:
    with CarlaRecording.open(SAMPLE) as opened:
        yield opened


def layer(scene: dict[str, object], name: str) -> dict[str, np.ndarray]:
    (found,) = [lay for lay in scene["layers"] if lay["name"] == name]  # type: ignore[attr-defined]
    return found  # type: ignore[no-any-return]


def frames_of(rec: CarlaRecording, count: int = 12) -> list[int]:
    picked = random.Random(37).sample(range(len(rec)), min(count, len(rec)))
    return sorted({0, len(rec) - 1, *picked})


def test_the_recording_is_viewable(rec: CarlaRecording) -> None:
    assert isinstance(rec, Viewable)
    check_view(rec.view_overview(), overview=True)
    for number in frames_of(rec, 4):
        check_view(rec.view_scene(number), overview=False)


@pytest.mark.parametrize("path", SAMPLE_FILES, ids=lambda p: p.name)
def test_one_box_per_actor_at_random_frames(path: Path) -> None:
    """The rule: every actor `World.actors` holds is a box, classed by its kind."""
    with CarlaRecording.open(path) as rec:
        for number in frames_of(rec):
            world = rec.frame(number)
            boxes = layer(rec.view_scene(number), "actors")
            assert len(boxes["x"]) == len(world.actors), (path.name, number)
            kinds = [boxes["classes"][c] for c in boxes["class"].tolist()]
            lights = sum(a.type == ActorType.TRAFFIC_LIGHT for a in world.actors.values())
            walkers = sum(a.type == ActorType.WALKER for a in world.actors.values())
            assert kinds.count("traffic_light") == lights
            assert kinds.count("walker") == walkers


def test_boxes_are_plots_footprints_with_y_up(rec: CarlaRecording) -> None:
    number = len(rec) // 2
    world = rec.frame(number)
    kinds = actor_kinds(rec)
    boxes = layer(rec.view_scene(number), "actors")
    assert boxes["classes"] == list(KINDS)
    for row, actor_id in enumerate(world.actors):
        actor = world.actors[actor_id]
        kind = kinds.get(actor_id, "other")
        corners = footprint(actor, kind if kind in ("vehicle", "bike", "walker") else "other")
        centre = corners.mean(axis=0)
        assert boxes["x"][row] == pytest.approx(centre[0], abs=1e-6)
        assert boxes["y"][row] == pytest.approx(-centre[1], abs=1e-6)  # CARLA's y points down
        assert boxes["length"][row] == pytest.approx(np.hypot(*(corners[1] - corners[0])), 1e-5)
        assert boxes["width"][row] == pytest.approx(np.hypot(*(corners[2] - corners[1])), 1e-5)
        assert boxes["yaw"][row] == pytest.approx(-actor.rotation.yaw, abs=1e-3)


def test_traffic_lights_by_state(rec: CarlaRecording) -> None:
    for number in frames_of(rec, 4):
        world = rec.frame(number)
        lights = layer(rec.view_scene(number), "traffic lights")
        drawn = traffic_lights(world.traffic_lights, world.actors, None)  # what plot draws
        assert len(lights["x"]) == len(drawn)
        assert lights["classes"] == list(LIGHT_STATES)
        states = sorted(
            LIGHT_STATES.index(light.state.name.lower()) if light.state is not None else 4
            for light_id, light in world.traffic_lights.items()
            if light_id in world.actors
        )
        assert sorted(lights["class"].tolist()) == states
        assert sorted(lights["x"].tolist()) == pytest.approx(sorted(x for (x, _), _ in drawn))
        assert sorted(lights["y"].tolist()) == pytest.approx(sorted(-y for (_, y), _ in drawn))


def test_the_hero_is_followed(rec: CarlaRecording) -> None:
    hero_ids = sorted(heroes(rec))
    assert hero_ids, "the sample spawns a hero"
    for number in frames_of(rec, 4):
        world = rec.frame(number)
        scene = rec.view_scene(number)
        alive = [h for h in hero_ids if h in world.actors]
        if not alive:
            assert "follow" not in scene
            continue
        where = world.actors[alive[0]].location
        assert scene["follow"] == pytest.approx([where.x / CM_PER_M, -where.y / CM_PER_M])


def test_the_overview_frames_every_actor_and_draws_the_hero_path(rec: CarlaRecording) -> None:
    overview = rec.view_overview()
    x0, y0, x1, y1 = overview["bounds"]
    for number in frames_of(rec, 6):
        world = rec.frame(number)
        for actor in world.actors.values():
            if actor.pose_index != actor.spawn_index or actor.type == ActorType.TRAFFIC_LIGHT:
                x, y = actor.location.x / CM_PER_M, -actor.location.y / CM_PER_M
                assert x0 - 1e-6 <= x <= x1 + 1e-6 and y0 - 1e-6 <= y <= y1 + 1e-6
    path = layer(overview, "hero path")
    (hero,) = sorted(heroes(rec))
    track = rec.trajectory(hero)
    assert len(path["x"]) == len(track.location)  # every frame read: the sample is short
    assert path["x"] == pytest.approx(track.location[:, 0] / CM_PER_M)
    assert path["y"] == pytest.approx(-track.location[:, 1] / CM_PER_M)


def test_recent_collisions_are_marked() -> None:
    with CarlaRecording.open(CRASH) as rec:
        hits = collisions(rec, range(len(rec)), set(actor_kinds(rec)))
        assert hits, "the crash sample collides"
        first = hits[0]
        marked = layer(rec.view_scene(first.frame), "collisions")
        assert len(marked["x"]) >= 1
        assert marked["x"][0] == pytest.approx(first.x)
        assert marked["y"][0] == pytest.approx(-first.y)
        assert marked["label"][0].startswith(f"collision {first.actor1}-")
        if first.frame:
            assert not len(layer(rec.view_scene(first.frame - 1), "collisions")["x"])
        times = rec.times
        later = int(np.searchsorted(times, times[first.frame] + RECENT_S + 0.5))
        if later < len(rec) and not any(
            times[later] - RECENT_S <= times[h.frame] for h in hits[1:]
        ):
            assert not len(layer(rec.view_scene(later), "collisions")["x"])


def test_frame_out_of_range_is_a_usage_error(rec: CarlaRecording) -> None:
    with pytest.raises(OutOfRangeError):
        rec.view_scene(len(rec))
    assert (
        rec.view_scene(-1)["layers"][0]["x"].shape
        == rec.view_scene(len(rec) - 1)["layers"][0]["x"].shape
    )


def test_the_overview_is_computed_once(rec: CarlaRecording) -> None:
    assert rec.view_overview() is rec.view_overview()
    assert isinstance(rec._view(), CarlaView)


@pytest.mark.realdata
@pytest.mark.parametrize("path", carla_realdata(), ids=lambda p: p.name)
def test_real_logs_one_box_per_actor(path: Path) -> None:
    with CarlaRecording.open(path) as rec:
        check_view(rec.view_overview(), overview=True)
        for number in frames_of(rec, 6):
            scene = rec.view_scene(number)
            check_view(scene, overview=False)
            assert len(layer(scene, "actors")["x"]) == len(rec.frame(number).actors)


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CarlaRecording]:
    """80 frames 0.05 s apart: an "ego" car 7 heading +y (CARLA's y: to the right), car 8,
    a spectator, a sensor on 7 never positioned, and 7 hitting 8 at frame 2."""
    from nanorec.converters.carla.writer import RecordingWriter

    path = tmp_path_factory.mktemp("carla-view") / "synthetic.log"
    ego = [(5, "role_name", "ego")]
    with RecordingWriter(path, "0.9.16", map_name="Town03") as writer:
        for k in range(80):
            with writer.frame(elapsed=0.05 * k):
                if k == 0:
                    writer.spawn(1, ActorType.OTHER, "spectator")
                    writer.spawn(7, ActorType.VEHICLE, "vehicle.tesla.model3", attributes=ego)
                    writer.spawn(8, ActorType.VEHICLE, "vehicle.toyota.prius")
                    writer.spawn(10, ActorType.SENSOR, "sensor.camera.rgb", location=(50, 0, 170))
                    writer.parent([10], [7])
                if k == 2:
                    writer.collision(1, 7, 8)
                writer.positions(
                    [7, 8],
                    [(1000.0, 250.0 + 10 * k, 0.0), (1000.0, 1000.0, 0.0)],
                    [(0.0, 90.0, 0.0), (0.0, 0.0, 0.0)],
                )
    with CarlaRecording.open(path) as opened:
        yield opened


def test_ego_is_followed_and_y_points_up(synthetic: CarlaRecording) -> None:
    scene = synthetic.view_scene(0)
    check_view(scene, overview=False)
    boxes = layer(scene, "actors")
    assert len(boxes["x"]) == 4  # spectator, 7, 8 and the sensor: World.actors
    row = list(synthetic.frame(0).actors).index(7)
    assert (boxes["x"][row], boxes["y"][row], boxes["yaw"][row]) == pytest.approx((10, -2.5, -90))
    assert boxes["length"][row] == pytest.approx(4.6)  # plot's default car: 230 cm half
    assert [boxes["classes"][c] for c in boxes["class"].tolist()].count("other") == 2
    assert scene["follow"] == pytest.approx([10.0, -2.5])
    assert synthetic.view_scene(10)["follow"] == pytest.approx([10.0, -3.5])
    path = layer(synthetic.view_overview(), "hero path")
    assert path["classes"] == ["hero 7"] and path["starts"].tolist() == [0]
    assert path["y"][-1] == pytest.approx(-(250 + 790) / CM_PER_M)


def test_collision_markers_last_recent_s(synthetic: CarlaRecording) -> None:
    counts = [len(layer(synthetic.view_scene(n), "collisions")["x"]) for n in range(80)]
    window = round(RECENT_S / 0.05)  # frames
    assert counts[:2] == [0, 0]
    assert set(counts[2 : 2 + window + 1]) == {1}
    assert set(counts[2 + window + 1 :]) == {0}
    marked = layer(synthetic.view_scene(5), "collisions")
    assert marked["label"] == ["collision 7-8 at 0.10 s"]
    assert marked["x"][0] == pytest.approx(10.0)  # midway between 7 and 8 at frame 2
    assert marked["y"][0] == pytest.approx(-(270 + 1000) / 2 / CM_PER_M)


def test_nothing_positioned_is_empty_layers(tmp_path: Path) -> None:
    from nanorec.converters.carla.writer import RecordingWriter

    path = tmp_path / "empty.log"
    with RecordingWriter(path, "0.9.16", map_name="Town03") as writer:
        for k in range(3):
            with writer.frame(elapsed=0.05 * k):
                pass
    with CarlaRecording.open(path) as rec:
        overview = rec.view_overview()
        check_view(overview, overview=True)
        assert not len(layer(overview, "hero path")["x"])
        for number in (0, 2):
            scene = rec.view_scene(number)
            check_view(scene, overview=False)
            assert all(not len(lay["x"]) for lay in scene["layers"])
            assert "follow" not in scene


def test_viewing_an_archive_imports_no_converter(tmp_path: Path) -> None:
    """Opening a CARLA archive and drawing its first frame imports what reads and draws it,
    not what converts (the archive writer, the format's detection: ~40 ms of `nanorec
    view`'s first paint); a process of its own, which imported nothing before."""
    import json
    import subprocess
    import sys

    from nanorec import registry

    archive = tmp_path / "town.nanover.zip"
    registry.get("carla").convert(SAMPLE_FILES[0], archive)
    probe = (
        "import json, sys\nfrom nanorec import registry\n"
        "recording = registry.open(sys.argv[1])\n"
        "recording.view_scene(0), recording.message(0), recording.frame(0).to_json()\n"
        "print(json.dumps(sorted(sys.modules)))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, str(archive)],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    modules = set(json.loads(done.stdout))
    assert "nanorec.converters.carla.recording" in modules
    converting = {"nanorec.converters.carla.convert", "nanorec.archive.writer"}
    assert not converting & modules, sorted(converting & modules)
