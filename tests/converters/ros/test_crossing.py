"""ROS1 bag -> ROS 2 bag -> ROS1 bag, and other formats -> ROS bags, end to end through
`nanorec export --format ros2|ros1`, checked with `rosbags` reading every output."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("rosbags")
pytest.importorskip("mcap")
pytest.importorskip("yaml")

from rosbags.highlevel import AnyReader

from nanorec import registry
from nanorec.cli import _register, app
from nanorec.converters.ros.ros1.generate import generate
from tests.conftest import REALDATA, REPO, make_runner

SAMPLES = REPO / "samples"
REAL_BAGS = sorted((REALDATA / "rosbag").glob("*.bag")) if REALDATA.is_dir() else []
_runner = make_runner()


def nanorec(*args: object) -> tuple[int, str, str]:
    _register()
    result = _runner.invoke(app, [str(a) for a in args])
    assert isinstance(result.exception, SystemExit | None), (args, result.exception)
    return result.exit_code, result.stdout, result.stderr


def plain(value: Any) -> Any:
    """A rosbags message as comparable plain values, without what the crossing changes by
    design: `seq` (ROS 2 has none)."""
    if dataclasses.is_dataclass(value):
        return {
            f.name: plain(getattr(value, f.name))
            for f in dataclasses.fields(value)
            if f.name not in ("seq", "__msgtype__")
        }
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


def read_all(path: Path) -> list[tuple[str, int, str, Any]]:
    """(topic, time, type, plain value) of every message, as rosbags reads them."""
    with AnyReader([path]) as reader:
        return [
            (c.topic, t, c.msgtype, plain(reader.deserialize(raw, c.msgtype)))
            for c, t, raw in reader.messages()
        ]


def _log_fields(value: dict[str, Any]) -> dict[str, Any]:
    return {k: value[k] for k in ("level", "name", "msg", "file", "function", "line")}


def _stable(rows: list[tuple[str, int, str, Any]]) -> list[tuple[str, int, Any]]:
    """Rows sorted by (time, topic, value text); a Log keeps what both ROS have."""
    out = []
    for topic, time, msgtype, value in rows:
        if msgtype.endswith("/Log"):
            value = {**_log_fields(value), "stamp": value["header"]["stamp"]}
        out.append((topic, time, repr(value)))
    return sorted(out)


@pytest.mark.slow
@pytest.mark.realdata
@pytest.mark.parametrize("storage", ["sqlite3", "mcap"])
@pytest.mark.parametrize("bag", REAL_BAGS, ids=[p.name for p in REAL_BAGS])
def test_real_bag_to_ros2_and_back(bag: Path, storage: str, tmp_path: Path) -> None:
    ros2 = tmp_path / "ros2"
    code, out, err = nanorec("export", bag, "--format", "ros2", "--storage", storage, "-o", ros2)
    assert code == 0, err
    assert "left out" not in out  # every type of these bags maps
    original = read_all(bag)
    crossed = read_all(ros2)  # rosbags reads the ROS 2 bag, its types from the bag itself
    assert len(crossed) == len(original)
    assert [r[1] for r in crossed] == sorted(r[1] for r in original)
    with registry.open(ros2) as rec:  # and so does nanorec's own ROS 2 reader
        assert len(rec) == len(original)
        assert all(isinstance(m.value, dict) for m in rec.messages())
    code, text, err = nanorec("info", ros2)
    assert code == 0 and f"Messages:          {len(original)}" in text, err
    assert f"Storage id:        {storage}" in text
    back = tmp_path / "back.bag"
    code, out, err = nanorec("export", ros2, "--format", "ros1", "-o", back)
    assert code == 0, err
    returned = read_all(back)
    assert _stable(returned) == _stable(original)
    with AnyReader([bag]) as first, AnyReader([back]) as second:
        md5 = {c.msgtype: c.digest for c in first.connections}
        md5["tf2_msgs/msg/TFMessage"] = md5.get("tf/msg/tfMessage", "")
        for connection in second.connections:  # ROS's md5 of the types, as ROS1 wrote them
            assert connection.digest == md5[connection.msgtype], connection.msgtype


def test_sample_ros2_bag_to_ros1(tmp_path: Path) -> None:
    back = tmp_path / "robot.bag"
    code, _, err = nanorec("export", SAMPLES / "ros2-robot", "--format", "ros1", "-o", back)
    assert code == 0, err
    with registry.open(SAMPLES / "ros2-robot") as rec:
        count = len(rec)
    rows = read_all(back)
    assert len(rows) == count
    code, text, _ = nanorec("info", back)
    assert code == 0 and "types:" in text


def test_selection_applies(tmp_path: Path) -> None:
    source = SAMPLES / "rosbag-robot.bag"
    with registry.open(source) as rec:
        topics = rec.table_kinds()
        start = rec.start_time
    code, _, err = nanorec(
        "export", source, "-F", "ros2", "-o", tmp_path / "cut", "--type", topics[0],
        "--start", "1", "--end", "2",
    )  # fmt: skip
    assert code == 0, err
    rows = read_all(tmp_path / "cut")
    assert rows and {r[0] for r in rows} == {topics[0]}
    assert all(start + 1 - 1e-6 <= t / 1e9 <= start + 2 + 1e-6 for _, t, _, _ in rows)
    code, _, err = nanorec(
        "export", source, "-F", "ros2", "-o", tmp_path / "none", "--start", "100000"
    )
    assert code == 2 and "selects no" in err and not (tmp_path / "none").exists()


def test_unmappable_type_is_left_out_and_said(tmp_path: Path) -> None:
    bag = tmp_path / "custom.bag"
    generate(bag, seconds=1.0, seed=1)
    text = bag.read_bytes()
    assert b"geometry_msgs/Twist" in text
    # A custom type with a field name ROS 2 refuses (CamelCase), same size as the original
    patched = text.replace(b"float64 x\n", b"float64 X\n")
    bag.write_bytes(patched)
    code, out, err = nanorec("export", bag, "-F", "ros2", "-o", tmp_path / "out")
    assert code == 0, err
    assert "left out: " in out and "not a valid ROS 2 field name" in out


@pytest.mark.parametrize("storage", ["sqlite3", "mcap"])
def test_carla_recording_to_ros2(storage: str, tmp_path: Path) -> None:
    sample = SAMPLES / "carla-0.9.15-town03.log"
    out = tmp_path / "carla"
    code, _, err = nanorec("export", sample, "-F", "ros2", "--storage", storage, "-o", out)
    assert code == 0, err
    rows = read_all(out)
    types = {r[2] for r in rows}
    assert "tf2_msgs/msg/TFMessage" in types
    tf = next(r[3] for r in rows if r[0] == "/tf")
    assert tf["transforms"] and tf["transforms"][0]["header"]["frame_id"] == "map"


def test_pbstream_to_ros2_and_ros1(tmp_path: Path) -> None:
    sample = SAMPLES / "pbstream-small.pbstream"
    code, _, err = nanorec("export", sample, "-F", "ros2", "-o", tmp_path / "map2")
    assert code == 0, err
    rows = read_all(tmp_path / "map2")
    grids = [r[3] for r in rows if r[2] == "nav_msgs/msg/OccupancyGrid"]
    assert len(grids) == 1
    info = grids[0]["info"]
    assert len(grids[0]["data"]) == info["width"] * info["height"] > 0
    code, _, err = nanorec("export", sample, "-F", "ros1", "-o", tmp_path / "map.bag")
    assert code == 0, err
    ros1 = read_all(tmp_path / "map.bag")
    assert len(ros1) == len(rows)
    assert {r[2] for r in ros1} >= {"nav_msgs/msg/OccupancyGrid", "geometry_msgs/msg/PoseStamped"}


REAL_ROS2 = REALDATA / "ros2"


@pytest.mark.realdata
@pytest.mark.parametrize(
    "name", ["rosbag2_humble_py_talker", "rosbag2_py_sqlite3_wbag", "rosbag2_tests_mcap_cdr_test"]
)
def test_real_ros2_bag_to_ros1(name: str, tmp_path: Path) -> None:
    """Bags written by rosbag2 itself: a Humble bag carries no definitions (the bundled Humble
    ones stand in, and the output says so); test_msgs' constants (`bool ...=true`) become
    what genmsg reads, so rosbags' own md5 check of the ROS1 bag passes."""
    source = REAL_ROS2 / name
    if not source.is_dir():
        pytest.skip(f"{source} absent")
    back = tmp_path / "back.bag"
    code, out, err = nanorec("export", source, "--format", "ros1", "-o", back)
    assert code == 0, err
    rows = read_all(back)  # rosbags checks each connection's md5 against its definition
    with registry.open(source) as rec:
        assert len(rows) == len(rec) > 0
    if name == "rosbag2_humble_py_talker":
        assert "bundled with nanorec" in out
        strings = [r[3]["data"] for r in rows if r[2] == "std_msgs/msg/String"]
        assert strings and all(s.startswith("Hello, world! ") for s in strings)


def test_a_storage_file_named_for_the_other_storage_is_refused(tmp_path: Path) -> None:
    """`-o x.db3 --storage mcap` would write MCAP bytes under a sqlite3 name: one line, exit
    2, nothing written."""
    for name, storage in [("x.db3", "mcap"), ("x.mcap", "sqlite3")]:
        output = tmp_path / name
        code, _, err = nanorec(
            "export", SAMPLES / "rosbag-robot.bag", "--format", "ros2", "--storage", storage,
            "-o", output,
        )  # fmt: skip
        assert code == 2 and "does not fit the output's name" in err, err
        assert len(err.strip().splitlines()) == 1
        assert not output.exists()
