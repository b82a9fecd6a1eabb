"""Values -> ROS 2 CDR payloads: the inverse of `cdr.Decoder`, for tests, synthetic bags and
the standard messages of other formats written as a bag (`converters/ros/bridge`).

Written plainly (a walk over the type model, no generated code): a second, independent
reading of the alignment rules is what makes round trips a check. Numeric numpy arrays are
copied whole, so a large array (an occupancy grid) costs no per-element Python.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from typing import Any

import numpy as np

from nanorec.errors import UsageError

from .msgdef import SIZES, MsgType, canonical, load

_CODES = {
    "bool": "?", "byte": "B", "char": "B", "int8": "b", "uint8": "B", "int16": "h",
    "uint16": "H", "wchar": "H", "int32": "i", "uint32": "I", "float32": "f", "int64": "q",
    "uint64": "Q", "float64": "d",
}  # fmt: skip
_DTYPES = {
    "int8": "i1", "uint8": "u1", "byte": "u1", "char": "u1", "int16": "i2", "uint16": "u2",
    "int32": "i4", "uint32": "u4", "int64": "i8", "uint64": "u8", "float32": "f4",
    "float64": "f8",
}  # fmt: skip


class Encoder:
    """Encode dicts (as `Decoder` gives them) of the types `definitions` define."""

    def __init__(self, definitions: Mapping[str, tuple[str, str]]) -> None:
        self.definitions = dict(definitions)
        self._types: dict[str, dict[str, MsgType]] = {}

    def encode(
        self, type_name: str, value: Mapping[str, Any], *, big_endian: bool = False
    ) -> bytes:
        """The payload (4-byte header, then the message) of `value` as `type_name`."""
        types = self._types.get(type_name)
        if types is None:
            types = self._types[type_name] = load(self.definitions, type_name)
        writer = _Writer(types, ">" if big_endian else "<")
        writer.struct(canonical(type_name), value)
        return (b"\x00\x00" if big_endian else b"\x00\x01") + b"\x00\x00" + bytes(writer.out)


class _Writer:
    def __init__(self, types: dict[str, MsgType], order: str) -> None:
        self.types, self.order = types, order
        self.out = bytearray()

    def align(self, k: int) -> None:
        self.out += bytes(-len(self.out) % k)

    def struct(self, name: str, value: Mapping[str, Any]) -> None:
        for f in self.types[name].fields:
            item = value.get(f.name, 0) if f.name.startswith("structure_needs") else value[f.name]
            if f.array is None:
                self.one(f.type, item)
                continue
            items = list(item) if not isinstance(item, np.ndarray) else item
            if f.array > 0 and len(items) != f.array:
                raise UsageError(f"{name}.{f.name}: {len(items)} elements, the array has {f.array}")
            if f.array < 0:
                self.align(4)
                self.out += struct.pack(self.order + "I", len(items))
            if f.type in SIZES and len(items):
                self.align(SIZES[f.type])
                if isinstance(items, np.ndarray) and f.type in _DTYPES:
                    dtype = np.dtype(self.order + _DTYPES[f.type])
                    self.out += np.ascontiguousarray(items, dtype=dtype).tobytes()
                    continue
                code = self.order + _CODES[f.type] * len(items)
                self.out += struct.pack(
                    code, *(x.item() if hasattr(x, "item") else x for x in items)
                )
            elif f.type not in SIZES:
                for element in items:
                    self.one(f.type, element)

    def one(self, name: str, value: Any) -> None:
        if name in SIZES:
            self.align(SIZES[name])
            self.out += struct.pack(self.order + _CODES[name], value)
        elif name == "string":
            data = value.encode() if isinstance(value, str) else bytes(value)
            self.align(4)
            self.out += struct.pack(self.order + "I", len(data) + 1) + data + b"\x00"
        elif name == "wstring":
            data = value.encode("utf-16-le" if self.order == "<" else "utf-16-be")
            self.align(4)
            self.out += struct.pack(self.order + "I", len(data) // 2) + data
        else:
            self.struct(name, value)
