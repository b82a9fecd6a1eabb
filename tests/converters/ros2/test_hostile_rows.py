"""Hostile values in a `.db3`'s rows (issue #34, items 7 and 8): a receive time a ROS1 bag
cannot hold ends `export --format ros1` with one line, and rows with a NULL where rosbag2
declares NOT NULL are reported (how many, which), exit 1, never dropped in silence."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from converters.ros.ros2.generate import write_db3
from nanorec.archive.reader import ArchiveReader
from nanorec.cli import _register, app
from tests.conftest import make_runner

pytest.importorskip("yaml")
pytest.importorskip("zstandard")
pytest.importorskip("mcap")

_register()


def _run(*args: object) -> tuple[int, str, str]:
    result = make_runner().invoke(app, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


def _bag(tmp_path: Path) -> tuple[Path, int]:
    path = tmp_path / "bag.db3"
    return path, write_db3(path, 2.0)


@pytest.mark.parametrize("stamp", [1 << 32, -1], ids=["2^32 s", "before 1970"])
def test_a_time_ros1_cannot_hold_is_one_line(stamp: int, tmp_path: Path) -> None:
    path, _ = _bag(tmp_path)
    with sqlite3.connect(path) as db:
        db.execute("UPDATE messages SET timestamp = ? WHERE id = 3", (stamp * 1_000_000_000,))
    db.close()
    archive = tmp_path / "a.nanover.zip"
    assert _run("convert", path, "-o", archive)[0] == 0
    code, out, err = _run("export", archive, "--format", "ros1", "-o", tmp_path / "b.bag")
    assert code == 2 and "Traceback" not in out + err, out + err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("nanorec: ") and "ROS1" in lines[0]
    assert not (tmp_path / "b.bag").exists()


def _with_nulls(path: Path) -> None:
    """Rows 2, 5 and 7 get a NULL timestamp, data and topic (the NOT NULLs taken off the
    table's declaration, as a hostile writer would)."""
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA writable_schema = ON")
        db.execute(
            "UPDATE sqlite_master SET sql = replace(sql, 'NOT NULL', '') WHERE name = 'messages'"
        )
    db.close()
    with sqlite3.connect(path) as db:
        db.execute("UPDATE messages SET timestamp = NULL WHERE id = 2")
        db.execute("UPDATE messages SET data = NULL WHERE id = 5")
        db.execute("UPDATE messages SET topic_id = NULL WHERE id = 7")
    db.close()


def test_null_rows_are_reported(tmp_path: Path) -> None:
    path, count = _bag(tmp_path)
    _with_nulls(path)
    archive = tmp_path / "a.nanover.zip"
    code, out, err = _run("convert", path, "-o", archive)
    assert code == 1, out + err
    assert "3 rows" in out and "NULL" in out and "2, 5, 7" in out, out
    with ArchiveReader(archive) as reader:
        assert len(reader) == count - 3
