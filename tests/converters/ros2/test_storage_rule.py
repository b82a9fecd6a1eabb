"""One storage rule for every ROS 2 output (`writer.bag_target`): the exact export, a cut,
the repair `--format indexed` and a bag bridged from another format. The output's name
(`.db3`/`.mcap`) or `--storage` decides, both given must agree (else one `nanorec:` line and
exit 2), an output named neither way takes the source's storage (bridged: sqlite3, said in
a note); an exact export to the other storage writes a new bag of every message, says so,
and the bag is what its name says (checked by its magic and by `rosbags`)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from nanorec import registry
from nanorec.cli import _register, app
from nanorec.converters.ros.ros2.writer import Target, bag_target
from nanorec.errors import UsageError
from tests.conftest import SAMPLES, make_runner

pytest.importorskip("yaml")
pytest.importorskip("mcap")
rosbag2 = pytest.importorskip("rosbags.rosbag2")

DB3 = SAMPLES / "ros2-robot.db3"
MCAP = SAMPLES / "ros2-robot.mcap"
BAG = SAMPLES / "ros2-robot"
ROS1 = SAMPLES / "rosbag-robot.bag"
MAGIC = {"sqlite3": b"SQLite format 3\0", "mcap": b"\x89MCAP0\r\n"}

_register()


def _run(*args: object) -> tuple[int, str, str]:
    result = make_runner().invoke(app, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


def _storage(path: Path) -> str:
    """The storage of a file, or of a bag folder's one storage file, by its magic."""
    files = [p for p in path.iterdir() if p.name != "metadata.yaml"] if path.is_dir() else [path]
    assert len(files) == 1, files
    head = files[0].read_bytes()[:16]
    return next(storage for storage, magic in MAGIC.items() if head.startswith(magic))


def _count(path: Path) -> int:
    """Messages of the bag at `path`, read by rosbags (every one, not the metadata's)."""
    with rosbag2.Reader(path) as reader:
        return sum(1 for _ in reader.messages())


def _refused(code: int, stdout: str, stderr: str) -> None:
    assert code == 2 and stdout == "", stdout
    assert stderr.count("\n") == 1 and stderr.startswith("nanorec: "), stderr
    assert "does not fit the output's name" in stderr


@pytest.mark.parametrize(
    ("name", "requested", "source", "folder", "expected"),
    [
        ("x.db3", None, "mcap", True, Target("sqlite3", False)),
        ("x.MCAP", None, "sqlite3", False, Target("mcap", False)),
        ("x.mcap", "mcap", "sqlite3", True, Target("mcap", False)),
        ("x", "mcap", "sqlite3", True, Target("mcap", True)),
        ("x", None, "mcap", True, Target("mcap", True)),
        ("x", None, "sqlite3", False, Target("sqlite3", False)),
    ],
)
def test_the_rule(
    name: str, requested: str | None, source: str, folder: bool, expected: Target
) -> None:
    assert bag_target(Path(name), requested, source=source, source_folder=folder) == expected


def test_the_rule_for_a_bridged_bag() -> None:
    target = bag_target(Path("x"), None, source=None)
    assert (target.storage, target.folder) == ("sqlite3", True)
    assert target.note is not None and "sqlite3" in target.note and "default" in target.note
    assert bag_target(Path("x.mcap"), None, source=None) == Target("mcap", False)


@pytest.mark.parametrize(("name", "requested"), [("x.db3", "mcap"), ("x.mcap", "sqlite3")])
def test_the_rule_refuses_a_contradiction(name: str, requested: str) -> None:
    with pytest.raises(UsageError, match="does not fit the output's name"):
        bag_target(Path(name), requested, source="sqlite3")
    with pytest.raises(UsageError, match="does not fit the output's name"):
        bag_target(Path(name), requested, source=None)


# -- the exact export ----------------------------------------------------------------------


@pytest.mark.parametrize(("source", "other"), [(DB3, "mcap"), (MCAP, "sqlite3")])
def test_exact_export_to_the_other_storage_is_a_new_bag(
    source: Path, other: str, tmp_path: Path
) -> None:
    out = tmp_path / ("s.mcap" if other == "mcap" else "s.db3")
    code, stdout, stderr = _run("export", source, "-o", out)
    assert code == 0, stderr
    lines = stdout.splitlines()
    assert len(lines) == 2
    assert lines[1].startswith("note: the bag is ") and "not byte-exact" in lines[1]
    assert _storage(out) == other
    with registry.open(source) as rec:
        assert _count(out) == len(rec)
    # --storage alone (a name without a suffix: the source's shape, one file)
    plain = tmp_path / "plain"
    code, stdout, _ = _run("export", source, "-o", plain, "--storage", other)
    assert code == 0 and plain.is_file() and _storage(plain) == other
    assert "not byte-exact" in stdout


@pytest.mark.parametrize("source", [DB3, MCAP])
def test_exact_export_to_its_own_storage_is_byte_exact(source: Path, tmp_path: Path) -> None:
    for out, extra in [
        (tmp_path / ("same" + source.suffix), []),
        (tmp_path / "plain", []),
        (tmp_path / ("asked" + source.suffix), ["--storage", _storage(source)]),
    ]:
        code, stdout, stderr = _run("export", source, "-o", out, *extra)
        assert code == 0, stderr
        assert stdout.count("\n") == 1 and "identical to the source" in stdout
        assert out.read_bytes() == source.read_bytes()


@pytest.mark.parametrize("source", [DB3, MCAP, BAG])
def test_exact_export_contradiction_is_one_line(source: Path, tmp_path: Path) -> None:
    _refused(*_run("export", source, "-o", tmp_path / "s.db3", "--storage", "mcap"))
    _refused(*_run("export", source, "-o", tmp_path / "s.mcap", "--storage", "sqlite3"))
    assert not any(tmp_path.iterdir())


def test_exact_export_of_a_folder(tmp_path: Path) -> None:
    out = tmp_path / "same"
    code, stdout, _ = _run("export", BAG, "-o", out)
    assert code == 0 and "identical to the source" in stdout
    other = "mcap" if _storage(out) == "sqlite3" else "sqlite3"
    moved = tmp_path / "moved"
    code, stdout, stderr = _run("export", BAG, "-o", moved, "--storage", other)
    assert code == 0, stderr
    assert (moved / "metadata.yaml").is_file() and _storage(moved) == other
    assert "not byte-exact" in stdout
    one = tmp_path / "one.db3"  # a folder bag to one storage file
    code, stdout, stderr = _run("export", BAG, "-o", one)
    assert code == 0 and one.is_file() and _storage(one) == "sqlite3", stderr
    assert "not byte-exact" in stdout
    with registry.open(BAG) as rec:
        assert _count(moved) == _count(one) == len(rec)


# -- a cut and the repair --------------------------------------------------------------------


@pytest.mark.parametrize("form", [["--start", "1", "--end", "3"], ["--format", "indexed"]])
def test_cut_and_repair_follow_the_rule(form: list[str], tmp_path: Path) -> None:
    _refused(*_run("export", DB3, "-o", tmp_path / "c.db3", "--storage", "mcap", *form))
    _refused(*_run("export", BAG, "-o", tmp_path / "c.mcap", "--storage", "sqlite3", *form))
    named = tmp_path / "c.mcap"
    assert _run("export", DB3, "-o", named, *form)[0] == 0
    assert named.is_file() and _storage(named) == "mcap" and _count(named) > 0
    plain = tmp_path / "plain"  # neither: the source's storage and shape
    assert _run("export", MCAP, "-o", plain, *form)[0] == 0
    assert plain.is_file() and _storage(plain) == "mcap"
    folder = tmp_path / "folder"
    assert _run("export", BAG, "-o", folder, "--storage", "mcap", *form)[0] == 0
    assert (folder / "metadata.yaml").is_file() and _storage(folder) == "mcap"


# -- a bag bridged from another format --------------------------------------------------------


def test_bridged_export_follows_the_rule(tmp_path: Path) -> None:
    if not ROS1.is_file():
        pytest.skip(f"{ROS1} is not present")
    _refused(*_run("export", ROS1, "--format", "ros2", "-o", tmp_path / "b.mcap",
                   "--storage", "sqlite3"))  # fmt: skip
    plain = tmp_path / "plain"
    code, stdout, stderr = _run("export", ROS1, "--format", "ros2", "-o", plain)
    assert code == 0, stderr
    assert (plain / "metadata.yaml").is_file() and _storage(plain) == "sqlite3"
    assert "note: stored as sqlite3, rosbag2's default" in stdout
    asked = tmp_path / "asked"
    code, stdout, stderr = _run(
        "export", ROS1, "--format", "ros2", "-o", asked, "--storage", "mcap"
    )
    assert code == 0, stderr
    assert _storage(asked) == "mcap" and "default" not in stdout
    named = tmp_path / "b.mcap"
    code, stdout, stderr = _run("export", ROS1, "--format", "ros2", "-o", named)
    assert code == 0 and named.is_file() and _storage(named) == "mcap", stderr
    assert _count(named) == _count(asked) == _count(plain) > 0


def test_a_copy_of_the_sample_keeps_its_storage(tmp_path: Path) -> None:
    """A `.db3` renamed without suffix is still exported as what it is (the source's)."""
    copy = tmp_path / "nosuffix"
    shutil.copy(DB3, copy)
    out = tmp_path / "out"
    code, stdout, _ = _run("export", copy, "-o", out)
    assert code == 0 and "identical to the source" in stdout and _storage(out) == "sqlite3"
