"""A bag draws itself for `nanorec view` (ROS1 and ROS 2 through `common/view.py`): the
overview's tracks are `plot`'s paths, a scene's points are the latest pose messages'
positions, images come as PNG (raw) or as their bytes (compressed)."""

from __future__ import annotations

import random
import struct
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from nanorec import registry
from nanorec.archive.index import Index
from nanorec.contract import Viewable
from nanorec.converters.ros.common.rosplot_data import EARTH_RADIUS_M
from nanorec.converters.ros.common.view import MAX_IMAGE_TOPICS, RosView, _mime
from nanorec.errors import FormatError, OutOfRangeError, UnsupportedError
from nanorec.outputs.layers import check_view
from tests.conftest import REALDATA, SAMPLES

ROBOT = SAMPLES / "rosbag-robot.bag"
REAL_ROS2 = sorted(p.parent for p in (REALDATA / "ros2").glob("*/metadata.yaml"))
ROS2_SAMPLES = [SAMPLES / "ros2-robot", SAMPLES / "ros2-robot.db3", SAMPLES / "ros2-humble-robot"]


def layer(view: dict[str, Any], name: str) -> dict[str, Any]:
    (found,) = [lay for lay in view["layers"] if lay["name"] == name]
    return found  # type: ignore[no-any-return]


def _open(path: Path) -> Any:
    """The bag's recording; skipped when it needs an extra not installed (the
    lowest-versions lane is core only: no zstandard for MCAP chunks)."""
    try:
        return registry.open(path)
    except UnsupportedError as error:
        if "pip install" not in str(error):
            raise
        pytest.skip(str(error))


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def png_pixels(data: bytes) -> np.ndarray:
    """A PNG written by `nanorec.outputs.png` (filter 0 rows) back as pixels."""
    width, height = png_size(data)
    channels = {0: 1, 2: 3, 4: 2, 6: 4}[data[25]]
    body = data[33:]
    idat = b""
    while body:
        (size,) = struct.unpack(">I", body[:4])
        if body[4:8] == b"IDAT":
            idat += body[8 : 8 + size]
        body = body[12 + size :]
    rows = np.frombuffer(zlib.decompress(idat), np.uint8).reshape(height, -1)
    assert not rows[:, 0].any()
    return rows[:, 1:].reshape(height, width, channels)


@pytest.fixture(scope="module")
def robot() -> Iterator[Any]:
    with _open(ROBOT) as rec:
        yield rec


def odom_positions(rec: Any, topic: str = "/odom") -> np.ndarray:
    """Each message's position as `rows` tabulates it (ROS1's Odometry or ROS 2's pose)."""
    rows = list(rec.rows(topic))
    keys = ("pose.pose.position.x", "pose.pose.position.y")
    if keys[0] not in rows[0]:
        keys = ("pose.position.x", "pose.position.y")
    return np.array([[row["number"], row[keys[0]], row[keys[1]]] for row in rows])


def test_the_sample_bag_is_viewable(robot: Any) -> None:
    assert isinstance(robot, Viewable)
    overview = robot.view_overview()
    check_view(overview, overview=True)
    tracks = layer(overview, "tracks")
    assert tracks["classes"] == ["/odom"] and tracks["starts"].tolist() == [0]
    odom = odom_positions(robot)
    assert tracks["x"] == pytest.approx(odom[:, 1]) and tracks["y"] == pytest.approx(odom[:, 2])
    x0, y0, x1, y1 = overview["bounds"]
    assert (x0, x1) == pytest.approx((odom[:, 1].min(), odom[:, 1].max()))
    assert (y0, y1) == pytest.approx((odom[:, 2].min(), odom[:, 2].max()))


@pytest.mark.parametrize("path", [ROBOT, *ROS2_SAMPLES], ids=lambda p: p.name)
def test_scene_points_are_the_latest_pose(path: Path) -> None:
    with _open(path) as rec:
        odom = odom_positions(rec)
        times = rec.reader.index.timestamp_us
        picked = random.Random(3).sample(range(len(rec)), 15)
        for number in sorted({0, len(rec) - 1, *picked}):
            scene = rec.view_scene(number)
            check_view(scene, overview=False)
            poses = layer(scene, "poses")
            before = odom[times[odom[:, 0].astype(int)] <= times[number]]
            if not len(before):
                assert not len(poses["x"])
                continue
            assert poses["classes"] == ["/odom"]
            assert (poses["x"][0], poses["y"][0]) == pytest.approx(tuple(before[-1, 1:]))


def test_raw_images_come_as_png(robot: Any) -> None:
    cameras = np.flatnonzero(robot.reader.index.has_type("/camera/image"))
    first = int(cameras[0])
    assert not [lay for lay in robot.view_scene(first - 1)["layers"] if lay["kind"] == "image"]
    picture = layer(robot.view_scene(first + 1), "/camera/image")
    assert picture["mime"] == "image/png" and "extent" not in picture
    message = robot.decode(first)
    assert png_size(picture["data"]) == (message["width"], message["height"])
    pixels = png_pixels(picture["data"])
    if message["encoding"] == "rgb8":
        expected = np.asarray(message["data"], np.uint8).reshape(pixels.shape)
        assert np.array_equal(pixels, expected)
    assert robot.view_scene(first + 1)["layers"][1] is picture  # the same frame: kept


def test_new_definitions_make_a_new_view() -> None:
    """A ROS 2 recording decodes anew when its `msg_path` or `distro` changes; so must its
    view, which keeps decoded messages (the last image of each topic)."""
    with _open(SAMPLES / "ros2-robot") as rec:
        first = rec.viewer
        assert rec.viewer is first
        rec.msg_path = []
        assert rec.viewer is not first


def test_out_of_range(robot: Any) -> None:
    with pytest.raises(OutOfRangeError):
        robot.view_scene(len(robot))
    check_view(robot.view_scene(-1), overview=False)


# -- a recording of standard messages, made to order ----------------------------------------


class _Reader:
    def __init__(self, index: Index) -> None:
        self.index = index


class Made:
    """`RosMessages` over chosen decoded messages: (time s, topic, type, value) each."""

    def __init__(self, messages: list[tuple[float, str, str, Any]]) -> None:
        topics = sorted({m[1] for m in messages})
        count = len(messages)
        self.values = [m[3] for m in messages]
        self.types = {m[1]: m[2] for m in messages}
        zeros = np.zeros(count, np.int64)
        self.reader = _Reader(
            Index(
                offset=zeros,
                length=zeros,
                timestamp_us=np.array([round(m[0] * 1e6) for m in messages], np.int64),
                crc=np.zeros(count, np.uint32),
                crc_known=np.zeros(count, bool),
                flags=np.zeros(count, np.uint64),
                types_code=np.array([topics.index(m[1]) for m in messages], np.uint8),
                types_table=[(topic,) for topic in topics],
            )
        )

    def table_kinds(self) -> list[str]:
        return sorted(self.types)

    def type_of(self, topic: str) -> str:
        return self.types.get(topic, "")

    def decode(self, number: int) -> Any:
        value = self.values[number]
        if isinstance(value, Exception):
            raise value
        return value


def fix(lon: float, lat: float, status: int = 0) -> dict[str, Any]:
    return {"status": {"status": status}, "longitude": lon, "latitude": lat}


def tf(*moves: tuple[str, str, float, float]) -> dict[str, Any]:
    return {
        "transforms": [
            {
                "header": {"frame_id": parent},
                "child_frame_id": child,
                "transform": {"translation": {"x": x, "y": y, "z": 0.0}},
            }
            for parent, child, x, y in moves
        ]
    }


def test_gps_tf_and_compressed_images() -> None:
    jpeg = b"\xff\xd8\xff\xe0fake jpeg\xff\xd9"
    made = Made(
        [
            (0.0, "/fix", "sensor_msgs/msg/NavSatFix", fix(10.0, 45.0, status=-1)),  # no fix
            (0.1, "/fix", "sensor_msgs/msg/NavSatFix", fix(10.0, 45.0)),
            (0.2, "/tf", "tf2_msgs/msg/TFMessage", tf(("map", "base", 1.0, 2.0))),
            (0.3, "/cam", "sensor_msgs/msg/CompressedImage", {"format": "jpeg", "data": jpeg}),
            (0.4, "/fix", "sensor_msgs/msg/NavSatFix", fix(10.001, 45.001)),
            (0.5, "/tf", "tf2_msgs/msg/TFMessage", tf(("map", "arm", 5.0, 5.0))),
            (0.6, "/bad", "geometry_msgs/msg/PoseStamped", FormatError("does not decode")),
            (0.7, "/cam", "sensor_msgs/msg/CompressedImage", {"format": "bmp", "data": b"BM"}),
        ]
    )
    view = RosView(made)
    overview = view.overview
    check_view(overview, overview=True)
    tracks = layer(overview, "tracks")
    assert tracks["classes"] == ["/fix", "tf map → arm", "tf map → base"]
    gps = next(i for i, c in enumerate(tracks["class"].tolist()) if c == 0)
    start = tracks["starts"][gps]
    east = np.radians(0.001) * np.cos(np.radians(45.0)) * EARTH_RADIUS_M
    north = np.radians(0.001) * EARTH_RADIUS_M
    assert tracks["x"][start : start + 2] == pytest.approx([0.0, east])
    assert tracks["y"][start : start + 2] == pytest.approx([0.0, north])
    ends = [*tracks["starts"][1:].tolist(), len(tracks["x"])]
    assert ends[gps] - start == 2  # the fix without a position is left out

    first = view.scene(0)
    check_view(first, overview=False)
    assert not len(layer(first, "poses")["x"])  # a fix without a position: none
    later = view.scene(5)
    poses = layer(later, "poses")
    places = {
        poses["classes"][c]: (x, y)
        for c, x, y in zip(poses["class"].tolist(), poses["x"], poses["y"], strict=True)
    }
    assert places["tf map → base"] == pytest.approx((1.0, 2.0))  # from the earlier message
    assert places["tf map → arm"] == pytest.approx((5.0, 5.0))
    assert places["/fix"] == pytest.approx((east, north))
    picture = layer(later, "/cam")
    assert picture["mime"] == "image/jpeg" and picture["data"] == jpeg
    last = view.scene(7)  # an unknown compression and an undecodable pose: left out
    check_view(last, overview=False)
    assert [lay["kind"] for lay in last["layers"]] == ["points"]


def test_mimes() -> None:
    assert _mime("jpeg") == _mime("JPG") == "image/jpeg"
    assert _mime("rgb8; jpeg compressed bgr8") == "image/jpeg"
    assert _mime("16UC1; png compressed") == "image/png"
    assert _mime("bmp") is None and _mime("") is None


def test_no_poses_is_empty_layers() -> None:
    made = Made([(0.1 * k, "/chatter", "std_msgs/msg/String", {"data": "hi"}) for k in range(3)])
    view = RosView(made)
    check_view(view.overview, overview=True)
    assert not len(layer(view.overview, "tracks")["x"])
    for number in (0, 2):
        scene = view.scene(number)
        check_view(scene, overview=False)
        assert [lay["kind"] for lay in scene["layers"]] == ["points"]
        assert not len(scene["layers"][0]["x"])


def test_images_per_scene_are_bounded() -> None:
    made = Made(
        [
            (0.1, f"/cam{k}", "sensor_msgs/CompressedImage", {"format": "png", "data": b"x"})
            for k in range(MAX_IMAGE_TOPICS + 2)
        ]
    )
    scene = RosView(made).scene(len(made.values) - 1)
    assert len([lay for lay in scene["layers"] if lay["kind"] == "image"]) == MAX_IMAGE_TOPICS


@pytest.mark.realdata
def test_real_turtles_and_gps(realdata_dir: Path) -> None:
    with _open(realdata_dir / "rosbag" / "rosbagjs_example.bag") as rec:
        overview = rec.view_overview()
        check_view(overview, overview=True)
        tracks = layer(overview, "tracks")
        assert {"tf world → turtle1", "/turtle1/pose"} <= set(tracks["classes"])
        for number in (0, len(rec) // 2, len(rec) - 1):
            check_view(rec.view_scene(number), overview=False)
    with _open(realdata_dir / "rosbag" / "waypoint_follower_test.bag") as rec:
        poses = layer(rec.view_scene(len(rec) - 1), "poses")
        assert "/gps/fix" in poses["classes"]
        check_view(rec.view_overview(), overview=True)


@pytest.mark.realdata
@pytest.mark.parametrize("path", REAL_ROS2, ids=lambda p: p.name)
def test_real_ros2_bags_view(path: Path) -> None:
    with _open(path) as rec:
        check_view(rec.view_overview(), overview=True)
        for number in sorted({0, len(rec) // 2, len(rec) - 1}) if len(rec) else ():
            check_view(rec.view_scene(number), overview=False)
