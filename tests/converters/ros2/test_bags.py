"""ROS 2 bag folders end to end: every real bag folder (and the bundled one) converts and
exports byte for byte, its info reads the same from the folder and from the archive, cuts
and repairs are bags `rosbags` reads, a crashed folder (no metadata.yaml) converts."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest

from nanorec import registry
from nanorec.archive.reader import ArchiveReader
from nanorec.cli import _register, app
from tests.conftest import REALDATA, SAMPLES, make_runner

pytest.importorskip("yaml")
pytest.importorskip("zstandard")
pytest.importorskip("mcap")

BAG = SAMPLES / "ros2-robot"
REAL = sorted(p for p in (REALDATA / "ros2").glob("*") if p.is_dir() and any(p.glob("*_*.*")))
REAL = [p for p in REAL if any(f.suffix in (".db3", ".mcap", ".zstd") for f in p.iterdir())]


def _tree(folder: Path) -> dict[str, str]:
    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest()
        for p in folder.iterdir()
        if p.is_file() and not p.name.endswith(("-shm", "-wal"))
    }


_register()


def _run(*args: object) -> tuple[int, str, str]:
    result = make_runner().invoke(app, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize("bag", [BAG, *REAL], ids=lambda p: p.name)
def test_folder_exports_byte_for_byte(bag: Path, tmp_path: Path) -> None:
    converter = registry.for_native(bag)
    assert converter.name == "ros2"
    archive = tmp_path / "a.nanover.zip"
    report = converter.convert(bag, archive)
    back = tmp_path / "back"
    with ArchiveReader(archive) as reader:
        exported = converter.export(reader, back)
    assert exported.identical is True
    assert _tree(back) == _tree(bag)
    assert report.sha256 == exported.sha256


@pytest.mark.slow
@pytest.mark.parametrize("bag", [BAG, *REAL[:8]], ids=lambda p: p.name)
def test_info_is_the_same_from_folder_and_archive(bag: Path, tmp_path: Path) -> None:
    archive = tmp_path / "a.nanover.zip"
    assert _run("convert", bag, "-o", archive)[0] == 0
    for distro in ("humble", "jazzy", "rolling"):
        native = _run("info", bag, "--tz", "UTC", "--distro", distro)
        archived = _run("info", archive, "--tz", "UTC", "--distro", distro)
        assert native[0] == archived[0] == 0
        assert native[1] == archived[1]
        assert "Files:" in native[1] and "Bag size:" in native[1]


def _stored_count(path: Path) -> int:
    """Messages a storage file holds, by sqlite3 or the mcap package's reader."""
    if path.suffix == ".db3":
        import sqlite3

        with sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True) as db:
            count: int = db.execute("SELECT COUNT(*) FROM messages").fetchone()[0]
        return count
    from mcap.reader import make_reader

    with path.open("rb") as stream:
        return sum(1 for _ in make_reader(stream).iter_messages())


def test_message_counts_equal_the_storage_files() -> None:
    for bag in [BAG, *REAL]:
        files = [p for p in bag.iterdir() if p.suffix in (".db3", ".mcap")]
        if not files:
            continue
        with registry.open(bag) as rec:
            assert len(rec) == sum(map(_stored_count, files)), bag.name


@pytest.mark.parametrize("storage", ["mcap", "sqlite3"])
def test_cut_is_a_bag_rosbags_reads(storage: str, tmp_path: Path) -> None:
    rosbag2 = pytest.importorskip("rosbags.rosbag2")
    out = tmp_path / "cut"
    source = BAG if storage == "mcap" else SAMPLES / "ros2-robot.db3"
    if storage == "sqlite3":  # a folder holding the .db3: the cut is a folder too
        source = tmp_path / "src"
        source.mkdir()
        shutil.copy(SAMPLES / "ros2-robot.db3", source / "src_0.db3")
    code, stdout, _ = _run("export", source, "-o", out, "--start", "2", "--end", "4")
    assert code == 0, stdout
    with rosbag2.Reader(out) as reader:
        got = list(reader.messages())
        assert reader.message_count == len(got) > 0
    with registry.open(source) as rec:
        wanted = [n for n in range(len(rec)) if 2 <= rec.time_of(n) <= 4]
    assert len(got) == len(wanted)


def test_crashed_folder_converts_and_repairs(tmp_path: Path) -> None:
    rosbag2 = pytest.importorskip("rosbags.rosbag2")
    crashed = tmp_path / "crashed"
    crashed.mkdir()
    data = (SAMPLES / "ros2-robot.db3").read_bytes()
    (crashed / "crashed_0.db3").write_bytes(data[: len(data) * 2 // 3])  # a killed writer
    code, _, err = _run("info", crashed, "--tz", "UTC")
    assert code == 0 and "reindex" in err
    archive = tmp_path / "a.nanover.zip"
    # messages were lost with the cut pages: converted, but reported (exit 1)
    code, out, err = _run("convert", crashed, "-o", archive)
    assert code == 1 and "messages lost" in out + err
    back, repaired = tmp_path / "back", tmp_path / "repaired"
    assert _run("export", archive, "-o", back)[0] == 0
    assert _tree(back) == _tree(crashed)
    assert _run("export", archive, "-o", repaired, "--format", "indexed")[0] == 0
    with rosbag2.Reader(repaired) as reader, registry.open(archive) as rec:
        assert reader.message_count == len(rec) == len(list(reader.messages())) > 0


def test_batch_takes_a_bag_folder_whole(tmp_path: Path) -> None:
    shutil.copytree(BAG, tmp_path / "in" / "run1")
    shutil.copy(SAMPLES / "ros2-robot.db3", tmp_path / "in" / "lone.db3")
    code, stdout, stderr = _run("convert", tmp_path / "in", "-o", tmp_path / "out")
    assert code == 0, stdout + stderr
    made = sorted(p.name for p in (tmp_path / "out").rglob("*.nanover.zip"))
    assert made == ["lone.db3.nanover.zip", "run1.nanover.zip"]
