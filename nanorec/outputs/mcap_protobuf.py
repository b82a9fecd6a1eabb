"""Foxglove's protobuf schemas, and the protobuf wire format written by hand, for converters
whose MCAP messages are many numbers (CARLA's `/tf` and `/carla/scene`).

Foxglove reads its types (`foxglove.SceneUpdate`...) in any encoding. JSON is simplest
(`mcap_foxglove`), but a busy recording's poses are then ~12 times its own size in text,
and writing and compressing that text is most of the export. In protobuf a double is its
8 bytes: no formatting, and a whole run of frames' numbers is laid into place by numpy.

The schema is a FileDescriptorSet (`mcap_foxglove.binpb`: `foxglove.FrameTransforms`,
`foxglove.SceneUpdate` and what they import, taken unchanged from Foxglove's published
`.proto` files through the `foxglove-schemas-protobuf` package, version 0.4.0); MCAP's
schema encoding `protobuf`, message encoding `protobuf`. Writing needs no protobuf package:
the helpers below build the bytes (varints, length-delimited fields, `google.protobuf.
Timestamp`), and `DoubleBlock` lays out a message part whose every value is a double
(fixed64 fields, always written, so every row has the same width) for many rows at once,
from one array per double.
The tests decode everything with the `protobuf` package.
"""

from __future__ import annotations

import functools
from importlib import resources
from typing import Any

import numpy as np
import numpy.typing as npt

from nanorec.errors import UnknownNameError, UsageError
from nanorec.outputs.mcap import McapRecord

#: The Foxglove types the bundled descriptor set holds.
TYPES = ("foxglove.FrameTransforms", "foxglove.SceneUpdate")
_VARINT, _FIXED64, _LEN = 0, 1, 2


@functools.cache
def descriptor_set() -> bytes:
    """The bundled FileDescriptorSet (the same bytes object every call)."""
    return resources.files("nanorec.outputs").joinpath("mcap_foxglove.binpb").read_bytes()


def record(
    topic: str, type_name: str, time_ns: int, data: bytes, *, sequence: int = 0
) -> McapRecord:
    """An `McapRecord` of Foxglove type `type_name` (one of `TYPES`), already encoded."""
    if type_name not in TYPES:
        raise UnknownNameError(
            f"{type_name!r} is not a bundled Foxglove protobuf type (there are {', '.join(TYPES)})"
        )
    return McapRecord(
        topic=topic,
        schema_name=type_name,
        schema_encoding="protobuf",
        schema_data=descriptor_set(),
        message_encoding="protobuf",
        log_time_ns=time_ns,
        publish_time_ns=time_ns,
        data=data,
        sequence=sequence,
    )


def varint(value: int) -> bytes:
    """A base-128 varint of `value` >= 0 (negative int32/int64 take their 64-bit form)."""
    value &= (1 << 64) - 1
    out = bytearray()
    while value > 0x7F:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def tag(number: int, wire_type: int) -> bytes:
    return varint(number << 3 | wire_type)


def field(number: int, payload: bytes) -> bytes:
    """A length-delimited field (sub-message, string, bytes)."""
    return tag(number, _LEN) + varint(len(payload)) + payload


def string(number: int, text: str) -> bytes:
    return field(number, text.encode())


def integer(number: int, value: int) -> bytes:
    """A varint field (int32, int64, uint32, enum, bool), left out when 0 (proto3)."""
    return tag(number, _VARINT) + varint(value) if value else b""


def timestamp(number: int, time_ns: int) -> bytes:
    """A `google.protobuf.Timestamp` field from integer nanoseconds (>= 0)."""
    sec, nsec = divmod(time_ns, 1_000_000_000)
    inner = (b"\x08" + varint(sec) if sec else b"") + (b"\x10" + varint(nsec) if nsec else b"")
    return tag(number, _LEN) + bytes((len(inner),)) + inner  # at most 16 bytes


#: A double's place in a `DoubleBlock` layout.
SLOT = None
Layout = list[bytes | None]


def doubles(count: int) -> Layout:
    """The fields 1..count of a message of doubles (Vector3, Quaternion, Color), as a layout."""
    out: Layout = []
    for number in range(1, count + 1):
        out += [tag(number, _FIXED64), SLOT]
    return out


def message(number: int, *parts: Layout) -> Layout:
    """Field `number` holding the sub-message made of `parts` (fixed layouts)."""
    inner = [piece for part in parts for piece in part]
    size = sum(8 if piece is None else len(piece) for piece in inner)
    return [tag(number, _LEN) + varint(size), *inner]


class DoubleBlock:
    """A fixed layout of bytes and doubles (`message`, `doubles`): `rows(values)` writes
    it once per row of `values` ((rows, slots) floats, in slot order) with numpy."""

    def __init__(self, layout: Layout) -> None:
        template = bytearray()
        offsets: list[int] = []
        for piece in layout:
            if piece is None:
                offsets.append(len(template))
                template += bytes(8)
            else:
                template += piece
        self.template = np.frombuffer(bytes(template), np.uint8)
        self.offsets = offsets
        self.width = len(template)
        # The doubles as fields of a record the width of the layout (unaligned: numpy
        # copies each column with one strided loop).
        self.dtype = np.dtype(
            {
                "names": [f"d{i}" for i in range(len(offsets))],
                "formats": ["<f8"] * len(offsets),
                "offsets": offsets,
                "itemsize": self.width,
            }
        )

    def fill(self, columns: list[npt.NDArray[np.float64]]) -> npt.NDArray[np.uint8]:
        """(rows, width) bytes: the layout with `columns[i]` in slot i."""
        names = self.dtype.names or ()
        if len(columns) != len(names):
            raise UsageError(f"{len(columns)} columns for a layout of {len(names)} doubles")
        count = len(columns[0]) if columns else 0
        out = np.empty((count, self.width), np.uint8)
        out[:] = self.template
        fields = out.view(self.dtype).reshape(count)
        for name, column in zip(names, columns, strict=True):
            fields[name] = column
        return out

    def rows(self, columns: list[npt.NDArray[np.float64]]) -> list[Any]:
        """Each row's bytes (a `bytes` object per row)."""
        if not columns or not len(columns[0]):
            return []
        filled = self.fill(columns)
        return filled.view(f"V{self.width}").ravel().tolist()  # type: ignore[no-any-return]


def on_grid(values: npt.ArrayLike, bits: int) -> npt.NDArray[np.float64]:
    """`values` rounded to multiples of 2**-bits: their doubles then end in zero bits,
    which compress (a decimal rounding, 1e-6, leaves every mantissa bit busy)."""
    scale = float(1 << bits)
    return np.rint(np.asarray(values, np.float64) * scale) / scale


__all__ = [
    "SLOT",
    "TYPES",
    "DoubleBlock",
    "descriptor_set",
    "doubles",
    "field",
    "integer",
    "message",
    "on_grid",
    "record",
    "string",
    "tag",
    "timestamp",
    "varint",
]
