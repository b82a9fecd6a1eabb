"""ROS1 serialization of decoded messages: the inverse of `msgdef.Decoder`.

Synthetic bags build their payloads with it, and a bag written from another format (a ROS 2
bag, for one) needs ROS1 payloads of values that were never ROS1 bytes. It takes what the
decoder gives: dicts of fields, numpy arrays (or any sequence) for numeric arrays, `str` or
`bytes` for strings, `{"secs", "nsecs"}` for time and duration. Generic rather than
generated: its callers write bags, they do not read them, so speed matters less here.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from typing import Any

import numpy as np

from nanorec.errors import UsageError

from .msgdef import SCALARS, Field

_U32 = struct.Struct("<I")


def encode(types: Mapping[str, list[Field]], type_name: str, value: Mapping[str, Any]) -> bytes:
    """ROS1-serialize `value` as `type_name`, `types` as `msgdef.parse_definition` gives.
    Raises `UsageError` (a ValueError) naming the type for a value that does not fit it: a
    missing type or field, a number out of its field's range, a value of the wrong kind."""
    out = bytearray()
    try:
        _message(types, type_name, value, out)
    except KeyError as error:
        raise UsageError(f"{type_name}: no type or field {error} to serialize") from None
    except (struct.error, TypeError, ValueError, OverflowError) as error:
        if isinstance(error, UsageError):
            raise
        raise UsageError(f"{type_name}: a value does not fit its field ({error})") from None
    except RecursionError:
        raise UsageError(f"{type_name}: its types nest too deep to serialize") from None
    return bytes(out)


def _message(
    types: Mapping[str, list[Field]], type_name: str, value: Mapping[str, Any], out: bytearray
) -> None:
    for f in types[type_name]:
        item = value[f.name]
        if f.array is None:
            _one(types, f.type, item, out)
            continue
        if f.array < 0:
            out += _U32.pack(len(item))
        elif len(item) != f.array:
            raise UsageError(f"{type_name}.{f.name} holds {f.array} elements, not {len(item)}")
        if f.type in SCALARS:
            out += np.asarray(item, dtype=SCALARS[f.type][1]).tobytes()
        else:
            for element in item:
                _one(types, f.type, element, out)


def _one(types: Mapping[str, list[Field]], type_name: str, item: Any, out: bytearray) -> None:
    if type_name in SCALARS:
        out += struct.pack("<" + SCALARS[type_name][0], item)
    elif type_name == "string":
        data = item.encode() if isinstance(item, str) else bytes(item)
        out += _U32.pack(len(data)) + data
    elif type_name in ("time", "duration"):
        out += struct.pack("<II" if type_name == "time" else "<ii", item["secs"], item["nsecs"])
    else:
        _message(types, type_name, item, out)
