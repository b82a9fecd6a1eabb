"""The `Files:` line of `ros2 bag info` for one storage file, per layout, as rosbag2 prints it.

The storage plugins keep the uri they are opened with (`relative_path_`), the path as typed:
MCAP always, sqlite3 in humble, and in jazzy/rolling when the file stores no metadata row
(else that row's `relative_file_paths`). A bag folder prints its metadata.yaml's names; an
archive its file's name (what `ros2 bag info NAME` prints beside the bag: the archive keeps
no path typed at convert time, see `facts.py`). Each case is an exact line.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from nanorec.cli import _register, app
from tests.conftest import REALDATA, SAMPLES, make_runner

pytest.importorskip("yaml")
pytest.importorskip("mcap")

_register()
LAYOUTS = ("humble", "jazzy", "rolling")
#: rosbag2's label and padding: 19 columns.
LABEL = "Files:             "


def _files_line(*args: object) -> str:
    result = make_runner().invoke(app, ["info", *(str(a) for a in args), "--tz", "UTC"])
    assert result.exit_code == 0, result.stderr
    lines = [line for line in result.stdout.splitlines() if line.startswith("Files:")]
    assert len(lines) == 1, result.stdout
    return lines[0]


def _spellings(file: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """`file` typed relative to the working directory, with `./`, and absolute."""
    monkeypatch.chdir(file.parent)
    return [file.name, f"./{file.name}", str(file.resolve())]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("sample", ["ros2-robot.db3", "ros2-robot.mcap"])
def test_a_storage_file_prints_the_path_as_typed(
    sample: str, layout: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """MCAP in every layout; sqlite3 without a stored metadata row (our sample) too."""
    file = tmp_path / "sub" / sample
    file.parent.mkdir()
    shutil.copy(SAMPLES / sample, file)
    for typed in _spellings(file, monkeypatch):
        assert _files_line(typed, "--distro", layout) == LABEL + typed
    monkeypatch.chdir(tmp_path)
    typed = f"sub/./{sample}"
    assert _files_line(typed, "--distro", layout) == LABEL + typed


@pytest.mark.realdata
@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_sqlite_file_with_stored_metadata(
    layout: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """rosbag2_tests' cdr_test_0.db3 stores two metadata rows naming `cdr_test_0.db3`:
    jazzy and rolling print that name, humble (no such table read) the path as typed."""
    real = REALDATA / "ros2" / "rosbag2_tests_sqlite3_cdr_test" / "cdr_test_0.db3"
    if not real.is_file():
        pytest.skip(f"{real} is not present")
    file = tmp_path / "renamed.db3"  # the stored name, not the file's, tells them apart
    shutil.copy(real, file)
    for typed in _spellings(file, monkeypatch):
        expected = typed if layout == "humble" else "cdr_test_0.db3"
        assert _files_line(typed, "--distro", layout) == LABEL + expected


@pytest.mark.realdata
@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_sqlite_file_without_stored_metadata(
    layout: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = REALDATA / "ros2" / "rosbag2_py_sqlite3_talker" / "talker.db3"  # 0 metadata rows
    if not real.is_file():
        pytest.skip(f"{real} is not present")
    for typed in _spellings(real, monkeypatch):
        assert _files_line(typed, "--distro", layout) == LABEL + typed


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("sample", ["ros2-robot.db3", "ros2-robot.mcap"])
def test_an_archive_prints_the_file_name(
    sample: str, layout: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    archive = tmp_path / "a.nanover.zip"
    monkeypatch.chdir(SAMPLES)
    result = make_runner().invoke(app, ["convert", f"./{sample}", "-o", str(archive)])
    assert result.exit_code == 0, result.stderr
    for typed in _spellings(archive, monkeypatch):
        assert _files_line(typed, "--distro", layout) == LABEL + sample


@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_folder_prints_its_metadata_names(
    layout: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "bag"
    shutil.copytree(SAMPLES / "ros2-robot", folder)
    for typed in [*_spellings(folder, monkeypatch), "bag/"]:
        assert _files_line(typed, "--distro", layout) == LABEL + "ros2-robot_0.mcap"
