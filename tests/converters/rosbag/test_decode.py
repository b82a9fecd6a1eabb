"""Messages decoded from their connection's definition, without ROS: the same values as
`rosbags` gives, numeric arrays as numpy, bad payloads and definitions handled."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from nanorec import registry
from nanorec.converters.ros.ros1.msgdef import Decoder, parse_definition
from nanorec.converters.ros.ros1.serialize import encode
from nanorec.converters.ros.ros1.stock import STOCK
from nanorec.errors import FormatError
from tests.converters.rosbag.bags import make_bag, ours, plain

TRICKY = """# a comment
int32 A=1
string S=with # a hash
uint8[3] rgb
float64[] values
time[] stamps
duration d
Point[2] corners
Header header
bool ok
================================================================================
MSG: geometry_msgs/Point
float64 x
float64 y
float64 z
================================================================================
MSG: std_msgs/Header
uint32 seq
time stamp
string frame_id
"""


def test_definition_with_constants_arrays_and_nested_types() -> None:
    types = parse_definition("pkg/Tricky", TRICKY)
    assert [f.name for f in types["pkg/Tricky"]] == [
        "rgb",
        "values",
        "stamps",
        "d",
        "corners",
        "header",
        "ok",
    ]
    value = {
        "rgb": np.array([1, 2, 3], np.uint8),
        "values": np.array([0.5, -2.0]),
        "stamps": [{"secs": 1, "nsecs": 2}],
        "d": {"secs": -1, "nsecs": 5},
        "corners": [{"x": 1.0, "y": 2.0, "z": 3.0}, {"x": 4.0, "y": 5.0, "z": 6.0}],
        "header": {"seq": 7, "stamp": {"secs": 8, "nsecs": 9}, "frame_id": "map"},
        "ok": True,
    }
    data = encode(types, "pkg/Tricky", value)
    decoded = Decoder("pkg/Tricky", TRICKY).decode(data)
    assert isinstance(decoded["values"], np.ndarray) and decoded["values"].dtype == np.float64
    assert ours(decoded) == ours(value)
    with pytest.raises(FormatError):
        Decoder("pkg/Tricky", TRICKY).decode(data[:-3])
    with pytest.raises(FormatError):
        Decoder("pkg/Tricky", TRICKY).decode(data + b"\x00")


def test_string_that_is_not_utf8_stays_bytes() -> None:
    decoder = Decoder("std_msgs/String", STOCK["std_msgs/String"][1])
    assert decoder.decode(b"\x02\x00\x00\x00\xff\xfe") == {"data": b"\xff\xfe"}
    with pytest.raises(FormatError):
        decoder.decode(b"\xff\xff\xff\x7f")  # a length far past the payload


def test_synthetic_bag_decodes_as_rosbags(tmp_path: Path) -> None:
    rosbag1 = pytest.importorskip("rosbags.rosbag1")
    typesys = pytest.importorskip("rosbags.typesys")
    store = typesys.get_typestore(typesys.Stores.ROS1_NOETIC)
    bag = make_bag(tmp_path, seconds=1.0)
    with rosbag1.Reader(bag) as reader:
        theirs = sorted(
            (t, c.topic, repr(plain(store.deserialize_ros1(raw, c.msgtype))))
            for c, t, raw in reader.messages()
        )
    with registry.open(bag) as recording:
        mine = sorted(
            (recording.time_ns(n), recording.kind_of(n), repr(ours(recording.decode(n))))
            for n in range(len(recording))
        )
        image = next(
            recording.decode(n)
            for n in range(len(recording))
            if recording.kind_of(n) == "/camera/image"
        )
        assert (
            image["data"].dtype == np.uint8
            and image["data"].size == image["height"] * image["step"]
        )
    assert mine == theirs


def test_unparsable_definition_gives_raw_payload(tmp_path: Path) -> None:
    bag = make_bag(tmp_path, seconds=0.2)
    data = bag.read_bytes().replace(b"float64 x\n", b"flo@t64 x\n", 1)
    broken = tmp_path / "broken.bag"
    broken.write_bytes(data)
    with registry.open(broken) as recording:
        values = [recording.decode(n) for n in range(len(recording))]
    assert any(isinstance(v, bytes) for v in values)
    assert any(isinstance(v, dict) for v in values)


def test_images_and_point_clouds_as_shaped_arrays(tmp_path: Path) -> None:
    from nanorec.converters.ros.ros1.arrays import image_array, pointcloud_array

    bag = make_bag(tmp_path, seconds=1.0)
    with registry.open(bag) as recording:
        kinds = [recording.kind_of(n) for n in range(len(recording))]
        image = recording.decode(kinds.index("/camera/image"))
        cloud = recording.decode(kinds.index("/points"))
    pixels = image_array(image)
    assert pixels.shape == (48, 64, 3) and (pixels == pixels[0, 0, 0]).all()
    points = pointcloud_array(cloud)
    assert points.shape == (256,) and points.dtype.names == ("x", "y", "z")
    assert ((points["x"] >= 0) & (points["x"] < 1)).all()
    cloud["data"] = cloud["data"][:-1]
    with pytest.raises(FormatError):
        pointcloud_array(cloud)
