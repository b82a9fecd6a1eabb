"""A crashed bag folder (no metadata.yaml, `ros2 bag reindex`'s input) that also holds a
sub-folder is one bag, not a folder of recordings (issue #39): its storage files lie in it
directly. A folder whose sub-folder is itself a bag stays a batch (test_bags.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from nanorec.archive.reader import ArchiveReader
from nanorec.cli import _register, app
from tests.conftest import SAMPLES, make_runner

pytest.importorskip("yaml")
pytest.importorskip("zstandard")
pytest.importorskip("mcap")

_register()


def _run(*args: object) -> tuple[int, str, str]:
    result = make_runner().invoke(app, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize("storage", ["db3", "mcap"])
def test_a_crashed_folder_with_a_sub_folder_is_one_bag(storage: str, tmp_path: Path) -> None:
    crashed = tmp_path / "m"
    (crashed / "logs").mkdir(parents=True)
    (crashed / "logs" / "rosout.txt").write_text("not a recording\n")
    shutil.copy(SAMPLES / f"ros2-robot.{storage}", crashed / f"m_0.{storage}")
    archive = tmp_path / "m.nanover.zip"
    code, out, err = _run("convert", crashed, "-o", archive)
    assert code == 0, out + err
    assert archive.is_file()
    with ArchiveReader(archive) as reader:
        assert len(reader) == 210  # the sample's messages
