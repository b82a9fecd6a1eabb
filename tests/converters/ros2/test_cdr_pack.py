"""The generated CDR encoder (`cdr_pack.Packer`) against the plain one (`cdr_encode.Encoder`):
the same bytes on random values of every bundled type, on every message of the real bags
(decoded, then encoded again), and on the standard types, whose payloads `rosbags` reads back
as the values; what it cannot take, the plain encoder judges."""

from __future__ import annotations

import random
import struct
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("rosbags")

from rosbags.typesys import Stores, get_typestore

from nanorec.converters.ros.bridge.standard import StandardEncoder, ros2msg_text
from nanorec.converters.ros.ros2.bundle import texts
from nanorec.converters.ros.ros2.cdr import Decoder
from nanorec.converters.ros.ros2.cdr_encode import Encoder
from nanorec.converters.ros.ros2.cdr_pack import Packer
from nanorec.converters.ros.ros2.msgdef import SIZES, MsgType, load
from nanorec.errors import NanorecError, UsageError
from tests.converters.ros2.test_cdr import read_file, storage_files

HUMBLE = get_typestore(Stores.ROS2_HUMBLE)
STOCK = sorted(texts("humble"))
STOCK_DEFS = {name: ("ros2msg", ros2msg_text(name)) for name in STOCK}
_RANGES = {
    "int8": (-128, 127), "uint8": (0, 255), "byte": (0, 255), "char": (0, 255),
    "int16": (-(1 << 15), (1 << 15) - 1), "uint16": (0, (1 << 16) - 1),
    "wchar": (0, (1 << 16) - 1), "int32": (-(1 << 31), (1 << 31) - 1),
    "uint32": (0, (1 << 32) - 1), "int64": (-(1 << 63), (1 << 63) - 1),
    "uint64": (0, (1 << 64) - 1),
}  # fmt: skip
_NUMPY = {"uint8": np.uint8, "int32": np.int32, "float32": np.float32, "float64": np.float64}


def random_value(types: dict[str, MsgType], name: str, rng: random.Random) -> Any:
    """A value of `name`: every field filled, sequences of 0 to 3 elements (numeric ones as
    lists or numpy arrays), strings of 0 to 9 characters (so every padding shows up)."""

    def one(type_name: str) -> Any:
        if type_name == "bool":
            return rng.random() < 0.5
        if type_name in ("float32", "float64"):
            return float(np.float32(rng.uniform(-1e3, 1e3))) if rng.random() < 0.5 else 0.5
        if type_name in _RANGES:
            return rng.randint(*_RANGES[type_name])
        if type_name == "string":
            return "".join(rng.choice("abcé_/") for _ in range(rng.randrange(10)))
        if type_name == "wstring":
            return "".join(rng.choice("wñ") for _ in range(rng.randrange(5)))
        return struct_value(type_name)

    def struct_value(type_name: str) -> dict[str, Any]:
        value: dict[str, Any] = {}
        for f in types[type_name].fields:
            if f.array is None:
                value[f.name] = one(f.type)
                continue
            n = f.array if f.array > 0 else rng.randrange(4)
            items = [one(f.type) for _ in range(n)]
            if f.type in _NUMPY and rng.random() < 0.5:
                value[f.name] = np.array(items, _NUMPY[f.type])
            else:
                value[f.name] = items
        return value

    return struct_value(name)


@pytest.mark.parametrize("type_name", sorted(STOCK))
def test_every_bundled_type_packs_as_the_plain_encoder(type_name: str) -> None:
    packer, encoder = Packer(STOCK_DEFS), Encoder(STOCK_DEFS)
    types = load(STOCK_DEFS, type_name)
    rng = random.Random(type_name)
    for _ in range(30):
        value = random_value(types, type_name, rng)
        expected = encoder.encode(type_name, value)
        out = bytearray(b"\x00\x01\x00\x00")
        packer.function(type_name)(value, out)  # the generated code itself, no fallback
        assert bytes(out) == expected
        assert packer.encode(type_name, value) == expected
        assert packer.encode(type_name, value, big_endian=True) == encoder.encode(
            type_name, value, big_endian=True
        )


def test_the_generated_code_really_runs() -> None:
    """Not the plain encoder behind a fallback: the generated function writes the bytes."""
    packer = Packer(STOCK_DEFS)
    value = random_value(load(STOCK_DEFS, "nav_msgs/msg/Odometry"), "nav_msgs/msg/Odometry",
                         random.Random(1))  # fmt: skip
    out = bytearray(b"\x00\x01\x00\x00")
    packer.function("nav_msgs/msg/Odometry")(value, out)
    assert bytes(out) == Encoder(STOCK_DEFS).encode("nav_msgs/msg/Odometry", value)


@pytest.mark.realdata
@pytest.mark.parametrize("path", storage_files(), ids=lambda p: p.parent.name + "/" + p.name)
def test_real_messages_pack_as_they_were(path: Any) -> None:
    """Messages of every type of the real bags (50 of each), decoded and packed again: the
    plain encoder's bytes."""
    carried, messages = read_file(path)
    defs = {**STOCK_DEFS, **carried}
    decoder, packer, encoder = Decoder(defs), Packer(defs), Encoder(defs)
    seen: dict[str, int] = {}
    for type_name, data in messages:
        if seen.get(type_name, 0) >= 50 or data[1] != 1:
            continue
        try:
            value = decoder.decode(type_name, data)
        except NanorecError:  # no definition: the decoder's tests judge those
            continue
        seen[type_name] = seen.get(type_name, 0) + 1
        packed = packer.encode(type_name, value)
        assert packed == encoder.encode(type_name, value)
    if not seen:
        pytest.skip(f"{path.name}: no type with a definition")


_FLOAT = st.floats(allow_nan=False, width=64)
_NAME = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)


def _pose(p: list[float]) -> dict[str, Any]:
    return {
        "position": {"x": p[0], "y": p[1], "z": p[2]},
        "orientation": {"x": p[3], "y": p[4], "z": p[5], "w": p[6]},
    }


@settings(max_examples=60, deadline=None)
@given(
    sec=st.integers(-(1 << 31), (1 << 31) - 1),
    nanosec=st.integers(0, 999_999_999),
    frame=_NAME,
    pose=st.lists(_FLOAT, min_size=7, max_size=7),
)
def test_pose_stamped_reads_back_in_rosbags(
    sec: int, nanosec: int, frame: str, pose: list[float]
) -> None:
    value = {"header": {"stamp": {"sec": sec, "nanosec": nanosec}, "frame_id": frame},
             "pose": _pose(pose)}  # fmt: skip
    encoder = StandardEncoder()
    data = encoder.encode("geometry_msgs/msg/PoseStamped", value)
    assert data == Encoder(encoder.definitions).encode("geometry_msgs/msg/PoseStamped", value)
    back = HUMBLE.deserialize_cdr(data, "geometry_msgs/msg/PoseStamped")
    assert (back.header.stamp.sec, back.header.stamp.nanosec) == (sec, nanosec)
    assert back.header.frame_id == frame
    p = back.pose
    got = [p.position.x, p.position.y, p.position.z, p.orientation.x, p.orientation.y,
           p.orientation.z, p.orientation.w]  # fmt: skip
    assert got == pose


@settings(max_examples=40, deadline=None)
@given(
    width=st.integers(0, 7),
    height=st.integers(0, 5),
    frame=_NAME,
    resolution=st.floats(0.01, 1.0).map(lambda x: float(np.float32(x))),
    seed=st.integers(0, 1 << 30),
)
def test_occupancy_grid_reads_back_in_rosbags(
    width: int, height: int, frame: str, resolution: float, seed: int
) -> None:
    cells = np.random.default_rng(seed).integers(-1, 101, width * height).astype(np.int8)
    value = {
        "header": {"stamp": {"sec": 3, "nanosec": 4}, "frame_id": frame},
        "info": {
            "map_load_time": {"sec": 3, "nanosec": 4},
            "resolution": resolution,
            "width": width,
            "height": height,
            "origin": _pose([1.5, -2.0, 0.0, 0.0, 0.0, 0.0, 1.0]),
        },
        "data": cells,
    }
    encoder = StandardEncoder()
    data = encoder.encode("nav_msgs/msg/OccupancyGrid", value)
    assert data == Encoder(encoder.definitions).encode("nav_msgs/msg/OccupancyGrid", value)
    back = HUMBLE.deserialize_cdr(data, "nav_msgs/msg/OccupancyGrid")
    assert back.header.frame_id == frame
    assert (back.info.width, back.info.height, back.info.resolution) == (width, height, resolution)
    assert back.data.tolist() == cells.tolist()


@pytest.mark.parametrize(
    ("value", "error"),
    [
        ({"header": {"stamp": {"sec": 1}, "frame_id": "map"}}, KeyError),  # no nanosec
        ({"header": {"stamp": {"sec": 1 << 40, "nanosec": 0}, "frame_id": ""}}, struct.error),
        ({"header": {"stamp": {"sec": 0, "nanosec": 0}, "frame_id": None}}, TypeError),
    ],
)
def test_what_it_cannot_take_the_plain_encoder_judges(value: dict[str, Any], error: type) -> None:
    value = {**value, "pose": _pose([0.0] * 7)}
    with pytest.raises(error):
        Encoder(STOCK_DEFS).encode("geometry_msgs/msg/PoseStamped", value)
    with pytest.raises(error):
        Packer(STOCK_DEFS).encode("geometry_msgs/msg/PoseStamped", value)


def test_a_fixed_array_of_the_wrong_length_is_a_usage_error() -> None:
    value = random_value(load(STOCK_DEFS, "sensor_msgs/msg/Imu"), "sensor_msgs/msg/Imu",
                         random.Random(2))  # fmt: skip
    value["orientation_covariance"] = [0.0] * 8
    with pytest.raises(UsageError, match="orientation_covariance: 8 elements, the array has 9"):
        Packer(STOCK_DEFS).encode("sensor_msgs/msg/Imu", value)


def test_sizes_cover_every_primitive() -> None:
    assert set(_RANGES) | {"bool", "float32", "float64"} == set(SIZES)
