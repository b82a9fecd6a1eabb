"""The gzip members of a stretch of stored records, found with numpy instead of msgpack.

`columnar._members` unpacks each stored message (~1.7 us a record: a dict built, its keys
checked) only to take one byte string out of it. The converter writes every record of a
run the same way:

    82 | a<n> <kind> | 8<k> a6 "member" c4/c5/c6 <size> <member> | <k - 1> of
    a9 "timestamp", a5 "index", ad "trajectory_id", a4 "dims" (submaps), each an integer |
    a9 "nanorec.t" <integer>

(msgpack: a map of the kind and the time, the kind's map with `member` first). `locate`
checks exactly that for every message at once, each ending where the index says, and gives
where each member lies; anything else (another key, key order or value type: what msgpack
would accept too) makes it return None, and the caller unpacks the stretch as before.
"""

from __future__ import annotations

from typing import Any, Final

import numpy as np

from .stream import GZIP_HEADER

Ints = np.ndarray[Any, np.dtype[np.int64]]
Bools = np.ndarray[Any, np.dtype[np.bool_]]
#: Bytes past the end of a stretch that reads may touch (zeros: never a valid form).
_PAD: Final = 64
#: The keys a record's map may hold after `member` (`columnar._PLAIN_KEYS`), as msgpack
#: fixstr bytes.
_KEYS: Final = [b"\xadtrajectory_id", b"\xa5index", b"\xa9timestamp", b"\xa4dims"]
_TIME: Final = b"\xa9nanorec.t"
_MEMBER: Final = b"\xa6member"
#: msgpack integer forms: first byte -> bytes taken (fixints take one).
_INT_SIZES: Final = np.zeros(256, np.int64)
_INT_SIZES[:0x80] = 1
_INT_SIZES[0xE0:] = 1
_INT_SIZES[[0xCC, 0xD0]] = 2
_INT_SIZES[[0xCD, 0xD1]] = 3
_INT_SIZES[[0xCE, 0xD2]] = 5
_INT_SIZES[[0xCF, 0xD3]] = 9


def locate(data: bytes, starts: Ints, ends: Ints, kind: str) -> tuple[Ints, Ints] | None:
    """(start, end) in `data` of the member of each message at `starts`..`ends`, or None
    when one is not in the form above."""
    buf = np.frombuffer(data + bytes(_PAD), np.uint8)
    ok = np.ones(len(starts), np.bool_)
    top = buf[starts]
    ok &= (top == 0x82) | (top == 0x81)
    name = bytes([0xA0 + len(kind)]) + kind.encode()
    if len(name) > 32:
        return None
    ok &= _equal(buf, starts + 1, name)
    at = starts + 1 + len(name)
    entries = buf[at].astype(np.int64) - 0x80
    ok &= (entries >= 1) & (entries <= 1 + len(_KEYS))
    ok &= _equal(buf, at + 1, _MEMBER)
    at = at + 1 + len(_MEMBER)
    form = buf[at]
    size = buf[at + 1].astype(np.int64)
    size = np.where(form == 0xC5, size << 8 | buf[at + 2], size)
    big = _rows(buf, at + 1, 4).view(">u4")[:, 0].astype(np.int64)
    size = np.where(form == 0xC6, big, size)
    head = np.select([form == 0xC4, form == 0xC5, form == 0xC6], [2, 3, 5], 0)
    ok &= head > 0
    first = at + head
    last = first + size
    ok &= last <= ends
    ok &= _equal(buf, np.where(ok, first, 0), GZIP_HEADER) & (size >= len(GZIP_HEADER))
    at = np.where(ok, last, starts)
    for k in range(1, 1 + len(_KEYS)):
        going = ok & (entries > k)
        if not going.any():
            continue
        known = np.zeros(len(at), np.bool_)
        step = np.zeros(len(at), np.int64)
        # only the keys whose first byte (a fixstr of its length) some message has here
        heads = np.bincount(buf[at[going]], minlength=256)
        for key in _KEYS:  # one key at one place: no two keys taken in a row
            if not heads[key[0]]:
                continue
            same = _equal(buf, at, key)
            known |= same
            step = np.where(same, len(key), step)
        ok &= ~going | known
        at = np.where(going & ok, at + step, at)
        at, ok = _integer(buf, at, ends, going & ok, ok)
        at = np.where(ok, at, starts)
    timed = ok & (top == 0x82)
    ok &= ~timed | _equal(buf, at, _TIME)
    at = np.where(timed & ok, at + len(_TIME), at)
    at, ok = _integer(buf, at, ends, timed & ok, ok)
    ok &= at == ends
    return (first, last) if bool(ok.all()) else None


def _integer(
    buf: np.ndarray[Any, Any], at: Ints, ends: Ints, going: Bools, ok: Bools
) -> tuple[Ints, Bools]:
    """Past the msgpack integer at each `at` where `going`; `ok` cleared where there is
    none or it runs past its message."""
    sizes = _INT_SIZES[buf[np.clip(at, 0, len(buf) - 1)]]
    ok = ok & (~going | (sizes > 0))
    at = np.where(going & ok, at + sizes, at)
    return at, ok & (~going | (at <= ends))


def _equal(buf: np.ndarray[Any, Any], at: Ints, text: bytes) -> np.ndarray[Any, Any]:
    """Whether the bytes at each of `at` are `text` (`at` within the padded buffer)."""
    at = np.clip(at, 0, len(buf) - len(text))
    wanted = np.frombuffer(text, np.uint8)
    result: np.ndarray[Any, Any] = (_rows(buf, at, len(text)) == wanted).all(axis=1)
    return result


def _rows(buf: np.ndarray[Any, Any], at: Ints, width: int) -> np.ndarray[Any, Any]:
    """The `width` bytes at each of `at`, shape (len(at), width)."""
    items = np.ndarray((len(buf) - width + 1,), f"V{width}", buf, 0, (1,))
    rows: np.ndarray[Any, Any] = items[at].view(np.uint8).reshape(len(at), width)
    return rows


__all__ = ["locate"]
