"""Message record headers, rebuilt instead of stored.

A message data record's header holds exactly `op`, `conn` and `time`, in the order its
writer uses. `Templates` learns each order once; a header that is exactly a known order
with its values is stored as the order's number, anything else (extra fields, other sizes)
as its bytes.
"""

from __future__ import annotations

import struct
from typing import Final

import numpy as np
from numpy.typing import NDArray

from nanorec.errors import FormatError

from .records import OP_MESSAGE, Fields

_NAMES: Final = frozenset({b"op", b"conn", b"time"})
_U32: Final = struct.Struct("<I")
_TIME: Final = struct.Struct("<II")
_LENGTHS: Final = {b"op": 1, b"conn": 4, b"time": 8}


class Template:
    """One field order: the header is `pieces` joined with the conn and time values."""

    def __init__(self, names: tuple[bytes, ...]) -> None:
        self.names = names
        self.conn_at = 0
        self.time_at = 0
        position = 0
        for name in names:
            position += 4 + len(name) + 1
            if name == b"conn":
                self.conn_at = position
            elif name == b"time":
                self.time_at = position
            position += _LENGTHS[name]
        self.length = position
        # `build` packs the whole header with one struct: names, lengths and op are constant
        layout, self._values = "<", []
        self._conn_slot = self._time_slot = -1
        for name in names:
            layout += f"I{len(name) + 1}s"
            self._values += [len(name) + 1 + _LENGTHS[name], name + b"="]
            if name == b"op":
                layout += "B"
                self._values.append(OP_MESSAGE)
            elif name == b"conn":
                layout += "I"
                self._conn_slot = len(self._values)
                self._values.append(0)
            else:
                layout += "II"
                self._time_slot = len(self._values)
                self._values += [0, 0]
        self._struct = struct.Struct(layout)
        # the header without its conn and time values: the same for every message
        sample = self.build(0, 0)
        first, second = sorted(((self.conn_at, 4), (self.time_at, 8)))
        self._cuts = (first[0], first[0] + first[1], second[0], second[0] + second[1])
        self.constant = self._constant_part(sample)

    def columns(self) -> tuple[NDArray[np.intp], NDArray[np.uint8]]:
        """The positions of the constant bytes in a header, and those bytes."""
        a, b, c, d = self._cuts
        positions = np.r_[0:a, b:c, d : self.length].astype(np.intp)
        return positions, np.frombuffer(self.constant, np.uint8)

    def read_all(
        self, heads: bytes, count: int, columns: tuple[NDArray[np.intp], NDArray[np.uint8]]
    ) -> tuple[NDArray[np.uint32], NDArray[np.int64]]:
        """(conn, time ns) of the leading ones of `count` headers of `self.length` bytes back
        to back that are this order with its values (a header that is not, or whose nsec is
        not below 1e9, is parsed field by field by the caller: its ns total would not give
        its fields back)."""
        table = np.frombuffer(heads, np.uint8).reshape(count, self.length)
        positions, constant = columns
        conn = table[:, self.conn_at : self.conn_at + 4].copy().view("<u4")[:, 0]
        stamp = table[:, self.time_at : self.time_at + 8].copy().view("<u4")
        good = (table[:, positions] == constant).all(axis=1) & (stamp[:, 1] < 1_000_000_000)
        taken = count if good.all() else int(np.argmin(good))
        time = stamp[:taken, 0].astype(np.int64) * 1_000_000_000 + stamp[:taken, 1]
        return conn[:taken], time

    def _constant_part(self, header: bytes) -> bytes:
        a, b, c, d = self._cuts
        return header[:a] + header[b:c] + header[d:]

    def build(self, conn: int, time_ns: int) -> bytes:
        values = self._values.copy()
        if self._conn_slot >= 0:
            values[self._conn_slot] = conn
        if self._time_slot >= 0:
            values[self._time_slot : self._time_slot + 2] = divmod(time_ns, 1_000_000_000)
        return self._struct.pack(*values)


class Templates:
    def __init__(self, orders: list[tuple[bytes, ...]] | None = None) -> None:
        self.list = [Template(order) for order in orders or []]
        self._last: Template | None = self.list[-1] if self.list else None
        self._last_id = len(self.list) - 1

    @property
    def last(self) -> Template | None:
        """The order learnt last (the one a writer's next header most likely has)."""
        return self._last

    @property
    def last_id(self) -> int:
        return self._last_id

    def learn(self, fields: Fields, header: bytes, where: int) -> tuple[int, int, int]:
        """(template number or -1, conn, time ns) of a message header `match` did not take."""
        values = dict(fields)
        try:
            conn = _U32.unpack(values[b"conn"])[0]
            sec, nsec = _TIME.unpack(values[b"time"])
        except (KeyError, struct.error):
            raise FormatError("a message record without a valid conn/time", offset=where) from None
        time = sec * 1_000_000_000 + nsec
        names = tuple(name for name, _ in fields)
        if set(names) == _NAMES and len(names) == 3 and nsec < 1_000_000_000:
            template = Template(names)
            if template.build(conn, time) == header:
                known = [t.names for t in self.list]
                if names in known:
                    number = known.index(names)
                else:
                    number = len(self.list)
                    self.list.append(template)
                self._last, self._last_id = self.list[number], number
                return number, conn, time
        return -1, conn, time

    def orders(self) -> list[list[bytes]]:
        return [list(t.names) for t in self.list]
