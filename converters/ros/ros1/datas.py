"""The payloads of many archived bag messages at once, for the columnar tables.

Each archive message is `{topic: {"conn": c, "sec": s, "nsec": n, "data": bin},
"nanorec.t": t}` (a connection's first message also carries its header, see `convert.py`).
Decoding each with msgpack to find its data was most of a table of small messages; here
where each one's data lies is found for all of them at once with numpy, by the layout
above, and only a message laid out otherwise is decoded (as `ros2/datas.py` does for ROS 2).
"""

from __future__ import annotations

from typing import Final

import msgpack
import numpy as np
from numpy.typing import NDArray

from nanorec.archive.archive_file import MSGPACK_ERRORS

Ints = NDArray[np.int64]

_KEYS: Final = (b"\xa4conn", b"\xa3sec", b"\xa4nsec")
_DATA: Final = b"\xa4data"
_STAMP: Final = b"\xa9nanorec.t"


def _int_sizes() -> Ints:
    """Bytes of a msgpack integer by its first byte (0: not an integer)."""
    sizes = np.zeros(256, np.int64)
    sizes[0x00:0x80] = 1
    sizes[0xE0:0x100] = 1
    for first, size in ((0xCC, 2), (0xCD, 3), (0xCE, 5), (0xCF, 9)):
        sizes[first] = sizes[first + 4] = size  # uint8..64, int8..64
    return sizes


_INT_SIZES: Final = _int_sizes()


def locate(buffer: bytes, starts: Ints, ends: Ints) -> tuple[Ints, Ints, NDArray[np.bool_]]:
    """Each message's data (start, length) in `buffer` (messages at `starts` to `ends`),
    and whether it is laid out as above (where not, start and length mean nothing)."""
    buf = np.frombuffer(buffer, np.uint8)
    last = len(buf) - 1
    ok = ends - starts >= 32

    def byte(pos: Ints) -> Ints:
        found: Ints = buf[np.clip(pos, 0, last)].astype(np.int64)
        return found

    def text(pos: Ints, key: bytes) -> None:
        nonlocal ok
        for k, value in enumerate(key):
            ok &= byte(pos + k) == value

    ok &= byte(starts) == 0x82  # {topic: {...}, "nanorec.t": t}
    head = byte(starts + 1)
    fix = (head >= 0xA0) & (head <= 0xBF)
    ok &= fix | (head == 0xD9)
    pos = starts + np.where(fix, 2 + (head & 0x1F), 3 + byte(starts + 2))
    ok &= byte(pos) == 0x84
    pos = pos + 1
    for key in _KEYS:
        text(pos, key)
        size = _INT_SIZES[byte(pos + len(key))]
        ok &= size > 0
        pos = pos + len(key) + size
    text(pos, _DATA)
    kind = byte(pos + 5)
    wide = kind - 0xC3  # bin 8, 16, 32: 1, 2, 4 bytes of size
    ok &= (wide >= 1) & (wide <= 3)
    width = np.where(wide == 3, 4, wide)
    size = np.zeros(len(starts), np.int64)
    for k in range(4):
        size = np.where(k < width, size << 8 | byte(pos + 6 + k), size)
    data = pos + 6 + width
    tail = data + size
    text(tail, _STAMP)
    ok &= tail + len(_STAMP) + _INT_SIZES[byte(tail + len(_STAMP))] == ends
    return data, size, ok


def datas(buffer: bytes, starts: Ints, ends: Ints) -> tuple[bytes, Ints, Ints] | None:
    """Each message's data: one buffer (`buffer`, with the data of messages `locate` did
    not find appended, decoded by msgpack) and each data's start and length in it; None
    when one is not a bag message (the per-message path says what it is)."""
    data, size, ok = locate(buffer, starts, ends)
    pieces = [buffer]
    base = len(buffer)
    for k in np.flatnonzero(~ok).tolist():
        try:
            message = msgpack.unpackb(buffer[int(starts[k]) : int(ends[k])])
        except MSGPACK_ERRORS:
            return None
        found = _data_in(message)
        if found is None:
            return None
        data[k], size[k] = base, len(found)
        pieces.append(found)
        base += len(found)
    return (buffer if len(pieces) == 1 else b"".join(pieces)), data, size


def _data_in(message: object) -> bytes | None:
    if type(message) is not dict:
        return None
    for value in message.values():
        if type(value) is dict and isinstance(value.get("data"), bytes):
            data: bytes = value["data"]
            return data
    return None


__all__ = ["datas", "locate"]
