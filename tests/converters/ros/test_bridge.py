"""The ROS1 <-> ROS 2 bridge: type mapping and byte-level transcoders, checked against
rosbags (an independent implementation) on every message of the real bags and on synthetic
types that exercise alignment, arrays and the fields the mapping changes."""

from __future__ import annotations

import dataclasses
import random
import struct
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from nanorec.converters.ros.bridge import texts
from nanorec.converters.ros.bridge.transcode import LEVELS_TO_ROS1, LEVELS_TO_ROS2
from nanorec.converters.ros.bridge.types import (
    Crossing,
    Unmappable,
    ros1_to_ros2,
    ros2_to_ros1,
)
from nanorec.converters.ros.ros1 import msgdef as ros1def
from nanorec.converters.ros.ros2 import msgdef as ros2def
from nanorec.converters.ros.ros2.cdr import Decoder as CdrDecoder
from nanorec.converters.ros.ros2.cdr_encode import Encoder
from nanorec.errors import FormatError, UnsupportedError
from tests.conftest import REALDATA

typesys = pytest.importorskip("rosbags.typesys")
FOLDER = REALDATA / "rosbag"
BAGS = sorted(FOLDER.glob("*.bag")) if FOLDER.is_dir() else []
SEP = "=" * 80
CAMELCASE_FIELDS = {"D": "d", "K": "k", "R": "r", "P": "p"}


# -- value normalization ------------------------------------------------------------------------


def _signed32(x: int) -> int:
    return x - (1 << 32) if x >= 1 << 31 else x


def as_ros2(value: Any) -> Any:
    """Our ROS1 decoder's values as the ROS 2 side has them (the mapping's changes applied)."""
    if isinstance(value, dict):
        keys = list(value)
        if keys == ["secs", "nsecs"]:
            return {"sec": _signed32(value["secs"]), "nanosec": value["nsecs"] & 0xFFFFFFFF}
        if keys == ["seq", "stamp", "frame_id"]:
            return {"stamp": as_ros2(value["stamp"]), "frame_id": value["frame_id"]}
        if keys[:2] == ["header", "level"] and keys[-1] == "topics":
            level = value["level"] & 0xFF
            return {
                "stamp": as_ros2(value["header"]["stamp"]),
                "level": LEVELS_TO_ROS2.get(level, level),
                **{k: value[k] for k in ("name", "msg", "file", "function", "line")},
            }
        rename = CAMELCASE_FIELDS if "distortion_model" in value else {}
        return {rename.get(k, k): as_ros2(v) for k, v in value.items()}
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, list):
        return [as_ros2(v) for v in value]
    return value


def ours2(value: Any) -> Any:
    """Our CDR decoder's values, plain (no empty-struct placeholder)."""
    if isinstance(value, dict):
        return {k: ours2(v) for k, v in value.items() if k != ros2def.EMPTY_FIELD}
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, list):
        return [ours2(v) for v in value]
    return value


def theirs2(value: Any) -> Any:
    """A rosbags message as plain values (constants left out)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        names = [
            f.name
            for f in dataclasses.fields(value)
            if f.default is dataclasses.MISSING
            and f.name not in ("__msgtype__", ros2def.EMPTY_FIELD)
        ]
        return {n: theirs2(getattr(value, n)) for n in names}
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, list):
        return [theirs2(v) for v in value]
    return value


def store_of(text: str, name: str) -> Any:
    store = typesys.get_typestore(typesys.Stores.EMPTY)
    store.register(typesys.get_types_from_msg(text, name))
    return store


def expected_back(store1: Any, raw: bytes, msgtype: str) -> bytes:
    """The ROS1 bytes a round trip must give: Header.seq 0; Log frame_id, topics empty."""

    def fix(value: Any) -> Any:
        if not dataclasses.is_dataclass(value) or isinstance(value, type):
            return [fix(v) for v in value] if isinstance(value, list) else value
        changes = {f.name: fix(getattr(value, f.name)) for f in dataclasses.fields(value)
                   if f.default is dataclasses.MISSING and f.name != "__msgtype__"}  # fmt: skip
        kind = value.__msgtype__  # type: ignore[attr-defined]
        if kind == "std_msgs/msg/Header":
            changes["seq"] = 0
        if kind == "rosgraph_msgs/msg/Log":
            changes["header"] = dataclasses.replace(changes["header"], frame_id="")
            changes["topics"] = []
            level = changes["level"] & 0xFF
            back = LEVELS_TO_ROS1.get(LEVELS_TO_ROS2.get(level, level), level)
            changes["level"] = back - 256 if back > 127 else back
        return dataclasses.replace(value, **changes)

    message = fix(store1.deserialize_ros1(raw, msgtype))
    return bytes(store1.serialize_ros1(message, msgtype))


# -- the real bags ------------------------------------------------------------------------------


def _connections(bag: Path) -> list[tuple[str, str, list[bytes]]]:
    rosbag1 = pytest.importorskip("rosbags.rosbag1")
    found: dict[int, tuple[str, str, list[bytes]]] = {}
    with rosbag1.Reader(bag) as reader:
        for c in reader.connections:
            found[c.id] = (c.msgtype.replace("/msg/", "/"), c.msgdef.data, [])
        for c, _, raw in reader.messages():
            found[c.id][2].append(bytes(raw))
    return list(found.values())


@pytest.mark.realdata
@pytest.mark.skipif(not BAGS, reason="../shared/realdata/rosbag absent")
@pytest.mark.parametrize("bag", BAGS, ids=lambda p: p.stem)
def test_every_real_message_crosses_and_comes_back(bag: Path) -> None:
    for ros1_type, definition, payloads in _connections(bag):
        there = ros1_to_ros2(ros1_type, definition)
        ros2def.parse_definition(there.target_type, "ros2msg", there.target_text)
        back = ros2_to_ros1(there.target_type, {there.target_type: ("ros2msg", there.target_text)})
        assert back.target_type == ros1_type.replace("tf/tfMessage", "tf2_msgs/TFMessage")
        ros1 = ros1def.Decoder(ros1_type, definition)
        cdr = CdrDecoder({there.target_type: ("ros2msg", there.target_text)})
        store2 = store_of(there.target_text, there.target_type)
        name1 = ros2def.canonical(ros1_type)  # how rosbags names it
        store1 = store_of(definition, name1)
        rosbags_agrees = there.target_type != "rcl_interfaces/msg/Log"
        for raw in payloads:
            payload = there.transcode(raw)
            assert payload[:4] == b"\x00\x01\x00\x00"
            want = as_ros2(ros1.decode(raw))
            assert repr(ours2(cdr.decode(there.target_type, payload))) == repr(want)
            theirs = store2.deserialize_cdr(payload, there.target_type)
            assert repr(theirs2(theirs)) == repr(want)
            if rosbags_agrees:
                assert payload == bytes(store2.ros1_to_cdr(raw, there.target_type))
                assert back.transcode(payload) == bytes(
                    store2.cdr_to_ros1(payload, there.target_type)
                )
            assert back.transcode(payload) == expected_back(store1, raw, name1)


@pytest.mark.realdata
@pytest.mark.skipif(not BAGS, reason="../shared/realdata/rosbag absent")
def test_log_comes_back_with_ros_own_text() -> None:
    """rosgraph_msgs/Log out of ROS 2 carries the very text ROS1 bags carry (so the same md5)."""
    bag = FOLDER / "rosbagjs_example.bag"
    (definition,) = {d for t, d, _ in _connections(bag) if t == "rosgraph_msgs/Log"}
    there = ros1_to_ros2("rosgraph_msgs/Log", definition)
    back = ros2_to_ros1(there.target_type, {there.target_type: ("ros2msg", there.target_text)})
    assert back.target_text == definition


@pytest.mark.realdata
@pytest.mark.skipif(not BAGS, reason="../shared/realdata/rosbag absent")
def test_truncated_real_payloads_are_format_errors() -> None:
    for ros1_type, definition, payloads in _connections(FOLDER / "waypoint_follower_test.bag"):
        there = ros1_to_ros2(ros1_type, definition)
        back = ros2_to_ros1(there.target_type, {there.target_type: ("ros2msg", there.target_text)})
        raw = max(payloads[:20], key=len)
        _all_cuts_fail(there, back, raw)


def _all_cuts_fail(there: Crossing, back: Crossing, raw: bytes) -> None:
    payload = there.transcode(raw)
    for cut in range(len(raw)):
        with pytest.raises(FormatError):
            there.transcode(raw[:cut])
    for cut in range(len(payload)):
        with pytest.raises(FormatError):
            back.transcode(payload[:cut])
    with pytest.raises(FormatError):
        there.transcode(raw + b"\x00")
    with pytest.raises(FormatError):
        back.transcode(payload + b"\x00" * 4)


# -- synthetic types ----------------------------------------------------------------------------

LOG_DEFINITION = texts.ROS1_LOG + f"\n{SEP}\nMSG: std_msgs/Header\n" + texts.ROS1_HEADER


def _ros1_string(s: bytes) -> bytes:
    return struct.pack("<I", len(s)) + s


def test_log_levels_and_dropped_fields() -> None:
    there = ros1_to_ros2("rosgraph_msgs/Log", LOG_DEFINITION)
    assert there.target_type == "rcl_interfaces/msg/Log"
    assert any("seq" in n for n in there.notes) and any("levels" in n for n in there.notes)
    back = ros2_to_ros1(there.target_type, {there.target_type: ("ros2msg", there.target_text)})
    assert back.target_type == "rosgraph_msgs/Log"
    assert back.target_text == LOG_DEFINITION
    decoder = CdrDecoder({there.target_type: ("ros2msg", there.target_text)})
    for ros1_level, ros2_level in [(1, 10), (2, 20), (4, 30), (8, 40), (16, 50), (3, 3)]:
        raw = (
            struct.pack("<III", 7, 100, 200) + _ros1_string(b"frame")
            + struct.pack("<b", ros1_level) + b"".join(_ros1_string(s) for s in
            (b"node", b"hello", b"f.cpp", b"main")) + struct.pack("<I", 42)
            + struct.pack("<I", 2) + _ros1_string(b"/a") + _ros1_string(b"/bb")
        )  # fmt: skip
        payload = there.transcode(raw)
        value = ours2(decoder.decode(there.target_type, payload))
        assert value == {"stamp": {"sec": 100, "nanosec": 200}, "level": ros2_level,
                         "name": "node", "msg": "hello", "file": "f.cpp", "function": "main",
                         "line": 42}  # fmt: skip
        theirs = store_of(there.target_text, there.target_type).deserialize_cdr(
            payload, there.target_type
        )
        assert theirs.level == ros2_level and theirs.stamp.nanosec == 200
        again = ros1def.Decoder("rosgraph_msgs/Log", LOG_DEFINITION).decode(back.transcode(payload))
        assert again["header"] == {"seq": 0, "stamp": {"secs": 100, "nsecs": 200}, "frame_id": ""}
        assert again["level"] == ros1_level and again["topics"] == [] and again["line"] == 42
        _all_cuts_fail(there, back, raw)


CAMERA_INFO = f"""Header header
uint32 height
uint32 width
string distortion_model
float64[] D
float64[9]  K # intrinsic camera matrix
float64[9] R
float64[12] P
uint32 binning_x
uint32 binning_y
RegionOfInterest roi
{SEP}
MSG: std_msgs/Header
{texts.ROS1_HEADER}
{SEP}
MSG: sensor_msgs/RegionOfInterest
uint32 x_offset
uint32 y_offset
uint32 height
uint32 width
bool do_rectify
"""


def test_camera_info_fields_are_renamed() -> None:
    there = ros1_to_ros2("sensor_msgs/CameraInfo", CAMERA_INFO)
    assert there.target_type == "sensor_msgs/msg/CameraInfo"
    first = there.target_text.split(SEP)[0]
    assert "float64[] d\n" in first and "float64[9]  k # intrinsic camera matrix" in first
    assert "float64[12] p\n" in first and "MSG: sensor_msgs/RegionOfInterest" in there.target_text
    types = ros2def.parse_definition(there.target_type, "ros2msg", there.target_text)
    assert [f.name for f in types["sensor_msgs/msg/CameraInfo"].fields][4:8] == list("dkrp")
    store = store_of(there.target_text, there.target_type)
    value = {"header": {"stamp": {"sec": 5, "nanosec": 6}, "frame_id": "cam"}, "height": 480,
             "width": 640, "distortion_model": "plumb_bob", "d": [0.1, 0.2, 0.0, 0.0, 0.3],
             "k": [1.0] * 9, "r": [2.0] * 9, "p": [3.0] * 12, "binning_x": 0, "binning_y": 1,
             "roi": {"x_offset": 1, "y_offset": 2, "height": 3, "width": 4,
                     "do_rectify": True}}  # fmt: skip
    payload = Encoder({there.target_type: ("ros2msg", there.target_text)}).encode(
        there.target_type, value
    )
    back = ros2_to_ros1(there.target_type, {there.target_type: ("ros2msg", there.target_text)})
    assert back.target_type == "sensor_msgs/CameraInfo"
    assert "float64[] D\nfloat64[9] K\n" in back.target_text
    raw = back.transcode(payload)
    assert raw == bytes(store.cdr_to_ros1(payload, there.target_type))
    assert there.transcode(raw) == payload
    decoded = ros1def.Decoder(back.target_type, back.target_text).decode(raw)
    assert as_ros2(decoded) == value


CUSTOM = f"""# a custom type, copied by structure
uint8 MODE_A=1
string GREETING=hello "world" # all of this
bool a
int8 b
byte c
float64 d
uint16[] e
float64[] f
Inner[2] fixed
Inner[] items
string[3] names
time t
duration[] ds
char ch
int64[2] big
bool z
{SEP}
MSG: my_pkg/Inner
uint8 x
float64[] y
string s
Empty[] nothing
{SEP}
MSG: my_pkg/Empty
"""


def _inner(n: int) -> dict[str, Any]:
    return {"x": n, "y": [float(i) for i in range(n)], "s": "i" * n, "nothing": [{}] * (n % 3)}


def _custom(n: int) -> dict[str, Any]:
    return {
        "a": bool(n % 2), "b": -n, "c": n % 256, "d": n / 3, "e": list(range(n)),
        "f": [float(-i) for i in range(n)], "fixed": [_inner(n), _inner(n + 1)],
        "items": [_inner(i) for i in range(n)], "names": ["", "é" * n, "x"],
        "t": {"sec": n, "nanosec": 7}, "ds": [{"sec": -i, "nanosec": i} for i in range(n)],
        "ch": 65 + n, "big": [-(1 << 40), n], "z": True,
    }  # fmt: skip


@pytest.mark.parametrize("n", [0, 1, 2, 3, 5])
def test_custom_type_is_copied_by_structure(n: int) -> None:
    there = ros1_to_ros2("my_pkg/Bar", CUSTOM)
    assert there.target_type == "my_pkg/msg/Bar"
    assert there.notes == ()
    first = there.target_text.split(SEP)[0]
    assert first.startswith("# a custom type, copied by structure\nuint8 MODE_A=1\n")
    assert "byte c\n" in first and "char ch\n" in first and "builtin_interfaces/Time t" in first
    assert "my_pkg/Inner[2] fixed" in first and "builtin_interfaces/Duration[] ds" in first
    definitions = {there.target_type: ("ros2msg", there.target_text)}
    types = ros2def.parse_definition(there.target_type, "ros2msg", there.target_text)
    assert types["my_pkg/msg/Empty"].fields[0].name == ros2def.EMPTY_FIELD
    value = _custom(n)
    payload = Encoder(definitions).encode(there.target_type, value)
    back = ros2_to_ros1(there.target_type, definitions)
    assert back.target_type == "my_pkg/Bar"
    raw = back.transcode(payload)
    assert there.transcode(raw) == payload
    assert as_ros2(ros1def.Decoder("my_pkg/Bar", CUSTOM).decode(raw)) == ours2(
        CdrDecoder(definitions).decode(there.target_type, payload)
    )
    assert ours2(CdrDecoder(definitions).decode(there.target_type, payload)) == {
        **value,
        "c": n % 256,
    }
    store = store_of(there.target_text, there.target_type)
    assert raw == bytes(store.cdr_to_ros1(payload, there.target_type))
    assert payload == bytes(store.ros1_to_cdr(raw, there.target_type))
    # the ROS1 text made from the ROS 2 one describes the same bytes
    assert ros1def.Decoder(back.target_type, back.target_text).decode(raw) is not None
    theirs1 = store_of(back.target_text, "my_pkg/msg/Bar").deserialize_ros1(raw, "my_pkg/msg/Bar")
    assert theirs1.names == value["names"]
    if n == 3:
        _all_cuts_fail(there, back, raw)


def test_custom_names_not_valid_in_ros2_are_refused() -> None:
    with pytest.raises(Unmappable, match="field 'Foo' of my_pkg/Bar is not a valid ROS 2 field"):
        ros1_to_ros2("my_pkg/Bar", "int32 ok\nfloat64 Foo\n")
    for bad in ("x__y", "trailing_", "_lead"):
        with pytest.raises(Unmappable):
            ros1_to_ros2("my_pkg/Bar", f"int32 {bad}\n")
    with pytest.raises(Unmappable, match="not a valid ROS 2 type name"):
        ros1_to_ros2("MyPkg/Bar", "int32 x\n")
    with pytest.raises(Unmappable, match="not a valid ROS 2 type name"):
        ros1_to_ros2("my_pkg/bar_type", "int32 x\n")


def test_ros2_only_types_are_refused() -> None:
    with pytest.raises(Unmappable, match="wstring"):
        ros2_to_ros1("my_pkg/msg/W", {"my_pkg/msg/W": ("ros2msg", "int32 a\nwstring w\n")})
    bounded = ros2_to_ros1(
        "my_pkg/msg/B",
        {"my_pkg/msg/B": ("ros2msg", "string<=5 s\nint32[<=3] v\nint8 x 5\nint32 C=4\n")},
    )
    assert bounded.target_text == "int32 C=4\nstring s\nint32[] v\nint8 x\n"
    assert any("bound" in note for note in bounded.notes)


def test_big_endian_and_garbage_cdr() -> None:
    there = ros1_to_ros2("my_pkg/Bar", CUSTOM)
    back = ros2_to_ros1(there.target_type, {there.target_type: ("ros2msg", there.target_text)})
    payload = Encoder({there.target_type: ("ros2msg", there.target_text)}).encode(
        there.target_type, _custom(2), big_endian=True
    )
    with pytest.raises(UnsupportedError, match="big-endian"):
        back.transcode(payload)
    with pytest.raises(FormatError):
        back.transcode(b"\x00\x07\x00\x00" + payload[4:])


def test_random_damage_is_only_ever_a_format_error() -> None:
    there = ros1_to_ros2("my_pkg/Bar", CUSTOM)
    definitions = {there.target_type: ("ros2msg", there.target_text)}
    back = ros2_to_ros1(there.target_type, definitions)
    payload = Encoder(definitions).encode(there.target_type, _custom(3))
    raw = back.transcode(payload)
    rng = random.Random(7)
    for source, function in ((raw, there.transcode), (payload, back.transcode)):
        for _ in range(400):
            damaged = bytearray(source)
            for _ in range(rng.randint(1, 4)):
                at = rng.randrange(4 if function is back.transcode else 0, len(damaged))
                damaged[at] = rng.choice([0, 0xFF, 0x7F, rng.randrange(256)])
            try:
                out = function(bytes(damaged))
            except FormatError:
                continue
            assert isinstance(out, bytes) and len(out) < 4 * len(source) + 4 * (1 << 16)
