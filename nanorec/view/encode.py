"""JSON for the page: decoded messages as `cat` writes them, and `Viewable` layers with their
numpy columns as typed binary (`{"dtype": "<f4", "shape": [n], "b64": ...}`), which the
page turns into typed arrays without parsing a number per item (a CARLA frame of 500 actors
is 6 columns, not 500 objects).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from typing import Any

import numpy as np

from nanorec.outputs.json_pieces import is_to_json, json_key, json_safe

#: The dtypes the page has typed arrays for (JavaScript has no float16 array, and its
#: 64-bit integer arrays are BigInt): other numeric columns are cast to the nearest of these.
_TYPED = frozenset({"i1", "u1", "i2", "u2", "i4", "u4", "f4", "f8"})


def dumps(value: Any) -> bytes:
    """UTF-8 JSON of an already JSON-safe value (never NaN: `allow_nan=False`)."""
    return json.dumps(value, allow_nan=False, ensure_ascii=False, separators=(",", ":")).encode()


#: Items of an array or list, and bytes, past which the inspector gets the head only.
MAX_ITEMS = 100  # the page shows 100 children of a node
#: Items (bytes: base64 of this many bytes) kept of a longer value.
HEAD = 50
#: Characters past which a string is cut.
MAX_TEXT = 10_000
#: The largest integer a JavaScript number holds exactly (a nanosecond stamp is bigger).
_EXACT = 2**53


def message_json(value: Any) -> Any:
    """A decoded message as `nanorec cat` writes it (NaN and infinities null, bytes as text
    or `{"base64": ...}`, arrays as lists) but its long leaves cut to what the inspector
    shows, so a message of a 512 MiB image costs kilobytes, not gigabytes: an array or list
    past `MAX_ITEMS` is `{"items": n, "head": [first HEAD]}` (an array also says its dtype
    and shape), bytes past `MAX_ITEMS` `{"bytes": n, "head": base64 of the first HEAD}`, a
    string past `MAX_TEXT` characters its first `MAX_TEXT` and `{"characters": n}`. An
    integer past 2**53 (nanoseconds since 1970) is `{"int": "digits"}`: the page's
    `JSON.parse` would round it."""
    if isinstance(value, np.ndarray):
        if value.size <= MAX_ITEMS:
            return json_safe(value)
        head = json_safe(value.reshape(-1)[:HEAD].tolist())
        return {
            "items": int(value.size),
            "dtype": value.dtype.str,
            "shape": list(value.shape),
            "head": head,
        }
    if isinstance(value, bytes | bytearray | memoryview):
        data = memoryview(value).cast("B")
        if len(data) <= MAX_ITEMS:
            return json_safe(bytes(data))
        return {"bytes": len(data), "head": base64.b64encode(data[:HEAD]).decode("ascii")}
    if isinstance(value, int | np.integer) and not isinstance(value, bool):
        number = int(value)  # past 2**53 a JavaScript number is not this integer
        return {"int": str(number)} if abs(number) > _EXACT else number
    if isinstance(value, str) and len(value) > MAX_TEXT:
        return {"characters": len(value), "head": json_safe(value[:MAX_TEXT])}
    if isinstance(value, Mapping):
        return {json_key(key): message_json(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        if len(value) > MAX_ITEMS:
            return {"items": len(value), "head": [message_json(v) for v in value[:HEAD]]}
        return [message_json(item) for item in value]
    if is_to_json(value):  # a CARLA frame's world: its fields, cut as any value's
        return message_json(value.to_json())
    return json_safe(value)


def typed(array: np.ndarray[Any, Any]) -> dict[str, Any]:
    """A numpy array as a typed block the page reads with one `new Float32Array(...)`:
    little-endian, C order; int64/bool/float16 cast to a type JavaScript has."""
    array = np.asarray(array)
    if array.dtype.kind == "b":
        array = array.astype(np.uint8)
    elif array.dtype.kind in "iu" and array.dtype.str[1:] not in _TYPED:
        array = array.astype(np.float64)  # int64: exact up to 2**53, as a JS number
    elif array.dtype.kind == "f" and array.dtype.str[1:] not in _TYPED:
        array = array.astype(np.float32 if array.dtype.itemsize < 4 else np.float64)
    elif array.dtype.kind not in "iuf":
        return {"list": json_safe(array.tolist())}
    little = np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<"))
    return {
        "dtype": little.dtype.str,
        "shape": list(little.shape),
        "b64": base64.b64encode(little.tobytes()).decode("ascii"),
    }


def layer_json(value: Any) -> Any:
    """A `Viewable` answer (overview, scene, a layer) for the page: numpy arrays as typed
    blocks, bytes as `{"b64": ...}` (an image), everything else as `json_safe` makes it."""
    if isinstance(value, np.ndarray):
        return typed(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return {"b64": base64.b64encode(bytes(value)).decode("ascii")}
    if isinstance(value, Mapping):
        return {str(key): layer_json(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [layer_json(item) for item in value]
    return json_safe(value)
