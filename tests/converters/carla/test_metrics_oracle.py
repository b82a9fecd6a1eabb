"""Oracle: scenario_runner's `MetricsLog` on our info text against ours, on real CARLA logs.

Their `MetricsParser` reads the text of `show_recorder_file_info(log, True)`; ours is
`nanorec carla info --show-all`'s (the query package, byte for byte CARLA's), without the
sections their parser predates (`their_text`: it stops reading a frame at the first
section it does not know, so on 0.9.15+ text it would see no states at all). Every
method is compared on every frame and actor, floats within the text's 6 digits. Where
theirs is documented wrong (`metrics.py`'s docstring) the test checks the difference
itself: collisions, accelerations, and the 0-based frame of the three time getters.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from nanorec.converters.carla.meta import read_meta
from nanorec.converters.carla.metrics import MetricsLog
from nanorec.converters.carla.query import file_info
from tests.conftest import SAMPLES, carla_realdata

from .metrics_reference import close, load_reference, plain, their_text

pytestmark = [pytest.mark.realdata, pytest.mark.slow]

# the real logs, then our generator's samples of the releases no real file covers yet
LOGS = [p for p in carla_realdata() if p.suffix in (".log", ".rec")]
LOGS += sorted(SAMPLES.glob("carla-*.log"))


def _logs() -> list[Any]:
    return [pytest.param(p, id=p.name) for p in LOGS] or [
        pytest.param(None, marks=pytest.mark.skip(reason="../shared/realdata/carla is absent"))
    ]


def _cut(ours: MetricsLog) -> int:
    """1 for a crashed recording: its incomplete last frame is the archive's tail, not a
    frame (CARLA's text prints it, so theirs counts it)."""
    return 1 if read_meta(ours.recording.reader)["tail"] else 0


@pytest.fixture(scope="module")
def opened() -> Iterator[Any]:
    """(path, ours, theirs, carla) per log, made once for the module's tests."""
    found: dict[Path, Any] = {}
    with pytest.MonkeyPatch.context() as monkeypatch, ExitStack() as stack:
        their_class, carla = load_reference(monkeypatch)

        def make(path: Path) -> Any:
            if path not in found:
                theirs = their_class(their_text(file_info(path, show_all=True)))
                ours = stack.enter_context(MetricsLog(path, api=carla))
                found[path] = (path, ours, theirs, carla)
            return found[path]

        yield make


@pytest.fixture
def pair(request: pytest.FixtureRequest, opened: Any) -> Any:
    return opened(request.param)


@pytest.mark.parametrize("pair", _logs(), indirect=True)
def test_every_frame_and_actor(pair: Any) -> None:
    _, ours, theirs, _ = pair
    count = ours.get_total_frame_count()
    assert count + _cut(ours) == theirs.get_total_frame_count() == len(theirs._frames)
    for frame in range(1, count + 1):
        their_actors = theirs._frames[frame - 1]["actors"]
        for actor_id, state in their_actors.items():
            where = f"frame {frame} actor {actor_id}"
            if "transform" in state:
                close(
                    plain(ours.get_actor_transform(actor_id, frame)),
                    plain(theirs.get_actor_transform(actor_id, frame)),
                    where=where,
                )
            for name in ("velocity", "angular_velocity"):
                getter = f"get_actor_{name}"
                close(
                    plain(getattr(ours, getter)(actor_id, frame)),
                    plain(getattr(theirs, getter)(actor_id, frame)),
                    where=f"{where} {name}",
                )
            close(
                plain(ours.get_vehicle_control(actor_id, frame)),
                plain(theirs.get_vehicle_control(actor_id, frame)),
                where=f"{where} control",
            )
            speed = theirs.get_walker_speed(actor_id, frame)  # theirs: the text
            close(
                plain(ours.get_walker_speed(actor_id, frame)),
                None if speed is None else float(speed),
                where=f"{where} speed",
            )
            close(
                plain(ours.get_vehicle_lights(actor_id, frame)),
                plain(theirs.get_vehicle_lights(actor_id, frame)),
                where=f"{where} lights",
            )
            for getter in (
                "get_traffic_light_state",
                "is_traffic_light_frozen",
                "get_traffic_light_elapsed_time",
            ):
                close(
                    plain(getattr(ours, getter)(actor_id, frame)),
                    plain(getattr(theirs, getter)(actor_id, frame)),
                    where=f"{where} {getter}",
                )
        # every actor ours has a state for is one of theirs (no extra, no missing)
        ids = set(ours._frame_ids(frame))
        assert ids == set(their_actors), frame


@pytest.mark.parametrize("pair", _logs(), indirect=True)
def test_frame_times(pair: Any) -> None:
    """Ours take 1-based frames; theirs index from 0 (their f is our f + 1)."""
    _, ours, theirs, _ = pair
    count = ours.get_total_frame_count()
    for frame in range(1, count + 1):
        elapsed = ours.get_elapsed_time(frame)
        close(elapsed, theirs.get_elapsed_time(frame - 1), where=f"elapsed {frame}")
        # their delta is the difference of two 6-digit texts
        allowed = 1e-5 * max(abs(elapsed), 1e-3) * 2 + 1e-6
        assert math.isclose(
            ours.get_delta_time(frame), theirs.get_delta_time(frame - 1), abs_tol=allowed
        ), frame
        close(
            plain(ours.get_platform_time(frame)),
            plain(theirs.get_platform_time(frame - 1)),
            rel=1e-5,
            where=f"platform {frame}",
        )
    with pytest.raises(IndexError):
        ours.get_elapsed_time(0)
    with pytest.raises(IndexError):
        ours.get_elapsed_time(count + 1)


@pytest.mark.parametrize("pair", _logs(), indirect=True)
def test_actors(pair: Any) -> None:
    _, ours, theirs, _ = pair
    roles = {a.get("role_name") for a in theirs._actors.values()} - {None}
    for role in [*sorted(roles), "no such role"]:
        assert ours.get_actor_ids_with_role_name(role) == theirs.get_actor_ids_with_role_name(role)
    for pattern in ("*", "vehicle.*", "walker.*", "traffic.*", "sensor.*", "*tesla*"):
        assert ours.get_actor_ids_with_type_id(pattern) == theirs.get_actor_ids_with_type_id(
            pattern
        )
    if "hero" in roles:
        assert ours.get_ego_vehicle_id() == theirs.get_ego_vehicle_id()
    for actor_id in [*theirs._actors, 10**9]:
        where = f"actor {actor_id}"
        close(
            plain(ours.get_actor_attributes(actor_id)),
            plain(theirs.get_actor_attributes(actor_id)),
            where=where,
        )
        close(
            plain(ours.get_actor_bounding_box(actor_id)),
            plain(theirs.get_actor_bounding_box(actor_id)),
            where=f"{where} box",
        )
        close(
            plain(ours.get_traffic_light_trigger_volume(actor_id)),
            plain(theirs.get_traffic_light_trigger_volume(actor_id)),
            where=f"{where} volume",
        )
        first, last = theirs.get_actor_alive_frames(actor_id)
        if last is not None and last > ours.get_total_frame_count():
            last -= _cut(ours)  # alive to the end: the end is one frame earlier
        assert ours.get_actor_alive_frames(actor_id) == (first, last)


@pytest.mark.parametrize("pair", _logs(), indirect=True)
def test_events_at_sampled_frames(pair: Any) -> None:
    """Physics control, traffic-light times and scene lights: the latest at or before."""
    _, ours, theirs, carla = pair
    count = ours.get_total_frame_count()
    frames = sorted({1, 2, count, *range(1, count + 1, max(1, count // 40))})
    vehicles = ours.get_actor_ids_with_type_id("vehicle.*")
    lights = ours.get_actor_ids_with_type_id("traffic.traffic_light*")
    scene = {i for f in theirs._frames for i in f["events"]["scene_lights"]}
    states = (carla.TrafficLightState.Green, carla.TrafficLightState.Yellow)
    for frame in frames:
        for vehicle in vehicles:
            close(
                plain(ours.get_vehicle_physics_control(vehicle, frame)),
                plain(theirs.get_vehicle_physics_control(vehicle, frame)),
                where=f"physics {vehicle} at {frame}",
            )
        for light in lights:
            for state in (*states, carla.TrafficLightState.Red):
                close(
                    plain(ours.get_traffic_light_state_time(light, state, frame)),
                    plain(theirs.get_traffic_light_state_time(light, state, frame)),
                    where=f"light {light} {state} at {frame}",
                )
        for light_id in scene:
            mine = plain(ours.get_scene_light_state(light_id, frame))
            their = plain(theirs.get_scene_light_state(light_id, frame))
            if mine is not None and their is not None:
                their["active"] = mine["active"]  # theirs: bool("False") is True
                for channel in "rgb":  # int(float(6-digit text) * 255)
                    assert abs(mine["color"][channel] - their["color"][channel]) <= 1
                their["color"] = mine["color"]
            close(mine, their, where=f"scene light {light_id} at {frame}")


@pytest.mark.parametrize("pair", _logs(), indirect=True)
def test_collisions_and_accelerations_where_theirs_is_wrong(pair: Any) -> None:
    _, ours, theirs, _ = pair
    for frame_index, frame in enumerate(theirs._frames):
        for actor_id, others in frame["events"]["collisions"].items():
            mine = ours.get_actor_collisions(actor_id)
            # theirs: 0-based key, actor 1 only; ours: 1-based frame, both roles
            assert set(others) <= set(mine[frame_index + 1]), (actor_id, frame_index)
            for other in others:
                assert actor_id in ours.get_actor_collisions(other)[frame_index + 1]
    count = ours.get_total_frame_count()
    for frame in range(2, count + 1):
        for actor_id, state in theirs._frames[frame - 1]["actors"].items():
            if "acceleration" not in state:
                continue
            assert plain(state["acceleration"]) == {"x": 0.0, "y": 0.0, "z": 0.0}  # always
            now = ours.get_actor_velocity(actor_id, frame)
            before = ours.get_actor_velocity(actor_id, frame - 1)
            delta = ours.get_elapsed_time(frame) - ours.get_elapsed_time(frame - 1)
            got = ours.get_actor_acceleration(actor_id, frame)
            if before is None or delta == 0:
                assert (got.x, got.y, got.z) == (0.0, 0.0, 0.0)
            else:
                for axis in "xyz":
                    want = (getattr(now, axis) - getattr(before, axis)) / delta
                    assert math.isclose(getattr(got, axis), want, rel_tol=1e-5, abs_tol=1e-3)
