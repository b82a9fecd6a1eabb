"""A full disk while writing a ROS 2 sqlite3 bag (issue #39 item 7): sqlite3's
`OperationalError` was a 47-line traceback; it is one line naming the output, exit 2, and
nothing is left of the output. The disk fills for real: sqlite's `max_page_count` makes
the database full (SQLITE_FULL, "database or disk is full") as a full device does."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from nanorec import registry
from nanorec.cli import _register, app
from tests.conftest import SAMPLES, make_runner

pytest.importorskip("yaml")
pytest.importorskip("zstandard")
pytest.importorskip("mcap")

_register()


@pytest.fixture
def full(monkeypatch: pytest.MonkeyPatch) -> None:
    connect = sqlite3.connect

    def small(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        db = connect(*args, **kwargs)
        db.execute("PRAGMA max_page_count = 4")
        return db

    monkeypatch.setattr(sqlite3, "connect", small)


@pytest.mark.parametrize(
    ("source", "args"),
    [
        ("ros2-robot.db3", ["--start", "1"]),  # a cut: written anew
        ("ros2-robot.db3", ["--start", "1", "--folder"]),
        ("rosbag-robot-bz2.bag", ["--format", "ros2"]),  # through the bridge
    ],
    ids=["cut", "cut-folder", "from-ros1"],
)
def test_a_full_disk_is_one_line(
    source: str, args: list[str], tmp_path: Path, full: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    archive = tmp_path / "a.nanover.zip"
    with monkeypatch.context() as unpatched:
        unpatched.setattr(sqlite3, "connect", sqlite3.connect)
        registry.for_native(SAMPLES / source).convert(SAMPLES / source, archive)
    out = tmp_path / ("bag" if "--folder" in args else "b.db3")
    plain = [a for a in args if a != "--folder"]
    result = make_runner().invoke(app, ["export", str(archive), "-o", str(out), *plain])
    err = result.stderr
    assert result.exit_code == 2 and err.count("\n") == 1, result.output + err
    assert err.startswith(f"nanorec: {out}: sqlite3 could not write the bag: database or disk")
    assert "Traceback" not in err and sorted(p.name for p in tmp_path.iterdir()) == [archive.name]
