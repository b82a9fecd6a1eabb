"""What the CARLA picture frames and marks, checked in numbers (`PlotReport`), on the real
recordings of ../shared/realdata and the samples: the view holds every path point with no
more than a margin around them, collisions are marked where and when, the hero is named."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from nanorec.converters.carla.plot import PlotReport, plot
from nanorec.converters.carla.plot_data import (
    MAX_RATIO,
    actor_kinds,
    frame_view,
    margin_of,
)
from nanorec.converters.carla.recording import CarlaRecording
from tests.conftest import REALDATA, SAMPLES, carla_realdata

pytest.importorskip("matplotlib")

CRASH = SAMPLES / "carla-0.9.15-crash-town05.log"


def path_points(rec: CarlaRecording, ids: set[int]) -> np.ndarray:
    """Every position of those actors in the recording (m), read apart from the plot."""
    rows = [
        (row["location_x"] / 100, row["location_y"] / 100)
        for row in rec.rows("position")
        if row["id"] in ids
    ]
    return np.array(rows, dtype=np.float64).reshape(-1, 2)


def assert_framed(report: PlotReport, points: np.ndarray) -> None:
    """The view holds every point, and on each side no more than the margin (the thinner
    side may be widened to 1/MAX_RATIO of the longer one)."""
    assert report.view is not None and report.bounds is not None
    x0, x1, y0, y1 = report.view
    assert np.all((points[:, 0] >= x0) & (points[:, 0] <= x1))
    assert np.all((points[:, 1] >= y0) & (points[:, 1] <= y1))
    bx0, bx1, by0, by1 = report.bounds
    assert bx0 <= points[:, 0].min() and points[:, 0].max() <= bx1
    assert by0 <= points[:, 1].min() and points[:, 1].max() <= by1
    margin = margin_of(report.bounds)
    # the bounds add at most a footprint (a few metres) around the path points
    slack = margin + 3.0
    longest = max(x1 - x0, y1 - y0)
    for low, high, lo_pt, hi_pt in (
        (x0, x1, points[:, 0].min(), points[:, 0].max()),
        (y0, y1, points[:, 1].min(), points[:, 1].max()),
    ):
        widened = (longest / MAX_RATIO - (hi_pt - lo_pt)) / 2
        assert lo_pt - low <= max(slack, widened) + 1e-6
        assert high - hi_pt <= max(slack, widened) + 1e-6


def test_frame_view() -> None:
    square = frame_view((0.0, 100.0, 0.0, 100.0))
    assert square == (-5.0, 105.0, -5.0, 105.0)
    road = frame_view((0.0, 300.0, 10.0, 12.0))  # a straight road: not a hairline
    assert road[0] == -15.0 and road[1] == 315.0
    assert road[3] - road[2] == pytest.approx(330.0 / MAX_RATIO)
    assert (road[2] + road[3]) / 2 == pytest.approx(11.0)
    assert frame_view((1.0, 1.0, 2.0, 2.0)) == (-4.0, 6.0, -3.0, 7.0)  # one point


@pytest.mark.realdata
@pytest.mark.parametrize("path", carla_realdata(), ids=lambda p: p.name)
def test_real_recordings_are_framed_by_their_paths(
    path: Path, tmp_path: Path, realdata_dir: Path
) -> None:
    with CarlaRecording.open(path) as rec:
        report = plot(rec, tmp_path / "view.png")
        kinds = actor_kinds(rec)
        points = path_points(rec, {a for a, kind in kinds.items() if kind != "other"})
    assert report.paths >= 1 and len(points)
    assert_framed(report, points)
    assert report.line().startswith(f"{tmp_path / 'view.png'}: {report.size} bytes;")


@pytest.mark.realdata
def test_the_collision_of_2762_is_marked(tmp_path: Path, realdata_dir: Path) -> None:
    with CarlaRecording.open(REALDATA / "carla" / "tkortz_isorc20_2762.rec") as rec:
        report = plot(rec, tmp_path / "view.svg")
        (hit,) = report.collisions
        assert (hit.recorder_frame, hit.actor1, hit.actor2) == (136, 2763, 2768)
        actors = rec.frame(hit.frame).actors
        where = [(actors[a].location.x / 100, actors[a].location.y / 100) for a in (2763, 2768)]
    assert (hit.x, hit.y) == pytest.approx(tuple(np.mean(where, axis=0)))
    x0, x1, y0, y1 = report.view or (0, 0, 0, 0)
    assert x0 <= hit.x <= x1 and y0 <= hit.y <= y1
    assert report.heroes == (2762,)
    assert "1 collision (2763-2768 at 8.47 s, frame 136)" in report.line()
    assert "hero 2762" in report.line()
    text = (tmp_path / "view.svg").read_text()
    assert "collision 2763-2768" in text and "hero 2762" in text
    # the map's lights far from the paths are left out: only those inside the view
    assert report.lights < 40


def test_sample_collisions_time_window_and_follow(tmp_path: Path) -> None:
    with CarlaRecording.open(CRASH) as rec:
        whole = plot(rec, tmp_path / "a.png")
        assert [(h.actor1, h.actor2) for h in whole.collisions] == [(6, 7), (6, 0xFFFFFFFF)]
        assert "(6-? at" in whole.line()
        first = whole.collisions[0]
        # a time window after the first contact leaves it out
        later = plot(rec, tmp_path / "b.png", start_s=first.time + 0.5)
        assert [(h.actor1, h.actor2) for h in later.collisions] == [(6, 0xFFFFFFFF)]
        followed = plot(rec, tmp_path / "c.png", follow=7)
        assert followed.follow == 7 and "following 7" in followed.line()
        assert_framed(followed, path_points(rec, {7}))
        assert followed.view is not None and whole.view is not None
        assert followed.view[1] - followed.view[0] < whole.view[1] - whole.view[0]
        with pytest.raises(ValueError, match="actor 999 never appears"):
            plot(rec, tmp_path / "d.png", follow=999)


def test_cli_follow_says_what_it_drew(tmp_path: Path) -> None:
    from nanorec.cli import _register, app
    from tests.conftest import make_runner

    _register()
    out = tmp_path / "follow.png"
    args = ["plot", str(CRASH), "-o", str(out), "--follow", "7", "--end", "5"]
    result = make_runner().invoke(app, args)
    assert result.exit_code == 0, result.stderr
    (line,) = result.stdout.splitlines()
    assert "1 collision (6-7 at 4.45 s, frame 90)" in line and line.endswith("following 7")
