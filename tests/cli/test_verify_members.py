"""`verify` passes nothing `export` refuses (issue #39 item 6): every member a format's export
needs is checked through the format (a ROS 2 archive's skeletons and zstd members joined as
export joins them, a ROS1 archive's template, rank and kept bytes), and two members of one
name are refused by the archive reader itself, so by `verify` and every other verb."""

from __future__ import annotations

import warnings
import zipfile
from pathlib import Path

import pytest

from nanorec import registry
from nanorec.archive.reader import ArchiveReader
from nanorec.cli import _register, app
from nanorec.errors import ArchiveError
from tests.conftest import SAMPLES, make_runner

_register()


def _copy(archive: Path, out: Path, name: str, data: bytes | None, *, twice: bool = False) -> Path:
    """`archive` with member `name` dropped (`data` None), replaced, or written twice."""
    with zipfile.ZipFile(archive) as source, zipfile.ZipFile(out, "w") as target:
        for info in source.infolist():
            kept = source.read(info)
            if info.filename == name and data is None and not twice:
                continue
            if info.filename == name and data is not None:
                kept = data
            target.writestr(info, kept)
            if twice and info.filename == name:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # zipfile warns of the duplicate
                    target.writestr(info, kept)
    return out


def _run(*args: object) -> tuple[int, str]:
    result = make_runner().invoke(app, [str(a) for a in args])
    return result.exit_code, result.stdout + result.stderr


CASES = {
    "ros2-robot.db3": {
        "no skeleton": ("ros2-skeleton-0.bin", None),
        "garbage skeleton": ("ros2-skeleton-0.bin", b"\x01" * 100),
        "empty skeleton": ("ros2-skeleton-0.bin", b""),
    },
    "ros2-robot.mcap": {"garbage skeleton": ("ros2-skeleton-0.bin", b"\x01" * 100)},
    "rosbag-robot-bz2.bag": {
        "no raw": ("rosbag-raw.bin", None),
        "no template": ("rosbag-template.bin", None),
        "short template": ("rosbag-template.bin", b"\x01" * 64),
        "no rank": ("rosbag-rank.bin", None),
        "empty rank": ("rosbag-rank.bin", b""),
    },
}


@pytest.mark.parametrize(
    ("source", "case"), [(s, c) for s, cases in CASES.items() for c in cases], ids=str
)
def test_verify_refuses_what_export_refuses(source: str, case: str, tmp_path: Path) -> None:
    pytest.importorskip("yaml")
    pytest.importorskip("zstandard")
    archive = tmp_path / "a.nanover.zip"
    registry.for_native(SAMPLES / source).convert(SAMPLES / source, archive)
    name, data = CASES[source][case]
    broken = _copy(archive, tmp_path / "broken.nanover.zip", name, data)
    code, out = _run("export", broken, "-o", tmp_path / ("back" + Path(source).suffix))
    assert code == 2, out  # what export refuses...
    code, out = _run("verify", broken)
    assert code == 1 and "format: " in out, out  # ...verify does not pass


@pytest.mark.parametrize("name", ["ros2-skeleton-0.bin", "nanorec.msgpack", "messages.msgpack"])
def test_two_members_of_one_name_are_refused(name: str, tmp_path: Path) -> None:
    archive = tmp_path / "a.nanover.zip"
    registry.for_native(SAMPLES / "ros2-robot.db3").convert(SAMPLES / "ros2-robot.db3", archive)
    twice = _copy(archive, tmp_path / "twice.nanover.zip", name, None, twice=True)
    with pytest.raises(ArchiveError, match=f"two members are named '{name}'"):
        ArchiveReader(twice)
    code, out = _run("verify", twice)
    assert code == 1 and "two members are named" in out, out
    code, out = _run("export", twice, "-o", tmp_path / "back.db3")
    assert code == 2 and out.count("\n") == 1 and "two members" in out, out


def test_sound_archives_still_verify(tmp_path: Path) -> None:
    pytest.importorskip("yaml")
    for source in CASES:
        archive = tmp_path / f"{source}.nanover.zip"
        registry.for_native(SAMPLES / source).convert(SAMPLES / source, archive)
        code, out = _run("verify", archive)
        assert code == 0 and ": OK" in out, out
