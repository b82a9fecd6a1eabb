"""`nanorec export` of a plain archive (NanoVer's own recording, no native file behind it):
the report says the output is a re-packed archive, not the original bytes, and asking for a
ROS bag says in one grammatical line which recordings can become one."""

from __future__ import annotations

from pathlib import Path

import pytest

from nanorec.cli import _register, app
from tests.conftest import REALDATA, make_runner
from tests.container.helpers import sample_messages, write_archive

_register()
runner = make_runner()
NANOVER = sorted((REALDATA / "nanover").glob("*.nanover.zip"))


def _plain(tmp_path: Path) -> Path:
    return write_archive(tmp_path / "plain.nanover.zip", sample_messages(5))


def test_export_of_a_plain_archive_says_it_is_repacked(tmp_path: Path) -> None:
    out = tmp_path / "again.nanover.zip"
    result = runner.invoke(app, ["export", str(_plain(tmp_path)), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert len(result.stdout.splitlines()) == 1, result.stdout
    assert "not the original" in result.stdout
    assert out.is_file()


@pytest.mark.parametrize("to", ["ros1", "ros2"])
def test_export_of_a_plain_archive_to_ros_names_what_can(tmp_path: Path, to: str) -> None:
    out = tmp_path / "out"
    result = runner.invoke(app, ["export", str(_plain(tmp_path)), "-o", str(out), "--format", to])
    assert result.exit_code == 2, result.output
    line = result.stderr.strip()
    assert len(line.splitlines()) == 1, result.stderr
    assert " a archive" not in line
    for source in ("ROS", "CARLA", "pbstream"):
        assert source in line
    assert not out.exists()


@pytest.mark.realdata
@pytest.mark.skipif(not NANOVER, reason="../shared/realdata/nanover absent")
@pytest.mark.parametrize("source", NANOVER, ids=lambda p: p.name)
def test_export_of_a_real_nanover_recording(source: Path, tmp_path: Path) -> None:
    out = tmp_path / "again.nanover.zip"
    result = runner.invoke(app, ["export", str(source), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "not the original" in result.stdout
    bag = runner.invoke(app, ["export", str(source), "-o", str(tmp_path / "b"), "-F", "ros2"])
    assert bag.exit_code == 2
    assert " a archive" not in bag.stderr and "ROS" in bag.stderr
