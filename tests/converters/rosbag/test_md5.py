"""md5sums and full definitions as genmsg computes them: every connection of the real bags,
the stock definitions, well-known md5sums, and genmsg's parsing quirks (expected values
computed by genmsg's own `gentools.compute_md5` / `compute_full_text`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from nanorec import registry
from nanorec.converters.ros.ros1.md5 import full_text, md5sum, split
from nanorec.converters.ros.ros1.stock import STOCK
from nanorec.errors import FormatError
from tests.conftest import REALDATA

FOLDER = REALDATA / "rosbag"
BAGS = sorted(FOLDER.glob("*.bag")) if FOLDER.is_dir() else []


@pytest.mark.realdata
@pytest.mark.skipif(not BAGS, reason="../shared/realdata/rosbag absent")
@pytest.mark.parametrize("bag", BAGS, ids=lambda p: p.stem)
def test_real_connections(bag: Path) -> None:
    with registry.open(bag) as recording:
        connections = list(recording.meta.connections.values())  # type: ignore[attr-defined]
    assert connections
    for c in connections:
        assert md5sum(c.type, c.definition) == c.md5sum, (c.topic, c.type)
        # every writer of these bags used genmsg's compute_full_text
        assert full_text(c.type, split(c.type, c.definition)) == c.definition, c.type


@pytest.mark.parametrize("type_name", sorted(STOCK))
def test_stock(type_name: str) -> None:
    md5, definition = STOCK[type_name]
    assert md5sum(type_name, definition) == md5
    assert full_text(type_name, split(type_name, definition)) == definition


# The .msg files of ros/std_msgs and ros/common_msgs (comments dropped: md5s ignore them).
MSGS = {
    "std_msgs/Header": "uint32 seq\ntime stamp\nstring frame_id\n",
    "geometry_msgs/Point": "float64 x\nfloat64 y\nfloat64 z\n",
    "geometry_msgs/Quaternion": "float64 x\nfloat64 y\nfloat64 z\nfloat64 w\n",
    "geometry_msgs/Pose": "Point position\nQuaternion orientation\n",
    "geometry_msgs/PoseStamped": "Header header\nPose pose\n",
    "nav_msgs/MapMetaData": (
        "time map_load_time\nfloat32 resolution\nuint32 width\nuint32 height\n"
        "geometry_msgs/Pose origin\n"
    ),
    "nav_msgs/OccupancyGrid": "Header header \nMapMetaData info\nint8[] data\n",
    "sensor_msgs/Image": (
        "Header header        # acquisition time\nuint32 height\nuint32 width\n"
        "string encoding\nuint8 is_bigendian\nuint32 step\nuint8[] data\n"
    ),
}


@pytest.mark.parametrize(
    ("type_name", "md5"),
    [
        ("std_msgs/Header", "2176decaecbce78abc3b96ef049fabed"),
        ("sensor_msgs/Image", "060021388200f6f0f447d0fcd9c64743"),
        ("geometry_msgs/PoseStamped", "d3812c3cbc69362b77dc0b19b345f8f5"),
        ("nav_msgs/OccupancyGrid", "3381f2d731d4076ec5c71b0759edbe4e"),
    ],
)
def test_known_md5s(type_name: str, md5: str) -> None:
    assert md5sum(type_name, full_text(type_name, MSGS)) == md5


def test_full_text_order_and_separators() -> None:
    text = full_text("nav_msgs/OccupancyGrid", MSGS)
    rule = "=" * 80
    assert text == (
        f"{MSGS['nav_msgs/OccupancyGrid']}\n{rule}\nMSG: std_msgs/Header\n"
        f"{MSGS['std_msgs/Header']}\n{rule}\nMSG: nav_msgs/MapMetaData\n"
        f"{MSGS['nav_msgs/MapMetaData']}\n{rule}\nMSG: geometry_msgs/Pose\n"
        f"{MSGS['geometry_msgs/Pose']}\n{rule}\nMSG: geometry_msgs/Point\n"
        f"{MSGS['geometry_msgs/Point']}\n{rule}\nMSG: geometry_msgs/Quaternion\n"
        f"{MSGS['geometry_msgs/Quaternion']}"
    )
    assert split("nav_msgs/OccupancyGrid", text) == {
        k: MSGS[k] for k in split("nav_msgs/OccupancyGrid", text)
    }


def test_real_tf_and_log_md5s() -> None:
    assert md5sum("rosgraph_msgs/Log", STOCK["rosgraph_msgs/Log"][1]) == (
        "acffd30cd6b6de30f120938c17c593fb"
    )
    tf = "geometry_msgs/TransformStamped[] transforms\n"
    texts = {
        "tf2_msgs/TFMessage": tf,
        "geometry_msgs/TransformStamped": (
            "Header header\nstring child_frame_id\nTransform transform\n"
        ),
        "geometry_msgs/Transform": "Vector3 translation\nQuaternion rotation\n",
        "geometry_msgs/Vector3": "float64 x\nfloat64 y\nfloat64 z\n",
        **MSGS,
    }
    definition = full_text("tf2_msgs/TFMessage", texts)
    assert md5sum("tf2_msgs/TFMessage", definition) == "94810edda583a504dfda3829e70d7eec"


# genmsg's quirks: constants first, whitespace collapsed around '=', a string constant's
# value is the raw rest of its line ('#' included), Header and short names resolved, builtin
# arrays written as declared. Expected md5s are genmsg's (gentools.compute_md5).
QUIRKS = {
    "a/Root": (
        "# c\nint32  X  =  5 # five\nstring S = hi # not a comment \nbyte B=1\nchar C=2\n"
        "Header header\nSub[3] subs\nb/Other[] others\nuint8[4]   raw # x\ntime t\n"
        "duration[] ds\nbool F=True\nfloat64 PI= 3.14 \n"
    ),
    "a/Sub": "Header h\nb/Other o\nstring  s\n",
    "b/Other": "int8 V=-1\nfloat32 v\nSame s\n",
    "b/Same": "string STR=  a = b #x\n",
    "std_msgs/Header": MSGS["std_msgs/Header"],
}


@pytest.mark.parametrize(
    ("type_name", "md5"),
    [
        ("a/Root", "42857869e7ee6d0028d0889febca8a8b"),
        ("a/Sub", "36f6c9b67361ea08991dac51c0fb82f3"),
        ("b/Other", "2947202c4c245bffdf2337e3a3ae405c"),
        ("b/Same", "d442e7e0a8f2c2859ce1073bf762a480"),
    ],
)
def test_genmsg_quirks(type_name: str, md5: str) -> None:
    definition = full_text(type_name, QUIRKS)
    assert md5sum(type_name, definition) == md5
    assert split(type_name, definition) == {k: QUIRKS[k] for k in split(type_name, definition)}


def test_missing_and_recursive_types_are_refused() -> None:
    with pytest.raises(FormatError, match="no type"):
        md5sum("a/A", "b/Missing m\n")
    with pytest.raises(FormatError, match="contains itself"):
        md5sum("a/A", "A[] children\n")
    with pytest.raises(FormatError, match="no type"):
        full_text("a/A", {"a/A": "B b\n"})
