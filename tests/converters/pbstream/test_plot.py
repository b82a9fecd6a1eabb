"""`nanorec plot x.pbstream`: constraints coloured by kind, what is drawn in numbers
(`PlotReport`), and every real .pbstream of ../shared/realdata renders."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from nanorec import registry
from nanorec.converters.pbstream.plot import KINDS, constraint_kind, plot
from nanorec.converters.pbstream.recording import PbstreamRecording
from nanorec.selection import Selection
from tests.conftest import REALDATA, SAMPLES

pytest.importorskip("matplotlib")

SAMPLE = SAMPLES / "pbstream-small.pbstream"


def opened(path: Path) -> PbstreamRecording:
    rec = registry.open(path)
    assert isinstance(rec, PbstreamRecording)
    return rec


def test_constraints_by_kind_and_extent(tmp_path: Path) -> None:
    with opened(SAMPLE) as rec:
        report = plot(rec, tmp_path / "map.png")
        graph = rec.pose_graph()
        every = Counter(constraint_kind(c) for c in graph.constraints.tolist())
        xy = np.concatenate([p.translation[:, :2] for p in rec.trajectories().values()])
        counts = {tid: len(p.translation) for tid, p in rec.trajectories().items()}
    assert report.constraints == {kind: every.get(kind, 0) for kind in KINDS}
    assert report.constraints["inter-trajectory"] == 6  # the two trajectories tied together
    assert report.nodes == counts and report.submaps == 4 and report.map
    assert report.bounds == pytest.approx(
        (xy[:, 0].min(), xy[:, 0].max(), xy[:, 1].min(), xy[:, 1].max())
    )
    line = report.line()
    assert line.startswith(f"{tmp_path / 'map.png'}: {report.size} bytes; 2 trajectories")
    assert "126 constraints (120 intra-submap, 6 inter-trajectory), over the map" in line


def test_selection_draws_fewer(tmp_path: Path) -> None:
    with opened(SAMPLE) as rec:
        window = plot(rec, tmp_path / "w.svg", selection=Selection.make(start=0, end=19.5))
        no_map = plot(rec, tmp_path / "n.png", draw_map=False, trajectories=[1])
    assert window.nodes == {0: 40} and sum(window.constraints.values()) < 126
    assert list(no_map.nodes) == [1] and not no_map.map


@pytest.mark.realdata
@pytest.mark.parametrize(
    "name",
    [
        "artelrobotics_camel_robot_unfinished.pbstream",
        "haicheng12_cartographer_slam_map.pbstream",
        "nerovalerius_arti_navigation_map.pbstream",
    ],
)
@pytest.mark.slow
def test_every_real_pbstream_renders(name: str, tmp_path: Path, realdata_dir: Path) -> None:
    with opened(REALDATA / "pbstream" / name) as rec:
        report = plot(rec, tmp_path / "map.png")
        total = len(rec.pose_graph().constraints)
    assert report.size > 10_000 and sum(report.nodes.values()) > 100
    assert sum(report.constraints.values()) == total
