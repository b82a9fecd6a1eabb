"""Bulky sensor messages as shaped numpy arrays (views of the decoded payload, no copy).

LaserScan's `ranges`/`intensities` already decode as float32 arrays; an Image's and a
PointCloud2's `data` decode as flat uint8 arrays, which these functions shape.
"""

from __future__ import annotations

from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from nanorec.errors import FormatError

#: sensor_msgs/PointField datatype -> numpy type.
POINT_TYPES: Final = {1: "i1", 2: "u1", 3: "i2", 4: "u2", 5: "i4", 6: "u4", 7: "f4", 8: "f8"}
#: sensor_msgs/Image encoding -> (numpy type, channels).
ENCODINGS: Final = {
    "mono8": ("u1", 1), "8UC1": ("u1", 1), "mono16": ("u2", 1), "16UC1": ("u2", 1),
    "rgb8": ("u1", 3), "bgr8": ("u1", 3), "8UC3": ("u1", 3), "rgba8": ("u1", 4),
    "bgra8": ("u1", 4), "8UC4": ("u1", 4), "rgb16": ("u2", 3), "bgr16": ("u2", 3),
    "rgba16": ("u2", 4), "bgra16": ("u2", 4), "32FC1": ("f4", 1), "64FC1": ("f8", 1),
    "bayer_rggb8": ("u1", 1), "bayer_bggr8": ("u1", 1), "bayer_gbrg8": ("u1", 1),
    "bayer_grbg8": ("u1", 1),
}  # fmt: skip


def image_array(message: dict[str, Any]) -> NDArray[Any]:
    """A sensor_msgs/Image as (height, width) or (height, width, channels)."""
    encoding = str(message["encoding"])
    if encoding not in ENCODINGS:
        raise FormatError(f"image encoding {encoding!r} is not one nanorec shapes")
    kind, channels = ENCODINGS[encoding]
    dtype = np.dtype(kind).newbyteorder(">" if message["is_bigendian"] else "<")
    height, width, step = int(message["height"]), int(message["width"]), int(message["step"])
    data = np.asarray(message["data"], dtype=np.uint8)
    if step < width * channels * dtype.itemsize or len(data) < height * step:
        raise FormatError(f"image of {len(data)} bytes is too small for {height} rows of {step}")
    rows = data[: height * step].reshape(height, step)[:, : width * channels * dtype.itemsize]
    pixels: NDArray[Any] = np.ascontiguousarray(rows).view(dtype).reshape(height, width, channels)
    return pixels[:, :, 0] if channels == 1 else pixels


def pointcloud_array(message: dict[str, Any]) -> NDArray[Any]:
    """A sensor_msgs/PointCloud2 as a structured array of height x width points, one
    named field per PointField (x, y, z, intensity...)."""
    order = ">" if message["is_bigendian"] else "<"
    names, formats, offsets = [], [], []
    for field in message["fields"]:
        kind = POINT_TYPES.get(int(field["datatype"]))
        if kind is None:
            raise FormatError(f"point field {field['name']!r} has unknown datatype")
        count = int(field["count"])
        names.append(str(field["name"]))
        formats.append((order + kind, (count,)) if count > 1 else order + kind)
        offsets.append(int(field["offset"]))
    step = int(message["point_step"])
    dtype = np.dtype({"names": names, "formats": formats, "offsets": offsets, "itemsize": step})
    points = int(message["height"]) * int(message["width"])
    data = np.asarray(message["data"], dtype=np.uint8)
    if len(data) < points * step:
        raise FormatError(f"point cloud of {len(data)} bytes holds fewer than {points} points")
    return data[: points * step].view(dtype)
