"""`nanorec.plugins` finds what `importlib.metadata` finds (issue 33 item 4): the same entry
points of every group, a folder added to `sys.path` later included, without importing it."""

from __future__ import annotations

import sys
from importlib.metadata import entry_points as standard
from pathlib import Path

import pytest

from nanorec import plugins

GROUPS = ["nanorec.converters", "nanorec.commands", "nanorec.verbs", "console_scripts"]


@pytest.mark.parametrize("group", GROUPS)
def test_same_entry_points_as_importlib_metadata(group: str) -> None:
    ours = sorted((point.name, point.value) for point in plugins.entry_points(group))
    theirs = sorted((point.name, point.value) for point in standard(group=group))
    assert ours == theirs
    assert ours or group == "console_scripts"


def test_the_fake_plugin_installed_by_the_session_is_found() -> None:
    """conftest puts a distribution's folder on `sys.path` after start: it is read too."""
    names = {point.name for point in plugins.entry_points("nanorec.converters")}
    assert {"carla", "rosbag", "ros2", "pbstream", "fake"} <= names


def test_a_folder_added_later_is_read_and_the_first_of_a_name_wins(tmp_path: Path) -> None:
    for folder, value in (("first", "a.b:C"), ("second", "x.y:Z")):
        info = tmp_path / folder / "Some_Thing-1.0.dist-info"
        info.mkdir(parents=True)
        (info / "entry_points.txt").write_text(
            f"# a comment\n[other]\nno = thing\n\n[nanorec.test-group]\nthing = {value}\n"
        )
    sys.path[:0] = [str(tmp_path / "first"), str(tmp_path / "second")]
    try:
        found = plugins.entry_points("nanorec.test-group")
    finally:
        del sys.path[:2]
    assert found == [plugins.EntryPoint("thing", "a.b:C", "nanorec.test-group")]
    assert plugins.entry_points("nanorec.test-group") == []


def test_load_imports_the_module_and_walks_the_attributes() -> None:
    point = plugins.EntryPoint("x", "nanorec.plugins:EntryPoint.load [extra]", "g")
    assert point.load() is plugins.EntryPoint.load
