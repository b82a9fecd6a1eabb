"""Hostile `relative_file_paths` (issue #39): a bag's metadata.yaml never makes `convert` read a
file outside the bag's folder (by `..`, an absolute path, a symlink or a symlinked
sub-folder), and a file listed twice, missing or not a storage file is one note naming it,
the rest converted, exit 1."""

from __future__ import annotations

import os
import shutil
import zipfile
from pathlib import Path
from typing import Any

import pytest

from nanorec.archive.reader import ArchiveReader
from nanorec.cli import _register, app
from tests.conftest import SAMPLES, make_runner

pytest.importorskip("yaml")
pytest.importorskip("zstandard")
pytest.importorskip("mcap")

BAG = SAMPLES / "ros2-robot"  # an MCAP bag: no sqlite3 header anywhere in its archive
MARKER = b"SQLite format 3\x00"  # the outside file's first bytes
LISTED = "    - ros2-robot_0.mcap\n"

_register()


def _run(*args: object) -> tuple[int, str, str]:
    result = make_runner().invoke(app, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


def _bag(tmp_path: Path, *extra: str) -> Path:
    """The sample bag with `extra` names listed after its own file."""
    bag = tmp_path / "bag"
    shutil.copytree(BAG, bag)
    meta = bag / "metadata.yaml"
    text = meta.read_text()
    assert LISTED in text
    meta.write_text(text.replace(LISTED, LISTED + "".join(f"    - {n}\n" for n in extra), 1))
    return bag


def _outside(tmp_path: Path) -> Path:
    secret = tmp_path / "outside" / "secret.sqlite"
    secret.parent.mkdir()
    shutil.copy(SAMPLES / "ros2-robot.db3", secret)  # a storage file rosbag2 could read
    return secret


def _archive_bytes(archive: Path) -> list[bytes]:
    """The archive as stored, and every member inflated."""
    with zipfile.ZipFile(archive) as opened:
        return [archive.read_bytes(), *(opened.read(n) for n in opened.namelist())]


def _opened(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Every path opened through pathlib from now on (resolved)."""
    seen: list[Path] = []
    real = Path.open

    def spy(self: Path, *args: Any, **kwargs: Any) -> Any:
        seen.append(self.resolve())
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Path, "open", spy)
    return seen


def _hostile(tmp_path: Path, how: str) -> tuple[Path, Path, str]:
    """A bag that leads to an outside file, the file, and the name the note must give."""
    secret = _outside(tmp_path)
    if how == "relative":
        return _bag(tmp_path, "../outside/secret.sqlite"), secret, "../outside/secret.sqlite"
    if how == "absolute":
        return _bag(tmp_path, str(secret)), secret, str(secret)
    if how == "symlink":  # a listed link inside the folder, pointing outside
        bag = _bag(tmp_path, "ros2-robot_1.db3")
        (bag / "ros2-robot_1.db3").symlink_to(secret)
        return bag, secret, "ros2-robot_1.db3"
    if how == "unlisted-symlink":  # found by name, not listed
        bag = _bag(tmp_path)
        (bag / "ros2-robot_1.db3").symlink_to(secret)
        return bag, secret, "ros2-robot_1.db3"
    if how == "symlinked-folder":
        bag = _bag(tmp_path, "sub/secret.sqlite")
        (bag / "sub").symlink_to(secret.parent, target_is_directory=True)
        return bag, secret, "sub/secret.sqlite"
    if how == "wal":  # the WAL of a listed .db3, a link pointing outside
        bag = _bag(tmp_path, "inside_1.db3")
        shutil.copy(SAMPLES / "ros2-robot.db3", bag / "inside_1.db3")
        (bag / "inside_1.db3-wal").symlink_to(secret)
        return bag, secret, "inside_1.db3-wal"
    raise AssertionError(how)


HOW = ["relative", "absolute", "symlink", "unlisted-symlink", "symlinked-folder"]


@pytest.mark.parametrize("stored", [False, True], ids=["compact", "stored"])
@pytest.mark.parametrize("how", HOW)
def test_a_file_outside_the_folder_is_never_read(
    how: str, stored: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bag, secret, name = _hostile(tmp_path, how)
    opened = _opened(monkeypatch)
    archive = tmp_path / "a.nanover.zip"
    code, out, err = _run("convert", bag, "-o", archive, *(["--stored"] if stored else []))
    assert code == 1, out + err
    warned = [line for line in out.splitlines() if line.startswith("  warning: ")]
    assert len(warned) == 1 and name in warned[0] and "outside the bag's folder" in warned[0]
    assert secret.resolve() not in opened
    assert not any(MARKER in blob for blob in _archive_bytes(archive))
    with ArchiveReader(archive) as reader:
        assert len(reader) == 630


def test_a_wal_outside_the_folder_is_never_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bag, secret, name = _hostile(tmp_path, "wal")
    secret.write_bytes(b"MARKER-of-the-outside-wal" * 100)
    opened = _opened(monkeypatch)
    archive = tmp_path / "a.nanover.zip"
    code, out, err = _run("convert", bag, "-o", archive)
    assert code == 1 and f"{name} leads outside the bag's folder" in out, out + err
    assert secret.resolve() not in opened
    assert not any(b"MARKER-of-the-outside-wal" in blob for blob in _archive_bytes(archive))


def test_a_fifo_outside_is_not_opened(tmp_path: Path) -> None:
    """A FIFO would hang whoever opens it: the conversion ends."""
    fifo = tmp_path / "outside.db3"
    os.mkfifo(fifo)
    bag = _bag(tmp_path, "../outside.db3", str(fifo))
    code, out, err = _run("convert", bag, "-o", tmp_path / "a.nanover.zip")
    assert code == 1 and out.count("outside the bag's folder") >= 2, out + err


def test_a_file_listed_twice_is_converted_once(tmp_path: Path) -> None:
    bag = _bag(tmp_path, "ros2-robot_0.mcap")
    archive = tmp_path / "a.nanover.zip"
    code, out, err = _run("convert", bag, "-o", archive)
    assert code == 1 and "lists ros2-robot_0.mcap twice" in out, out + err
    with ArchiveReader(archive) as reader:
        assert len(reader) == 630
    code, out, err = _run("export", archive, "-o", tmp_path / "back")
    assert code == 0, out + err


@pytest.mark.parametrize("kind", ["missing", "not-storage"])
def test_a_listed_file_missing_or_not_storage_is_a_note(kind: str, tmp_path: Path) -> None:
    bag = _bag(tmp_path, "ros2-robot_1.mcap")
    if kind == "not-storage":
        (bag / "ros2-robot_1.mcap").write_bytes(b"not a bag at all\n" * 10)
    archive = tmp_path / "a.nanover.zip"
    code, out, err = _run("convert", bag, "-o", archive)
    assert code == 1 and "ros2-robot_1.mcap" in out + err, out + err
    with ArchiveReader(archive) as reader:
        assert len(reader) == 630


def test_a_metadata_link_leading_out_is_not_read(tmp_path: Path) -> None:
    secret = tmp_path / "outside.yaml"
    secret.write_text(
        (BAG / "metadata.yaml").read_text().replace("ros_distro: jazzy", "ros_distro: MARKER")
    )
    bag = _bag(tmp_path)
    (bag / "metadata.yaml").unlink()
    (bag / "metadata.yaml").symlink_to(secret)
    archive = tmp_path / "a.nanover.zip"
    code, out, err = _run("convert", bag, "-o", archive)
    assert code == 1 and "metadata.yaml leads outside the bag's folder" in out, out + err
    assert not any(b"MARKER" in blob for blob in _archive_bytes(archive))
    with ArchiveReader(archive) as reader:
        assert len(reader) == 630
