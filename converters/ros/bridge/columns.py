"""A `tf2_msgs/msg/TFMessage` given as columns (`nanorec.standard.Transforms`) -> its CDR
payload, every number laid in at once.

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
translation and rotation.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from nanorec.standard import Transforms

#: Layouts kept (one per distinct list of names; a recording has few).
_KEEP = 256
_INT32 = range(-(1 << 31), 1 << 31)


@dataclass(frozen=True)
class _Layout:
    template: npt.NDArray[np.uint8]
    stamps: npt.NDArray[np.intp]  # 32-bit word of each stamp's `sec` (`nanosec` follows)
    poses: npt.NDArray[np.intp]  # 64-bit word (from byte 4) of each pose's 7 numbers, (n*7)


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


class TransformsEncoder:
    """CDR payloads of `Transforms` values, a layout per list of names."""

    def __init__(self) -> None:
        self._layouts: dict[tuple[tuple[str, ...], tuple[str, ...]], _Layout] = {}

    def encode(self, value: Transforms) -> bytes | None:
        """The payload, None for what the plain path must judge (a stamp out of range,
        arrays of the wrong shape)."""
        n = len(value.parents)
        sec, nanosec = divmod(int(value.time_ns), 1_000_000_000)
        if (
            not n
            or sec not in _INT32
            or len(value.children) != n
            or value.position.shape != (n, 3)
            or value.orientation.shape != (n, 4)
        ):
            return None
        key = (value.parents, value.children)
        layout = self._layouts.get(key)
        if layout is None:
            if len(self._layouts) >= _KEEP:
                self._layouts.clear()
            layout = self._layouts[key] = _layout(*key)
        out = layout.template.copy()
        words: Any = out.view("<u4")
        words[layout.stamps] = sec & 0xFFFFFFFF
        words[layout.stamps + 1] = nanosec
        numbers: Any = out[4:].view("<f8")
        numbers[layout.poses] = np.concatenate(
            [value.position, value.orientation], axis=1, dtype=np.float64
        ).reshape(-1)
        return bytes(out.data)


__all__ = ["TransformsEncoder"]
