"""JSON text (and CSV cells) of values holding big numeric arrays, written in pieces.

Why: `tables.dumps` turns an array into a list of Python numbers and the whole line into one
string. For a camera image of 512 MiB that is a list of 512 M ints (4 GB of pointers) and
1.5 GB of text, for a line that is only written out (`cat`, `play`, CSV). Here a 1-D array
past `BIG_ARRAY` elements stands in the value as a marker while the rest of the line is
encoded as usual, and its text is then made and written a window of `STEP` elements at a
time, in the very characters `dumps` gives (uint8, a camera's pixels, through a numpy
table; other types as `json.dumps` of the window's list). `json_safe`, the rules every
value passes on its way to JSON (see `tables`), lives here too, since big arrays are one of
its cases.
"""

from __future__ import annotations

import base64
import csv
import io
import json
import math
import os
from collections.abc import Iterator, Mapping
from typing import Any, Protocol, TypeGuard, runtime_checkable

import numpy as np
from numpy.typing import NDArray


@runtime_checkable
class ToJson(Protocol):
    """A decoded value that says what it is in JSON (a CARLA frame's world, a report):
    `json_safe` writes `to_json()`, not the object's repr."""

    def to_json(self) -> Any: ...


#: Elements past which an array is written in pieces.
BIG_ARRAY = 1 << 20
#: Elements made into text at a time.
STEP = 1 << 20

_TEXTS = [f"{value}, ".encode() for value in range(256)]
_TEXT = np.frombuffer(b"".join(_TEXTS), np.uint8)
_LENGTH = np.array([len(text) for text in _TEXTS], np.int64)
_START = np.cumsum(_LENGTH) - _LENGTH


class BigArrays:
    """The big arrays of one line, each standing in it as a marker string (with a random
    token: no text a file holds can pass for one)."""

    def __init__(self) -> None:
        self.arrays: list[NDArray[Any]] = []
        # os.urandom, as secrets.token_hex is: `secrets` imports OpenSSL's hmac (~5 ms of a
        # start-up, nanorec view's first paint among them)
        self._token = os.urandom(8).hex()

    def add(self, value: NDArray[Any]) -> str:
        """The marker that stands for `value` in the line."""
        self.arrays.append(value)
        return f"@{self._token}:{len(self.arrays) - 1}@"

    def stitch(self, text: str, *, quoted: str) -> Iterator[str]:
        """`text` with each marker (as it was encoded, between `quoted` quotes) replaced by
        its array's JSON text, in pieces; CSV's cell quotes (`quoted` "") put around it."""
        at = 0
        for number, value in enumerate(self.arrays):
            marker = f"{quoted}@{self._token}:{number}@{quoted}"
            found = text.index(marker, at)
            yield text[at:found] + ('"' if not quoted else "")
            yield from array_pieces(value)
            if not quoted:
                yield '"'
            at = found + len(marker)
        yield text[at:]


def is_big(value: Any) -> TypeGuard[NDArray[Any]]:
    """Whether `value` is an array written in pieces."""
    return isinstance(value, np.ndarray) and value.ndim == 1 and value.size > BIG_ARRAY


def array_pieces(value: NDArray[Any]) -> Iterator[str]:
    """`dumps(value)` of a 1-D array, a window at a time."""
    yield "["
    for start in range(0, len(value), STEP):
        window = value[start : start + STEP]
        if window.dtype == np.uint8:
            text = _uint8_text(window)
        else:
            text = json.dumps(json_safe(window.tolist()), allow_nan=False, ensure_ascii=False)
            text = text[1:-1]
        yield f", {text}" if start else text
    yield "]"


def _uint8_text(window: NDArray[np.uint8]) -> str:
    """`", ".join(map(str, window))` with numpy: each value's text gathered from a table."""
    lengths = _LENGTH[window]
    ends = np.cumsum(lengths)
    index = np.repeat(_START[window] - (ends - lengths), lengths)
    index += np.arange(int(ends[-1]), dtype=np.int64)
    text: bytes = _TEXT[index].tobytes()
    return text[:-2].decode("ascii")


def dumps_pieces(value: Any) -> Iterator[str]:
    """`tables.dumps(value)` in pieces (one, when it holds no big array)."""
    big = BigArrays()
    text = json.dumps(json_safe(value, big), allow_nan=False, ensure_ascii=False)
    if not big.arrays:
        yield text
        return
    yield from big.stitch(text, quoted='"')


def csv_row_pieces(cells: list[Any], big: BigArrays) -> Iterator[str]:
    """A CSV line of `cells` (markers of `big`'s arrays among them) in pieces."""
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerow(cells)
    yield from big.stitch(out.getvalue(), quoted="")


def json_safe(value: Any, big: BigArrays | None = None) -> Any:
    """`value` as plain JSON values (see the module docstring for the rules); with `big`,
    a big array becomes a marker `big` holds it by (`json_pieces`)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:  # text that was not UTF-8 in the file (surrogate-escaped)
            return json_safe(value.encode("utf-8", "surrogateescape"), big)
        return value
    if value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, Mapping):
        return {json_key(key): json_safe(item, big) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(item, big) for item in value]
    if isinstance(value, np.ndarray):
        if big is not None and is_big(value):
            return big.add(value)
        return json_safe(value.tolist(), big)
    if isinstance(value, np.generic):
        return json_safe(value.item(), big)
    if isinstance(value, bytes | bytearray | memoryview):
        data = bytes(value)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            return {"base64": base64.b64encode(data).decode("ascii")}
    if is_to_json(value):
        return json_safe(value.to_json(), big)
    return str(value)


def is_to_json(value: object) -> TypeGuard[ToJson]:
    """Whether `value` is a `ToJson` (its class has `to_json`): asked of every leaf that is
    none of the usual types, where a runtime Protocol's isinstance cost ~30 us each."""
    return callable(getattr(type(value), "to_json", None))


def json_key(key: Any) -> str:
    """A mapping key as a JSON string: bytes a file held that are not UTF-8 become `\\xNN`
    escapes (a key cannot be a `{"base64": ...}` object)."""
    text = str(key)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return text
