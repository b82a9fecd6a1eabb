"""Every real recording goes through play, cat and info --json as valid JSON: NaN and
infinities (CARLA writes them in bounding boxes of spectators and sensors) are null."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nanorec.cli import _register, app
from tests.conftest import carla_realdata, make_runner


def _strict(text: str) -> object:
    def refuse(constant: str) -> object:
        raise ValueError(f"{constant} is not JSON")

    return json.loads(text, parse_constant=refuse)


@pytest.mark.realdata
@pytest.mark.parametrize("path", carla_realdata(), ids=lambda p: p.name)
@pytest.mark.parametrize(
    "command",
    [
        ["info", "--json"],
        ["collisions", "--json"],
        ["blocked", "--json"],
        ["play", "--immediate", "--parts", "actors,traffic_lights,scene_lights,weather,events"],
        ["cat", "--messages", "0:60"],  # play above writes every frame's world, and more
        ["cat", "--type", "bounding_box"],
        ["cat", "--type", "event_add"],
    ],
    ids=" ".join,
)
@pytest.mark.slow
def test_valid_json_on_real_files(path: Path, command: list[str]) -> None:
    _register()
    result = make_runner().invoke(app, [command[0], str(path), *command[1:]])
    assert result.exit_code == 0, result.stderr
    if command[0] in ("play", "cat"):
        lines = result.stdout.splitlines()
        assert lines or "--type" in command  # a file may hold no record of a kind
        for line in lines:
            _strict(line)
    else:
        _strict(result.stdout)
