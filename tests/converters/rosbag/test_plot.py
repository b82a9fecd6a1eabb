"""`nanorec plot x.bag`: the standard messages drawn as what they mean, checked in numbers
(`BagPlotReport`): a NavSatFix track spans exactly the fixes, paths their positions, and
every real bag of ../shared/realdata renders."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from nanorec import registry
from nanorec.converters.ros.ros1.plot import plot
from nanorec.converters.ros.ros1.recording import BagRecording
from nanorec.errors import EmptySelectionError, OutputExistsError
from nanorec.outputs.timeline import MAX_KINDS, rate_rows
from nanorec.selection import Selection
from tests.conftest import REALDATA, SAMPLES, make_runner

pytest.importorskip("matplotlib")

ROBOT = SAMPLES / "rosbag-robot.bag"
WAYPOINTS = REALDATA / "rosbag" / "waypoint_follower_test.bag"


def opened(path: Path) -> BagRecording:
    rec = registry.open(path)
    assert isinstance(rec, BagRecording)
    return rec


def column_bounds(rec: BagRecording, topic: str, x: str, y: str) -> tuple[float, ...]:
    rows = list(rec.rows(topic))
    xs = np.array([row[x] for row in rows])
    ys = np.array([row[y] for row in rows])
    return float(xs.min()), float(xs.max()), float(ys.min()), float(ys.max())


def test_sample_paths_series_images_rates(tmp_path: Path) -> None:
    rec = opened(ROBOT)
    try:
        report = plot(rec, tmp_path / "robot.png")
        odom = column_bounds(rec, "/odom", "pose.pose.position.x", "pose.pose.position.y")
    finally:
        rec.close()
    assert report.size == (tmp_path / "robot.png").stat().st_size
    assert report.tracks == {} and list(report.paths) == ["/odom"]
    assert report.paths["/odom"] == pytest.approx(odom)
    view = report.views["paths in frame odom"]
    assert view[0] <= odom[0] and odom[1] <= view[1] and view[2] <= odom[2] and odom[3] <= view[3]
    assert report.series == ("/imu angular velocity (rad/s)", "/imu linear acceleration (m/s²)")
    assert report.images == {"/camera/image": 6}
    assert len(report.rates) == 9  # every topic, one row each
    assert report.line().startswith(f"{tmp_path / 'robot.png'}: {report.size} bytes; 0 GPS")
    assert "1 paths (/odom)" in report.line() and "6 images (/camera/image)" in report.line()


def test_selection_and_errors(tmp_path: Path) -> None:
    rec = opened(ROBOT)
    try:
        only = plot(rec, tmp_path / "a.svg", selection=Selection.make(kinds=["/imu"]))
        assert (tmp_path / "a.svg").read_bytes().lstrip().startswith(b"<?xml")
        assert only.paths == {} and only.images == {} and only.rates == ("/imu",)
        early = plot(rec, tmp_path / "b.png", selection=Selection.make(start=0, end=1))
        full = column_bounds(rec, "/odom", "pose.pose.position.x", "pose.pose.position.y")
        assert early.paths["/odom"][3] < full[3]  # a second of the path, not all of it
        with pytest.raises(OutputExistsError):
            plot(rec, tmp_path / "b.png")
        with pytest.raises(EmptySelectionError):
            plot(rec, tmp_path / "c.png", selection=Selection.make(start=1e6))
        assert not (tmp_path / "c.png").exists()
    finally:
        rec.close()


@pytest.mark.realdata
def test_the_gps_track_spans_the_fixes(tmp_path: Path, realdata_dir: Path) -> None:
    rec = opened(WAYPOINTS)
    try:
        report = plot(rec, tmp_path / "gps.png")
        fixes = column_bounds(rec, "/gps/fix", "longitude", "latitude")
    finally:
        rec.close()
    assert report.tracks == {"/gps/fix": fixes}  # exactly the min/max of every fix
    x0, x1, y0, y1 = report.views["GPS track (longitude, latitude)"]
    assert x0 <= fixes[0] and fixes[1] <= x1 and y0 <= fixes[2] and fixes[3] <= y1
    assert "/steer_planner" in report.series and len(report.rates) == 7
    assert "1 GPS tracks (/gps/fix)" in report.line()


@pytest.mark.realdata
@pytest.mark.parametrize(
    "name",
    [
        "rosbagjs_example.bag",
        "rosbagjs_example-bz2.bag",
        "waypoint_follower_test.bag",
        "matlab_rosbag_empty_msgs.bag",
    ],
)
def test_every_real_bag_renders(name: str, tmp_path: Path, realdata_dir: Path) -> None:
    path = realdata_dir / "rosbag" / name
    rec = opened(path)
    try:
        report = plot(rec, tmp_path / "bag.png")
        topics = rec.topics
    finally:
        rec.close()
    assert report.size > 10_000 and set(report.rates) == set(topics)
    if name.startswith("rosbagjs"):  # turtlesim: tf in the world frame and the poses
        assert {"tf world → turtle1", "tf world → turtle2", "/turtle1/pose"} <= set(report.paths)
        assert report.paths["/turtle1/pose"] == pytest.approx(report.paths["tf world → turtle1"])


class _Index:
    def __init__(self, kinds: list[str], per_kind: int) -> None:
        self.kind = np.repeat(np.array(kinds), per_kind)
        self.timestamp_us = np.tile(np.arange(per_kind) * 100_000, len(kinds))
        order = np.argsort(self.timestamp_us, kind="stable")
        self.kind, self.timestamp_us = self.kind[order], self.timestamp_us[order]

    def has_type(self, kind: str) -> np.ndarray:
        return np.asarray(self.kind == kind)

    def __len__(self) -> int:
        return len(self.kind)


class _Reader:
    def __init__(self, index: _Index) -> None:
        self.index = index


class _Recording:
    def __init__(self, kinds: list[str]) -> None:
        self.reader = _Reader(_Index(kinds, 50))


def test_rate_strip_one_row_per_topic() -> None:
    kinds = [f"/topic{i:02d}" for i in range(30)]
    rec = _Recording(kinds)
    chosen = np.ones(len(rec.reader.index), dtype=bool)
    edges, kept, table = rate_rows(rec, chosen, kinds)
    assert kept == kinds and table.shape == (30, len(edges) - 1)
    width = edges[1] - edges[0]
    assert np.allclose(table.sum(axis=1) * width, 50)  # every message counted once
    many = [f"/t{i}" for i in range(MAX_KINDS + 5)]
    assert len(rate_rows(_Recording(many), np.ones(50 * len(many), bool), many)[1]) == MAX_KINDS


def test_cli(tmp_path: Path) -> None:
    from nanorec.cli import _register, app

    _register()
    out = tmp_path / "robot.png"
    result = make_runner().invoke(app, ["plot", str(ROBOT), "-o", str(out), "-t", "/odom"])
    assert result.exit_code == 0, result.stderr
    (line,) = result.stdout.splitlines()
    assert line.startswith(f"{out}: ") and "1 paths (/odom)" in line and "1 topics" in line
    again = make_runner().invoke(app, ["plot", str(ROBOT), "-o", str(out)])
    assert again.exit_code == 2 and again.stderr.startswith("nanorec: ")
