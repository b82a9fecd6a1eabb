"""Make an archive recovered from a killed bag conversion a bag archive again.

A killed writer leaves every complete message but not the members written at close: the
bag's layout (chunks, record header field orders, the index section) and the per-message
columns. The columns and the connections come back from the messages (each holds its
connection id and time, and the first of each connection its record, see `convert.py`);
the layout does not, so the archive is marked `adopted`: it decodes and plays as any bag
archive, and `export` writes its messages (the bag's first ones in time) as a new valid,
indexed bag, as `--format indexed` does, not the original's bytes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nanorec.archive.reader import ArchiveReader
from nanorec.archive.wire import pack_meta
from nanorec.errors import FormatError

from .connection import Connection
from .convert import (
    CONN_MEMBER,
    META_MEMBER,
    META_VERSION,
    RANK_MEMBER,
    RAW_MEMBER,
    TEMPLATE_MEMBER,
    TIME_MEMBER,
)

_FIELDS = {"conn", "sec", "nsec", "data"}


def _entry(message: Any) -> dict[str, Any] | None:
    """The `{"conn", "sec", "nsec", "data"[, "connection"]}` map of a bag message, or None."""
    if not isinstance(message, dict) or len(message) != 1:
        return None
    value = next(iter(message.values()))
    if not isinstance(value, dict) or not _FIELDS <= set(value) <= _FIELDS | {"connection"}:
        return None
    if not all(isinstance(value[k], int) for k in ("conn", "sec", "nsec")):
        return None
    return value if isinstance(value["data"], bytes) else None


def rebuild_members(reader: ArchiveReader) -> dict[str, bytes] | None:
    """The bag members of `reader`'s archive rebuilt from its messages, or None when they
    are not a bag's as nanorec converts it (the first one names its connection).
    FormatError when they are, but one is damaged."""
    first = _entry(reader[0]) if len(reader) else None
    if first is None or "connection" not in first:
        return None
    connections: dict[int, Connection] = {}
    count = len(reader)
    times = np.empty(count, "<i8")
    conns = np.empty(count, "<u4")
    for number in range(count):
        value = _entry(reader[number])
        if value is None:
            raise FormatError(f"recovered message {number} is not a bag message")
        conns[number] = value["conn"]
        times[number] = value["sec"] * 1_000_000_000 + value["nsec"]
        if "connection" in value:
            try:
                connection = Connection.unpack(value["connection"])
            except (ValueError, TypeError) as error:
                raise FormatError(
                    f"recovered message {number}: damaged connection record ({error})"
                ) from None
            connections[connection.id] = connection
    rank = "<u4" if count < 2**32 else "<i8"
    meta = {
        "version": META_VERSION,
        "connections": [connections[k].pack() for k in sorted(connections)],
        "orders": [],
        "segments": [],
        "headers": {},
        "rank": rank,
        "chunks": [],
        "bag_header": None,
        "unindexed": False,
        "kept_chunks": 0,
        "cut": None,
        "adopted": True,
    }
    return {
        META_MEMBER: pack_meta(meta),
        RAW_MEMBER: b"",
        TIME_MEMBER: times.tobytes(),
        CONN_MEMBER: conns.tobytes(),
        TEMPLATE_MEMBER: np.full(count, -1, "<i2").tobytes(),
        RANK_MEMBER: np.arange(count, dtype=rank).tobytes(),
    }


__all__ = ["rebuild_members"]
