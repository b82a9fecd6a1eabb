"""The standard messages of other formats (`nanorec.standard`) as ROS 2 CDR.

A CARLA recording or a pbstream hands over poses, transforms and maps as plain values of a
few standard ROS 2 types; this module holds those types' definitions (the Humble `.msg`
fields, bundled: no ROS install needed) and encodes the values. The definition text written
into the bag is rosbag2's `ros2msg` text: the root `.msg`, then each type it uses after 80 `=`
and `MSG: pkg/Type`.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cached_property
from typing import Any, Final

from nanorec.standard import TYPES

from ..ros2.cdr_encode import Encoder

#: Each type's own fields (short name `pkg/Type`), and the types it uses, in order.
_MSG: Final[Mapping[str, tuple[str, tuple[str, ...]]]] = {
    "builtin_interfaces/Time": ("int32 sec\nuint32 nanosec\n", ()),
    "std_msgs/Header": (
        "builtin_interfaces/Time stamp\nstring frame_id\n",
        ("builtin_interfaces/Time",),
    ),
    "geometry_msgs/Point": ("float64 x\nfloat64 y\nfloat64 z\n", ()),
    "geometry_msgs/Vector3": ("float64 x\nfloat64 y\nfloat64 z\n", ()),
    "geometry_msgs/Quaternion": (
        "float64 x 0\nfloat64 y 0\nfloat64 z 0\nfloat64 w 1\n",
        (),
    ),
    "geometry_msgs/Pose": (
        "Point position\nQuaternion orientation\n",
        ("geometry_msgs/Point", "geometry_msgs/Quaternion"),
    ),
    "geometry_msgs/PoseStamped": (
        "std_msgs/Header header\nPose pose\n",
        ("std_msgs/Header", "geometry_msgs/Pose"),
    ),
    "geometry_msgs/Transform": (
        "Vector3 translation\nQuaternion rotation\n",
        ("geometry_msgs/Vector3", "geometry_msgs/Quaternion"),
    ),
    "geometry_msgs/TransformStamped": (
        "std_msgs/Header header\nstring child_frame_id\nTransform transform\n",
        ("std_msgs/Header", "geometry_msgs/Transform"),
    ),
    "tf2_msgs/TFMessage": (
        "geometry_msgs/TransformStamped[] transforms\n",
        ("geometry_msgs/TransformStamped",),
    ),
    "nav_msgs/MapMetaData": (
        "builtin_interfaces/Time map_load_time\nfloat32 resolution\nuint32 width\n"
        "uint32 height\ngeometry_msgs/Pose origin\n",
        ("builtin_interfaces/Time", "geometry_msgs/Pose"),
    ),
    "nav_msgs/OccupancyGrid": (
        "std_msgs/Header header\nMapMetaData info\nint8[] data\n",
        ("std_msgs/Header", "nav_msgs/MapMetaData"),
    ),
}


def short(type_name: str) -> str:
    """`pkg/Type` of `pkg/msg/Type`."""
    package, _, name = type_name.rpartition("/")
    return f"{package.split('/')[0]}/{name}"


def ros2msg_text(type_name: str) -> str:
    """rosbag2's `ros2msg` definition text of a standard type: the root, then every type it
    uses once, depth first."""
    seen: set[str] = set()

    def full(name: str) -> str:
        text, uses = _MSG[name]
        for used in uses:
            if used not in seen:
                seen.add(used)
                text += f"\n{'=' * 80}\nMSG: {used}\n" + full(used)
        return text

    return full(short(type_name))


class StandardEncoder:
    """CDR payloads of standard messages (`nanorec.standard.TYPES`)."""

    @cached_property
    def definitions(self) -> dict[str, tuple[str, str]]:
        return {name: ("ros2msg", ros2msg_text(name)) for name in TYPES}

    @cached_property
    def _encoder(self) -> Encoder:
        return Encoder(self.definitions)

    def encode(self, type_name: str, value: Mapping[str, Any]) -> bytes:
        return self._encoder.encode(type_name, value)
