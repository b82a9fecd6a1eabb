"""The vocabulary of `columnar_wire`'s readers: a protobuf message's shape as `Message`s
of one-byte keys, and the kinds of field they read (shared by the walker and the layout
reader, `columnar_layout`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Final

import numpy as np
from numpy.typing import NDArray

#: Bytes after the last payload that reads may touch (a varint's ten, a double's eight).
PADDING: Final = 32
#: A field read into a column: a double (wire type 1), an int32, int64 or bool (varint);
#: `SKIP_VARINT`, `SKIP_BYTES` and `SKIP_FIXED32` are fields read past (a time the entry
#: holds; packed values; floats no table holds).
DOUBLE, INT32, INT64, BOOL = "double", "int32", "int64", "bool"
SKIP_VARINT, SKIP_BYTES, SKIP_FIXED32 = "varint", "bytes", "fixed32"
WIRES: Final = {
    DOUBLE: 1,
    INT32: 0,
    INT64: 0,
    BOOL: 0,
    SKIP_VARINT: 0,
    SKIP_BYTES: 2,
    SKIP_FIXED32: 5,
}
DTYPES: Final = {DOUBLE: np.float64, BOOL: np.bool_}


@dataclass(frozen=True)
class Message:
    """A message's fields by one-byte key: a sub-message, or (kind, column name or "");
    `present`: a bool column set where the message is there (a submap's 2D or 3D part)."""

    fields: dict[int, Message | tuple[str, str]] = field(default_factory=dict)
    present: str = ""

    @cached_property
    def known(self) -> NDArray[np.bool_]:
        """Per byte value, whether it is one of the keys (`np.isin` a field cost ~20 us)."""
        return np.isin(np.arange(256), list(self.fields))

    def columns(self) -> dict[str, str]:
        """Column name -> kind, of this message and those inside it."""
        found: dict[str, str] = {}
        for part in self.fields.values():
            if isinstance(part, Message):
                if part.present:
                    found[part.present] = BOOL
                found.update(part.columns())
            elif part[1]:
                found[part[1]] = part[0]
        return found


__all__ = [
    "BOOL",
    "DOUBLE",
    "DTYPES",
    "INT32",
    "INT64",
    "PADDING",
    "SKIP_BYTES",
    "SKIP_FIXED32",
    "SKIP_VARINT",
    "WIRES",
    "Message",
]
