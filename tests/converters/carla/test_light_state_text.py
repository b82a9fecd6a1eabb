"""A traffic light's state prints by name (issue 34, item 17: the README's `print(light.state)`
printed `1` on Python 3.11, where an IntEnum prints as its number), and is still the number
everywhere a number is wanted."""

from __future__ import annotations

import json

import nanorec
from nanorec.converters.carla.ids import TrafficLightState
from tests.conftest import SAMPLES


def test_a_state_prints_by_name_and_stays_a_number() -> None:
    state = TrafficLightState.GREEN
    assert str(state) == "TrafficLightState.GREEN"
    assert state == 2 and int(state) == 2 and json.dumps(state) == "2"
    assert f"{state:d}" == "2"


def test_the_readme_light_prints_its_state() -> None:
    with nanorec.open(SAMPLES / "carla-0.9.16-town03.log") as rec:
        light = next(iter(rec.frame(120).traffic_lights.values()))
    assert str(light.state).startswith("TrafficLightState.")
