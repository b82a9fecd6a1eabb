"""`MetricsLog` on a small recording written by our `RecordingWriter`, and on broken input.

Each case where scenario_runner's `MetricsLog` is wrong (metrics.py's docstring) is shown on
their own code too: their parser, vendored under reference/scenario_runner, is run on the
`show_recorder_file_info` text of the same file.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nanorec.converters.carla import metrics_types
from nanorec.converters.carla.convert import convert
from nanorec.converters.carla.ids import ActorType
from nanorec.converters.carla.metrics import MetricsLog
from nanorec.converters.carla.metrics_types import Location, Rotation, Transform, Vector3D
from nanorec.converters.carla.query import file_info
from nanorec.converters.carla.writer import RecordingWriter
from nanorec.errors import NanorecError, OutOfRangeError

from .metrics_reference import load_reference, plain, their_text

HERO, ADVERSARY, WALKER, LIGHT = 10, 11, 20, 30
TIMES = (0.0, 0.05, 0.1, 0.15)


def write_log(path: Path, *, collide: bool = True) -> Path:
    """Four frames: a hero, an adversary that hits it in frame 2 (unless not `collide`) and
    is gone in frame 3."""
    with RecordingWriter(path, "0.9.16", map_name="Town03", additional_data=True) as out:
        for number, elapsed in enumerate(TIMES, start=1):
            with out.frame(elapsed=elapsed):
                if number == 1:
                    out.spawn(1, ActorType.OTHER, "spectator")
                    out.spawn(
                        HERO,
                        ActorType.VEHICLE,
                        "vehicle.tesla.model3",
                        location=(100.0, 200.0, 300.0),
                        attributes=[(5, "role_name", "hero")],
                    )
                    out.spawn(
                        ADVERSARY,
                        ActorType.VEHICLE,
                        "vehicle.audi.tt",
                        attributes=[(5, "role_name", "scenario")],
                    )
                    out.spawn(WALKER, ActorType.WALKER, "walker.pedestrian.0001")
                    out.spawn(LIGHT, ActorType.TRAFFIC_LIGHT, "traffic.traffic_light")
                alive = [HERO, WALKER] if number >= 3 else [HERO, ADVERSARY, WALKER]
                if number == 3:
                    out.destroy(ADVERSARY)
                if number == 2 and collide:
                    out.collision(5, ADVERSARY, HERO, actor2_hero=True)
                out.positions(
                    alive,
                    [(100.0 * number, 250.0, 30.0)] * len(alive),
                    [(0.0, 90.0, 0.0)] * len(alive),
                )
                out.vehicle_animations([HERO], steering=0.25, throttle=0.75, gear=number)
                out.walker_speeds([WALKER], [1.5])
                out.vehicle_lights([HERO], [0x1 | 0x8])
                out.traffic_light_states([LIGHT], [2], [1.25 * number])
                if number == 2:
                    out.scene_lights(
                        [7], intensities=[50.0], colors=[(1.0, 0.5, 0.0, 1.0)], on=[False]
                    )
                speed = min(number, 2)
                out.kinematics(
                    alive, [(speed, 0.0, 0.0)] * len(alive), [(0.0, 0.0, 3.0)] * len(alive)
                )
    return path


@pytest.fixture(scope="module")
def log_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_log(tmp_path_factory.mktemp("metrics") / "run.log")


@pytest.fixture(scope="module")
def log(log_path: Path) -> Iterator[MetricsLog]:
    with MetricsLog(log_path, api=metrics_types) as opened:
        yield opened


@pytest.fixture
def theirs(log_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Their MetricsLog class (stub carla), to show where it differs."""
    their_class, _ = load_reference(monkeypatch, prefer_real=False)
    return their_class


def test_frames_are_one_based_and_checked(log: MetricsLog) -> None:
    assert log.get_total_frame_count() == 4
    assert [log.get_elapsed_time(f) for f in (1, 2, 4)] == [0.0, 0.05, 0.15]
    assert log.get_delta_time(1) == 0
    assert log.get_delta_time(2) == 0.05
    for frame in (0, 5, -1):
        with pytest.raises(OutOfRangeError):
            log.get_actor_transform(HERO, frame)
    assert [log.get_platform_time(f) for f in (1, 2)] == [0.0, 0.05]  # the writer's


def test_actor_table(log: MetricsLog) -> None:
    assert log.get_ego_vehicle_id() == HERO
    assert log.get_actor_ids_with_role_name("scenario") == [ADVERSARY]
    assert log.get_actor_ids_with_type_id("vehicle.*") == [HERO, ADVERSARY]
    assert log.get_actor_ids_with_type_id("walker.*") == [WALKER]
    assert log.get_actor_alive_frames(HERO) == (1, 4)
    assert log.get_actor_alive_frames(ADVERSARY) == (1, 2)
    assert log.get_actor_alive_frames(999) == (None, None)
    attributes = log.get_actor_attributes(HERO)
    assert attributes == {
        "type_id": "vehicle.tesla.model3",
        "location": Location(1.0, 2.0, 3.0),
        "created": 1,
        "role_name": "hero",
    }
    assert log.get_actor_attributes(ADVERSARY)["destroyed"] == 3  # type: ignore[index]
    assert log.get_actor_bounding_box(HERO) is None
    assert log.get_actor_attributes(999) is None


def test_states_in_metres_degrees_and_carla_classes(log: MetricsLog) -> None:
    transform = log.get_actor_transform(HERO, 2)
    assert transform == Transform(Location(2.0, 2.5, 0.3), Rotation(pitch=0.0, yaw=90.0, roll=0.0))
    assert log.get_actor_transform(ADVERSARY, 3) is None  # destroyed
    assert log.get_actor_velocity(HERO, 1) == Vector3D(1.0, 0.0, 0.0)
    assert log.get_actor_angular_velocity(HERO, 1) == Vector3D(0.0, 0.0, 3.0)
    control = log.get_vehicle_control(HERO, 3)
    assert (control.steer, control.throttle, control.gear, control.reverse) == (
        0.25,
        0.75,
        3,
        False,
    )
    assert log.get_walker_speed(WALKER, 2) == 1.5
    lights = metrics_types.VehicleLightState
    assert log.get_vehicle_lights(HERO, 1) == [lights.Position, lights.Brake]
    assert log.is_vehicle_light_active(lights.Brake, HERO, 1)
    assert not log.is_vehicle_light_active(lights.Fog, HERO, 1)
    assert not log.is_vehicle_light_active(lights.Fog, WALKER, 1)  # theirs: TypeError
    light = log.get_scene_light_state(7, 3)  # the latest change at or before frame 3
    assert (light.intensity, light.active, light.color) == (
        50,
        False,
        metrics_types.Color(255, 127, 0),
    )
    assert log.get_scene_light_state(7, 1) is None
    assert log.get_traffic_light_state(LIGHT, 2) == metrics_types.TrafficLightState.Green
    assert log.get_traffic_light_elapsed_time(LIGHT, 2) == 2.5
    assert log.is_traffic_light_frozen(LIGHT, 2) is False
    assert log.get_actor_transforms_at_frame(3) == {
        HERO: log.get_actor_transform(HERO, 3),
        WALKER: log.get_actor_transform(WALKER, 3),
    }
    assert log.get_actor_transforms_at_frame(3, [ADVERSARY, HERO]) == {
        HERO: log.get_actor_transform(HERO, 3)
    }
    assert log.get_all_actor_velocities(ADVERSARY, 1, 3) == [
        Vector3D(1.0, 0.0, 0.0),
        Vector3D(2.0, 0.0, 0.0),
        None,
    ]


def test_acceleration_is_a_finite_difference_theirs_is_zero(
    log: MetricsLog, log_path: Path, theirs: Any
) -> None:
    got = log.get_actor_acceleration(HERO, 2)
    assert math.isclose(got.x, (2.0 - 1.0) / 0.05) and (got.y, got.z) == (0.0, 0.0)
    assert log.get_actor_acceleration(HERO, 1) == Vector3D(0.0, 0.0, 0.0)
    assert log.get_actor_acceleration(HERO, 3) == Vector3D(0.0, 0.0, 0.0)
    assert log.get_actor_acceleration(LIGHT, 2) is None
    text = their_text(file_info(log_path, show_all=True))
    lines = [line for line in text.split("\n") if not line.startswith(" Collision")]
    text = "\n".join(lines)  # theirs fails on the collision: see the next test
    their_log = theirs(text)
    assert plain(their_log.get_actor_acceleration(HERO, 2)) == {"x": 0.0, "y": 0.0, "z": 0.0}


def test_collisions_both_roles_theirs_fails_on_a_hero_actor_2(
    log: MetricsLog, log_path: Path, theirs: Any
) -> None:
    assert log.get_actor_collisions(ADVERSARY) == {2: [HERO]}
    assert log.get_actor_collisions(HERO) == {2: [ADVERSARY]}
    assert log.get_actor_collisions(WALKER) == {}
    with pytest.raises(ValueError):  # `... with 10 (hero) `: int("") of the last word
        theirs(file_info(log_path, show_all=True))


def test_archive_and_native_agree(log: MetricsLog, log_path: Path, tmp_path: Path) -> None:
    archive = tmp_path / "run.nanover.zip"
    convert(log_path, archive)
    with MetricsLog(archive, api=metrics_types) as from_archive:
        for frame in range(1, 5):
            assert from_archive.get_actor_transforms_at_frame(
                frame
            ) == log.get_actor_transforms_at_frame(frame)


def test_not_a_recording(tmp_path: Path) -> None:
    bad = tmp_path / "bad.log"
    bad.write_bytes(b"\x01\x00\x0e\x00CARLA_RECORDER" + b"\xff" * 7)
    with pytest.raises(NanorecError):
        MetricsLog(bad)
    with pytest.raises(FileNotFoundError):
        MetricsLog(tmp_path / "missing.log")


def test_stand_ins() -> None:
    a, b = Location(1.0, 2.0, 3.0), Location(0.5, 0.0, 1.0)
    assert a - b == Location(0.5, 2.0, 2.0)
    assert 2 * Vector3D(1.0, 0.0, 0.0) == Vector3D(2.0, 0.0, 0.0)
    assert Vector3D(3.0, 0.0, 4.0).length() == 5.0
    forward = Transform(rotation=Rotation(yaw=90.0)).get_forward_vector()
    assert math.isclose(forward.y, 1.0) and abs(forward.x) < 1e-12
    right = Rotation(yaw=90.0).get_right_vector()
    assert math.isclose(right.x, -1.0) and abs(right.y) < 1e-12
    assert metrics_types.carla_api(prefer_real=False) is metrics_types
