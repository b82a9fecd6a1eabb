"""A `tf2_msgs/msg/TFMessage` given as columns (`nanorec.standard.Transforms`) -> its CDR
payload, or its ROS1 one, every number laid in at once.

A CARLA frame's `/tf` holds a transform per actor, and the frames of a run name the same
frames in the same order: only the stamp and the poses change. So the payload's layout is
worked out once per list of (parent, child) names, by the CDR rules the generated encoder
follows (`ros2/cdr_pack.py`): the bytes that never change (string lengths, names, padding)
as a template, and where each stamp and each pose goes. A message is then the template
copied, the stamps written as 32-bit words and the poses as 64-bit words through two numpy
index arrays: no Python per transform.

Each `TransformStamped` starts 4-aligned (the sequence's count, then transforms ending on
their 8-aligned float64s); its stamp is two 4-byte integers, its names are strings (a uint32
length counting a NUL, the bytes, the NUL), then padding to 8 and the seven float64s of
translation and rotation. In ROS1 (`tf2_msgs/TFMessage`) nothing is aligned, strings have no
NUL and the header starts with a `seq`, zero as the CDR -> ROS1 transcoder writes it
(`transcode.py`): there the stamps and poses are laid in byte by byte.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from nanorec.standard import Transforms

#: Layouts kept (one per distinct list of names; a recording has few).
_KEEP = 256
_INT32 = range(-(1 << 31), 1 << 31)


@dataclass(frozen=True)
class _Layout:
    """CDR: `stamps` the 32-bit word of each stamp's `sec` (`nanosec` follows), `poses` the
    64-bit words (counted from byte 4) of each pose's 7 numbers; ROS1: both byte indexes,
    8 and 56 per transform."""

    template: npt.NDArray[np.uint8]
    stamps: npt.NDArray[np.intp]
    poses: npt.NDArray[np.intp]


def _layout(parents: tuple[str, ...], children: tuple[str, ...]) -> _Layout:
    out = bytearray(b"\x00\x01\x00\x00")
    out += struct.pack("<I", len(parents))
    stamps: list[int] = []
    poses: list[int] = []
    for parent, child in zip(parents, children, strict=True):
        stamps.append(len(out) // 4)  # 4-aligned: the count, or a transform's end
        out += bytes(8)
        for name in (parent, child):
            out += bytes(-len(out) % 4)
            data = name.encode()
            out += struct.pack("<I", len(data) + 1) + data + b"\x00"
        out += bytes(-(len(out) - 4) % 8)
        poses.append((len(out) - 4) // 8)
        out += bytes(56)
    words = np.asarray(poses, np.intp)[:, None] + np.arange(7)
    return _Layout(
        np.frombuffer(bytes(out), np.uint8),
        np.asarray(stamps, np.intp),
        words.reshape(-1),
    )


def _ros1_layout(parents: tuple[str, ...], children: tuple[str, ...]) -> _Layout:
    out = bytearray(struct.pack("<I", len(parents)))
    stamps: list[int] = []
    poses: list[int] = []
    for parent, child in zip(parents, children, strict=True):
        out += bytes(4)  # seq
        stamps.append(len(out))
        out += bytes(8)
        for name in (parent, child):
            data = name.encode()
            out += struct.pack("<I", len(data)) + data
        poses.append(len(out))
        out += bytes(56)
    return _Layout(
        np.frombuffer(bytes(out), np.uint8),
        (np.asarray(stamps, np.intp)[:, None] + np.arange(8)).reshape(-1),
        (np.asarray(poses, np.intp)[:, None] + np.arange(56)).reshape(-1),
    )


Key = tuple[tuple[str, ...], tuple[str, ...]]


class TransformsEncoder:
    """CDR (or ROS1) payloads of `Transforms` values, a layout per list of names."""

    def __init__(self) -> None:
        self._layouts: dict[Key, _Layout] = {}
        self._ros1_layouts: dict[Key, _Layout] = {}

    def encode(self, value: Transforms) -> bytes | None:
        """The CDR payload, None for what the plain path must judge (a stamp out of range,
        arrays of the wrong shape)."""
        if not _takes(value):
            return None
        sec, nanosec = divmod(int(value.time_ns), 1_000_000_000)
        layout = _get(self._layouts, (value.parents, value.children), _layout)
        out = layout.template.copy()
        words: npt.NDArray[np.uint32] = out.view("<u4")
        words[layout.stamps] = sec & 0xFFFFFFFF
        words[layout.stamps + 1] = nanosec
        numbers: npt.NDArray[np.float64] = out[4:].view("<f8")
        numbers[layout.poses] = np.concatenate(
            [value.position, value.orientation], axis=1, dtype=np.float64
        ).reshape(-1)
        return bytes(out.data)

    def encode_ros1(self, value: Transforms) -> bytes | None:
        """The ROS1 payload (what `transcode` makes of the CDR one), None as `encode`."""
        if not _takes(value):
            return None
        layout = _get(self._ros1_layouts, (value.parents, value.children), _ros1_layout)
        out = layout.template.copy()
        sec, nanosec = divmod(int(value.time_ns), 1_000_000_000)
        stamp = np.frombuffer(struct.pack("<iI", sec, nanosec), np.uint8)
        out[layout.stamps] = np.tile(stamp, len(value.parents))
        numbers = np.concatenate([value.position, value.orientation], axis=1, dtype="<f8")
        out[layout.poses] = numbers.view(np.uint8).reshape(-1)
        return bytes(out.data)


def _takes(value: Transforms) -> bool:
    n = len(value.parents)
    return (
        n > 0
        and int(value.time_ns) // 1_000_000_000 in _INT32
        and len(value.children) == n
        and value.position.shape == (n, 3)
        and value.orientation.shape == (n, 4)
    )


def _get(
    layouts: dict[Key, _Layout],
    key: Key,
    build: Callable[[tuple[str, ...], tuple[str, ...]], _Layout],
) -> _Layout:
    layout = layouts.get(key)
    if layout is None:
        if len(layouts) >= _KEEP:
            layouts.clear()
        layout = layouts[key] = build(*key)
    return layout


__all__ = ["TransformsEncoder"]
