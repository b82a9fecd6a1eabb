"""Two processes writing one output (issue #39 item 8): the partial file (or folder) is
locked while it is written, so the second writer is told another nanorec is writing it,
never that a live partial was "left by an interrupted write: recover it", and `--force`
does not remove it from under its writer. An output that exists is said one way by every
writer and every format."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from nanorec import registry
from nanorec.archive.atomic import atomic_folder, atomic_output, is_locked
from nanorec.archive.writer import ArchiveWriter
from nanorec.cli import _register, app
from nanorec.errors import OutputExistsError
from tests.conftest import SAMPLES, make_runner

pytest.importorskip("fcntl")

_register()

#: A second process holding the lock of `argv[1]` as a writer does, until its stdin closes.
_HOLDER = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
print("locked", flush=True)
sys.stdin.read()
"""


@pytest.fixture
def hold() -> Iterator[Callable[[Path], None]]:
    """Hold a path's lock from another process (as another nanorec writing it would)."""
    holders: list[subprocess.Popen[str]] = []

    def holding(path: Path) -> None:
        holder = subprocess.Popen(
            [sys.executable, "-c", _HOLDER, str(path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        holders.append(holder)
        assert holder.stdout is not None and holder.stdout.readline() == "locked\n"

    yield holding
    for holder in holders:
        holder.communicate("")


def _live(hold: Callable[[Path], None], partial: Path, folder: bool = False) -> None:
    if folder:
        partial.mkdir()
        (partial / "x_0.db3").write_bytes(b"half")
    else:
        partial.write_bytes(b"half a file")
    hold(partial)
    assert is_locked(partial)


@pytest.mark.parametrize("overwrite", [False, True])
def test_a_live_partial_is_another_writers(
    hold: Callable[[Path], None], tmp_path: Path, overwrite: bool
) -> None:
    target = tmp_path / "out.bin"
    _live(hold, tmp_path / ".out.bin.partial")
    live = "being written by another nanorec"
    with pytest.raises(OutputExistsError, match=live), atomic_output(target, overwrite=overwrite):
        pass
    bag = tmp_path / "bag"
    _live(hold, tmp_path / ".bag.partial", folder=True)
    with pytest.raises(OutputExistsError, match=live), atomic_folder(bag, overwrite=overwrite):
        pass
    archive = tmp_path / "a.nanover.zip"
    _live(hold, tmp_path / ".a.nanover.zip.partial")
    with pytest.raises(OutputExistsError, match=live):
        ArchiveWriter(archive, overwrite=overwrite)
    assert (tmp_path / ".out.bin.partial").read_bytes() == b"half a file"  # left to its writer
    assert (tmp_path / ".bag.partial" / "x_0.db3").exists()


def test_a_writer_holds_its_partials_lock(tmp_path: Path) -> None:
    with atomic_output(tmp_path / "out.bin") as stream:
        stream.write(b"x")
        assert _locked_elsewhere(tmp_path / ".out.bin.partial")
    with atomic_folder(tmp_path / "bag"):
        assert _locked_elsewhere(tmp_path / ".bag.partial")
    with ArchiveWriter(tmp_path / "a.nanover.zip") as writer:
        writer.write({"x": 1}, timestamp_us=0)
        assert _locked_elsewhere(tmp_path / ".a.nanover.zip.partial")
    assert not _locked_elsewhere(tmp_path / "a.nanover.zip")


def _locked_elsewhere(path: Path) -> bool:
    """Asked from another process (a lock is the holding process's own)."""
    code = (
        "import pathlib, nanorec.archive.atomic as a; "
        f"print(a.is_locked(pathlib.Path({str(path)!r})))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return out.stdout.strip() == "True"


def test_a_left_partial_is_still_named_as_left(tmp_path: Path) -> None:
    partial = tmp_path / ".a.nanover.zip.partial"
    partial.write_bytes(b"half")  # no lock: its writer was killed
    result = make_runner().invoke(
        app, ["convert", str(SAMPLES / "ros2-robot.db3"), "-o", str(tmp_path / "a.nanover.zip")]
    )
    assert result.exit_code == 2 and "left by an interrupted write: recover it" in result.stderr


def test_convert_says_another_nanorec_is_writing(
    hold: Callable[[Path], None], tmp_path: Path
) -> None:
    _live(hold, tmp_path / ".a.nanover.zip.partial")
    for force in ([], ["--force"]):
        result = make_runner().invoke(
            app,
            [
                "convert",
                str(SAMPLES / "ros2-robot.db3"),
                "-o",
                str(tmp_path / "a.nanover.zip"),
                *force,
            ],
        )
        assert result.exit_code == 2 and result.stderr.count("\n") == 1, result.stderr
        assert "being written by another nanorec" in result.stderr
        assert "interrupted" not in result.stderr


def _samples() -> list[Path]:
    names = ["carla-0.9.16-town03.log", "ros2-robot.db3", "rosbag-robot-bz2.bag"]
    names += [p.name for p in SAMPLES.glob("*.pbstream")][:1]
    return [SAMPLES / n for n in names if (SAMPLES / n).exists()]


@pytest.mark.parametrize("source", _samples(), ids=lambda p: p.name)
def test_an_existing_output_is_said_one_way(source: Path, tmp_path: Path) -> None:
    """Convert, export to the native file, and export to another form: the same words."""
    archive = tmp_path / "a.nanover.zip"
    registry.for_native(source).convert(source, archive)
    native = tmp_path / ("native" + "".join(source.suffixes))
    native.write_bytes(b"mine")
    runs = [
        ["convert", str(source), "-o", str(archive)],
        ["export", str(archive), "-o", str(native)],
    ]
    for args in runs:
        result = make_runner().invoke(app, args)
        assert result.exit_code == 2, (args, result.output)
        assert result.stderr.endswith(" exists; pass --force to replace it\n"), result.stderr
    assert native.read_bytes() == b"mine" and os.path.getsize(archive) > 4
