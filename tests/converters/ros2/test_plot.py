"""`nanorec plot BAG_FOLDER`: a ROS 2 bag drawn as a ROS1 bag is
(`nanorec.converters.ros.common.rosplot`), checked in numbers (`RosPlotReport`): the bundled robot's
path spans exactly its positions, a camera gives a contact sheet, every real bag renders,
--type/--start choose what is drawn, and ROS 2's spellings of the standard types draw what ROS1's
do."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from nanorec import registry
from nanorec.cli import _register, app
from nanorec.converters.ros.common.rosplot_data import contents, ros_type
from nanorec.converters.ros.ros2.generate import generate
from nanorec.converters.ros.ros2.plot import plot
from nanorec.converters.ros.ros2.recording import Ros2Recording
from nanorec.errors import EmptySelectionError, NanorecError
from nanorec.selection import Selection
from tests.conftest import REALDATA, SAMPLES, make_runner

pytest.importorskip("matplotlib")
pytest.importorskip("yaml")
pytest.importorskip("zstandard")
pytest.importorskip("mcap")

BAG = SAMPLES / "ros2-robot"
REAL = sorted(p for p in (REALDATA / "ros2").glob("*") if p.is_dir())


def opened(path: Path) -> Ros2Recording:
    rec = registry.open(path)
    assert isinstance(rec, Ros2Recording)
    return rec


def odom_bounds(rec: Ros2Recording, selection: Selection | None = None) -> tuple[float, ...]:
    rows = list(rec.rows("/odom", selection))
    xs = np.array([row["pose.position.x"] for row in rows])
    ys = np.array([row["pose.position.y"] for row in rows])
    return float(xs.min()), float(xs.max()), float(ys.min()), float(ys.max())


def test_the_sample_path_spans_the_positions(tmp_path: Path) -> None:
    with opened(BAG) as rec:
        report = plot(rec, tmp_path / "robot.png")
        odom = odom_bounds(rec)
    assert report.size == (tmp_path / "robot.png").stat().st_size
    assert report.tracks == {} and report.paths == {"/odom": pytest.approx(odom)}
    assert odom == pytest.approx((-10, 10, -10, 10), abs=1e-3)  # the 10 m circle
    x0, x1, y0, y1 = report.views["paths in frame map"]
    assert x0 <= odom[0] and odom[1] <= x1 and y0 <= odom[2] and odom[3] <= y1
    assert report.series == () and report.images == {} and report.rates == ("/odom", "/status")
    assert report.line().startswith(f"{tmp_path / 'robot.png'}: {report.size} bytes; 0 GPS")
    assert "1 paths (/odom)" in report.line() and "did not decode" not in report.line()


def test_a_camera_gets_a_contact_sheet(tmp_path: Path) -> None:
    bag = generate(tmp_path / "bag", seconds=3, image=64)
    with opened(bag) as rec:
        report = plot(rec, tmp_path / "camera.png")
        found = contents(rec, np.arange(len(rec)), ["/camera"])
        first = rec.decode(int(np.flatnonzero(rec.reader.index.has_type("/camera"))[0]))
    assert report.images == {"/camera": 6} and list(report.paths) == ["/odom"]
    frames = found.images["/camera"]
    assert [f.pixels.shape for f in frames] == [(48, 64)] * 6  # mono8 (grey), 4:3
    assert (frames[0].pixels * 255).round().astype(np.uint8).tolist() == np.asarray(
        first["data"]
    ).reshape(48, 64).tolist()
    assert all(f.pixels.min() >= 0 and f.pixels.max() <= 1 for f in frames)
    assert frames[0].t < frames[-1].t <= 3
    assert "6 images (/camera)" in report.line()


def test_type_and_start_choose(tmp_path: Path) -> None:
    _register()

    def run(*args: object) -> tuple[int, str, str]:
        result = make_runner().invoke(app, [str(a) for a in args])
        return result.exit_code, result.stdout, result.stderr

    code, out, err = run("plot", BAG, "-o", tmp_path / "a.png", "--type", "/status")
    assert code == 0, err
    (line,) = out.splitlines()
    assert line.startswith(f"{tmp_path / 'a.png'}: ") and "0 paths" in line and "1 topics" in line
    code, out, err = run("plot", BAG, "-o", tmp_path / "b.png", "--start", "20")
    assert code == 0 and "1 paths (/odom)" in out and "2 topics" in out, err
    with opened(BAG) as rec:
        late = plot(rec, tmp_path / "c.png", selection=Selection.make(start=20))
        assert late.paths["/odom"] == pytest.approx(odom_bounds(rec, Selection.make(start=20)))
        assert late.paths["/odom"] != pytest.approx(odom_bounds(rec))  # a third of the circle
        with pytest.raises(EmptySelectionError):
            plot(rec, tmp_path / "d.png", selection=Selection.make(start=1e6))
    code, _, err = run("plot", BAG, "-o", tmp_path / "e.png", "--start", "1000000")
    assert code == 2 and err.startswith("nanorec: ") and not (tmp_path / "e.png").exists()
    code, _, err = run("ros2", "plot", BAG, "-o", tmp_path / "a.png")
    assert code == 2 and "exists" in err  # not overwritten without --force


@pytest.mark.realdata
@pytest.mark.skipif(not REAL, reason="../shared/realdata absent")
@pytest.mark.parametrize("bag", REAL, ids=lambda p: p.name)
def test_every_real_bag_renders(bag: Path, tmp_path: Path) -> None:
    try:
        registry.for_native(bag)
    except NanorecError:
        pytest.skip(f"{bag.name} is not a bag (a folder of them)")
    with opened(bag) as rec, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        report = plot(rec, tmp_path / "bag.png")
        topics, count = rec.topics, len(rec)
    # bytes (not drawn), or a stored placeholder definition the bundled one stands in for
    said = ("no definition for", "does not fit its messages")
    assert all(any(s in str(w.message) for s in said) for w in caught)
    assert report.size > 5_000 and (tmp_path / "bag.png").stat().st_size == report.size
    assert set(report.rates) <= set(topics) and bool(report.rates) == (count > 0)


# -- ROS1 and ROS 2 spell the standard types differently; the picture is the same ----------


class _Index:
    def __init__(self, kinds: list[str]) -> None:
        self.kind = np.array(kinds)
        self.timestamp_us = np.arange(len(kinds), dtype=np.int64) * 100_000

    def has_type(self, kind: str) -> Any:
        return self.kind == kind

    def __len__(self) -> int:
        return len(self.kind)


class _Reader:
    def __init__(self, kinds: list[str]) -> None:
        self.index = _Index(kinds)
        self.path = Path("fake.nanover.zip")


class _Messages:
    """A recording of `messages` (topic, message), each topic of `types`' type."""

    def __init__(self, types: dict[str, str], messages: list[tuple[str, Any]]) -> None:
        self.types = types
        self.messages = messages
        self.reader = _Reader([topic for topic, _ in messages])

    def table_kinds(self) -> list[str]:
        return list(self.types)

    def type_of(self, topic: str) -> str:
        return self.types[topic]

    def decode(self, number: int) -> Any:
        return self.messages[number][1]


def _spelled(ros2: bool) -> _Messages:
    sec, nsec = ("sec", "nanosec") if ros2 else ("secs", "nsecs")
    msg = "/msg/" if ros2 else "/"
    messages: list[tuple[str, Any]] = []
    for i in range(5):
        stamp = {sec: 100 + i, nsec: 500_000_000}
        header = {"stamp": stamp, "frame_id": "odom"}
        transform = {
            "header": header,
            "child_frame_id": "base_link",
            "transform": {"translation": {"x": float(i), "y": 2.0 * i, "z": 0.0}},
        }
        messages.append(("/tf", {"transforms": [transform]}))
        fix = {"header": header, "status": {"status": 0}, "latitude": 48 + i / 1e4}
        messages.append(("/fix", {**fix, "longitude": 11 + i / 1e4, "altitude": 500.0}))
        messages.append(("/clock", {"clock": stamp}))
        pixels = np.arange(12, dtype=np.uint8) * (i + 1)
        image = {"height": 2, "width": 2, "encoding": "rgb8", "is_bigendian": 0, "step": 6}
        messages.append(("/camera", {"header": header, **image, "data": pixels}))
    types = {
        "/tf": "tf2_msgs/msg/TFMessage" if ros2 else "tf/tfMessage",
        "/fix": f"sensor_msgs{msg}NavSatFix",
        "/clock": f"rosgraph_msgs{msg}Clock",
        "/camera": f"sensor_msgs{msg}Image",
    }
    return _Messages(types, messages)


def test_both_spellings_draw_the_same() -> None:
    assert ros_type("geometry_msgs/msg/PoseStamped") == "geometry_msgs/PoseStamped"
    assert ros_type("tf/tfMessage") == "tf/tfMessage"
    drawn = []
    for ros2 in (False, True):
        rec = _spelled(ros2)
        drawn.append(contents(rec, np.arange(len(rec.messages)), rec.table_kinds()))
    ros1, ros2_ = drawn
    for found in drawn:
        (path,) = found.paths
        assert path.label == "tf odom → base_link" and path.frame == "odom"
        assert path.xy.tolist() == [[i, 2 * i] for i in range(5)]
        (track,) = found.tracks
        assert track.lon.tolist() == pytest.approx([11 + i / 1e4 for i in range(5)])
        (clock,) = found.series
        assert clock.lines["clock"].tolist() == pytest.approx([100.5 + i for i in range(5)])
        assert [f.pixels.shape for f in found.images["/camera"]] == [(2, 2, 3)] * 5
    assert ros1.images["/camera"][4].pixels.tolist() == ros2_.images["/camera"][4].pixels.tolist()
