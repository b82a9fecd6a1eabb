"""pbstream -> standard messages (what a ROS 2 bag writer is handed): every node pose on its
trajectory's topic in time order, then the map as an OccupancyGrid whose cells are the
`ros-map` export's PGM read bottom-up; selections narrow it, an empty one is refused."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import nanorec
from nanorec import standard
from nanorec.converters.pbstream.generate import Plan, generate
from nanorec.converters.pbstream.recording import PbstreamRecording
from nanorec.converters.pbstream.rosmap import UNKNOWN, export_ros_map
from nanorec.errors import EmptySelectionError, UsageError
from nanorec.selection import Selection
from tests.conftest import SAMPLES

SAMPLE = SAMPLES / "pbstream-small.pbstream"
POSE = "geometry_msgs/msg/PoseStamped"
GRID = "nav_msgs/msg/OccupancyGrid"


@pytest.fixture(scope="module")
def rec() -> Iterator[PbstreamRecording]:
    with nanorec.open(SAMPLE) as opened:
        assert isinstance(opened, PbstreamRecording)
        yield opened


def _open(path: Path) -> PbstreamRecording:
    opened = nanorec.open(path)
    assert isinstance(opened, PbstreamRecording)
    return opened


def _check_poses(rec: PbstreamRecording, messages: list[standard.StandardMessage]) -> None:
    """Types, time order, and each topic's poses exactly the trajectory's, unit quaternions."""
    assert {m.type for m in messages} <= set(standard.TYPES)
    times = [m.time_ns for m in messages]
    assert times == sorted(times)
    for tid, poses in rec.trajectories().items():
        mine = [m for m in messages if m.topic == f"/trajectory_{tid}"]
        assert [m.type for m in mine] == [POSE] * len(poses)
        assert [m.time_ns for m in mine] == poses.unix_ns.tolist()
        for message, t, q in zip(mine, poses.translation, poses.rotation, strict=True):
            assert message.value["header"] == standard.header(message.time_ns, "map")
            placed = message.value["pose"]
            assert [placed["position"][k] for k in "xyz"] == t.tolist()
            quaternion = [placed["orientation"][k] for k in "xyzw"]
            assert quaternion == q.tolist()
            assert math.isclose(math.hypot(*quaternion), 1.0, rel_tol=1e-9)


def test_sample_poses_then_the_map(rec: PbstreamRecording) -> None:
    messages = list(standard.standard_messages(rec, None))
    assert Counter(m.topic for m in messages) == {
        "/trajectory_0": 40,
        "/trajectory_1": 40,
        "/map": 1,
    }
    _check_poses(rec, messages)
    grid = messages[-1]
    assert grid.topic == "/map" and grid.type == GRID
    last = max(int(poses.unix_ns[-1]) for poses in rec.trajectories().values())
    assert grid.time_ns == last  # the last node's time
    assert grid.value["header"] == standard.header(last, "map")
    assert grid.value["info"]["map_load_time"] == standard.stamp(last)


def test_the_grid_is_the_ros_map_read_bottom_up(rec: PbstreamRecording, tmp_path: Path) -> None:
    (message,) = rec.standard_messages(Selection.make(kinds=["/map"]))
    info, data = message.value["info"], message.value["data"]
    width, height = info["width"], info["height"]
    assert isinstance(data, np.ndarray) and data.dtype == np.int8 and data.ndim == 1
    assert len(data) == width * height
    assert data.min() >= -1 and data.max() <= 100
    exported = export_ros_map(rec, tmp_path / "map")
    header = exported.pgm.read_bytes().split(b"\n", 4)
    assert list(map(int, header[2].split())) == [width, height]
    pgm = np.frombuffer(header[4], np.uint8).reshape(height, width)
    cells = data.reshape(height, width)[::-1]  # OccupancyGrid rows go up, the PGM's down
    assert np.array_equal(cells == -1, pgm == UNKNOWN)
    known = pgm != UNKNOWN
    expected = np.rint((255.0 - pgm[known]) / 255.0 * 100)
    assert np.array_equal(cells[known], expected)
    # map_server's occupied cells (p > occupied_thresh 0.65 of the YAML) are the cells of 65
    # and more, up to the rounding to whole percent at the threshold itself
    occupied = known & ((255.0 - pgm) / 255.0 > 0.65)
    assert (cells[occupied] >= 65).all() and occupied[cells >= 66].all()
    assert (cells >= 65).any() and ((cells >= 0) & (cells < 20)).any()
    yaml = exported.yaml.read_text()
    origin = [float(v) for v in yaml.split("origin: [")[1].split("]")[0].split(",")]
    placed = info["origin"]["position"]
    assert [placed["x"], placed["y"], placed["z"]] == pytest.approx(origin, rel=1e-5)
    assert info["origin"]["orientation"] == {"x": 0.0, "y": 0.0, "z": 0.0, "w": 1.0}
    assert f"resolution: {info['resolution']:.6g}\n" in yaml


def test_trajectories_interleave_in_time_order(tmp_path: Path) -> None:
    """Three overlapping trajectories (each starts 25 s after the previous one, 30 s long)."""
    path = generate(tmp_path / "three.pbstream", Plan(trajectories=3, nodes=60))
    with _open(path) as rec:
        messages = list(rec.standard_messages())
        _check_poses(rec, messages)
        topics = [m.topic for m in messages]
        assert Counter(topics) == {f"/trajectory_{i}": 60 for i in range(3)} | {"/map": 1}
        assert topics.index("/trajectory_1") < len(topics) - topics[::-1].index("/trajectory_0")


def test_a_3d_state_gives_the_projected_map(tmp_path: Path) -> None:
    """As `ros-map` (and Cartographer's tool) projects 3D submaps, so does `/map`."""
    path = generate(tmp_path / "3d.pbstream", Plan(trajectories=1, nodes=20, dims=3))
    with _open(path) as rec:
        messages = list(rec.standard_messages())
        _check_poses(rec, messages)
        grid = messages[-1]
        assert grid.type == GRID
        info = grid.value["info"]
        assert len(grid.value["data"]) == info["width"] * info["height"]


def test_selections_narrow_the_output(rec: PbstreamRecording) -> None:
    origin_ns = round(rec.start_time * 1e6) * 1000
    ranged = list(rec.standard_messages(Selection.make(start=1.0, end=3.0)))
    poses = [m for m in ranged if m.type == POSE]
    assert len(poses) == 5  # trajectory 0 every 0.5 s, both ends included
    assert all(origin_ns + 1e9 <= m.time_ns <= origin_ns + 3e9 for m in poses)
    assert ranged[-1].topic == "/map" and ranged[-1].time_ns == poses[-1].time_ns
    for kinds, topics in (
        (["/map"], {"/map"}),
        (["map"], {"/map"}),
        (["submap"], {"/map"}),
        (["/trajectory_1"], {"/trajectory_1"}),
        (["node"], {"/trajectory_0", "/trajectory_1"}),
        ([POSE], {"/trajectory_0", "/trajectory_1"}),
        (["/trajectory_0", GRID], {"/trajectory_0", "/map"}),
    ):
        chosen = list(rec.standard_messages(Selection.make(kinds=kinds)))
        assert {m.topic for m in chosen} == topics, kinds
    numbers = rec.numbers_of("node")[:7]
    numbered = list(rec.standard_messages(Selection.make(messages=f"0:{int(numbers[-1]) + 1}")))
    assert len([m for m in numbered if m.type == POSE]) == 7
    assert numbered[-1].topic == "/map"


@pytest.mark.parametrize(
    "selection",
    [
        Selection.make(start=1e6),  # beyond the end
        Selection.make(messages="3:3"),
        Selection.make(kinds=["/trajectory_7"]),
        Selection.make(kinds=["/tf"]),  # the MCAP export's topic, not a standard one here
        Selection.make(kinds=["/trajectory_1"], start=0, end=1),  # trajectory 1 starts at 25 s
    ],
    ids=["late-start", "no-messages", "no-such-trajectory", "mcap-topic", "no-pose-in-range"],
)
def test_an_empty_selection_is_refused_at_the_call(
    rec: PbstreamRecording, selection: Selection
) -> None:
    with pytest.raises(EmptySelectionError, match="selects no"):
        rec.standard_messages(selection)  # before iterating: the export writes nothing
    with pytest.raises(UsageError):
        list(standard.standard_messages(rec, selection))
