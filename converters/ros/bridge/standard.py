"""The standard messages of other formats (`nanorec.standard`) as ROS 2 CDR.

A CARLA recording or a pbstream hands over poses, transforms and maps as plain values of a
few standard ROS 2 types; their definitions are Humble's, bundled (`ros2/bundle.py`: no ROS
install needed), and this module encodes the values: by generated code (`ros2/cdr_pack.py`),
a `TFMessage` given as columns (`nanorec.standard.Transforms`, a CARLA frame's) by its
layout (`columns.py`); the bytes are the plain encoder's (`ros2/cdr_encode.py`). The
definition text written into the bag is rosbag2's `ros2msg` text: the root `.msg`, then each
type it uses after 80 `=` and `MSG: pkg/Type`.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cached_property
from typing import Any

from nanorec.standard import TYPES, Transforms

from ..ros2.bundle import bundled
from ..ros2.cdr_pack import Packer
from .columns import TransformsEncoder

_TF = "tf2_msgs/msg/TFMessage"


def ros2msg_text(type_name: str) -> str:
    """rosbag2's `ros2msg` definition text of a bundled Humble type (`bundle.bundled`)."""
    found = bundled("humble", type_name)
    if found is None:
        raise KeyError(type_name)
    return found[1]


class StandardEncoder:
    """CDR payloads of standard messages (`nanorec.standard.TYPES`)."""

    @cached_property
    def definitions(self) -> dict[str, tuple[str, str]]:
        return {name: ("ros2msg", ros2msg_text(name)) for name in TYPES}

    @cached_property
    def _packer(self) -> Packer:
        return Packer(self.definitions)

    @cached_property
    def _transforms(self) -> TransformsEncoder:
        return TransformsEncoder()

    def encode(self, type_name: str, value: Mapping[str, Any]) -> bytes:
        if isinstance(value, Transforms) and type_name == _TF:
            data = self._transforms.encode(value)
            if data is not None:
                return data
        return self._packer.encode(type_name, value)

    def encode_ros1(self, type_name: str, value: Mapping[str, Any]) -> bytes | None:
        """The ROS1 payload of a value given as columns (what transcoding its CDR payload
        gives), None for any other: its CDR payload is then transcoded."""
        if isinstance(value, Transforms) and type_name == _TF:
            return self._transforms.encode_ros1(value)
        return None
