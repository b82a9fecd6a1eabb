"""Parquet and MCAP exports report progress (the CLI's bar), for CARLA and ROS bags."""

from __future__ import annotations

from pathlib import Path

import pytest

import nanorec
from nanorec.outputs.arrow import export_parquet
from nanorec.outputs.mcap import export_mcap
from tests.conftest import SAMPLES

pytest.importorskip("pyarrow")
pytest.importorskip("mcap")


@pytest.mark.parametrize("name", ["carla-0.9.16-town03.log", "rosbag-robot.bag"])
@pytest.mark.parametrize("to", ["parquet", "mcap"])
def test_progress_runs_to_its_total(tmp_path: Path, name: str, to: str) -> None:
    seen: list[tuple[int, int]] = []

    def progress(done: int, total: int) -> None:
        seen.append((done, total))

    with nanorec.open(SAMPLES / name) as rec:
        if to == "parquet":
            export_parquet(rec, tmp_path / "out", progress=progress)
        else:
            export_mcap(rec, tmp_path / "out.mcap", progress=progress)
    assert seen, "no progress reported"
    total = seen[-1][1]
    assert total > 0 and seen[-1][0] == total
    assert all(t == total for _, t in seen)
    assert [done for done, _ in seen] == sorted(done for done, _ in seen)


def test_the_bar_follows_a_total_known_late() -> None:
    """`progress_bar`'s update takes the producer's total (frames, tables) over the guess."""
    from nanorec.cli.inputs import progress_bar

    with progress_bar("x", 10) as update:
        update(3, 4)
        update(4, 4)
