"""The side members of a bag archive, read back (`BagMeta`)."""

from __future__ import annotations

import zlib
from functools import cached_property
from typing import Any

import msgpack
import numpy as np
from numpy.typing import NDArray

from nanorec.errors import FormatError
from nanorec.reader import ArchiveReader
from nanorec.wire import inflate_bounded

from .connection import Connection
from .convert import META_MEMBER, RAW_MEMBER
from .template import Templates


class BagMeta:
    """Connections, per-message conn and time, chunk layout and kept bytes of an archive."""

    def __init__(self, reader: ArchiveReader) -> None:
        if META_MEMBER not in reader.member_names:
            raise FormatError(f"{reader.path} is not a ROS bag archive (no {META_MEMBER})")
        self.reader = reader
        source = (reader.description or {}).get("source") or {}
        size = source.get("size")
        limit = (size if isinstance(size, int) else reader.path.stat().st_size * 64) + (64 << 20)
        try:
            meta = msgpack.unpackb(
                inflate_bounded(reader.member(META_MEMBER), limit, META_MEMBER),
                strict_map_key=False,
            )
            self.connections = {
                c.id: c for c in (Connection.unpack(v) for v in meta["connections"])
            }
            self.orders = [tuple(bytes(n) for n in order) for order in meta["orders"]]
            self.segments: list[Any] = meta["segments"]
            self.template = np.frombuffer(meta["template"], dtype=np.int16)
            self.headers: dict[int, bytes] = {int(k): v for k, v in meta["headers"].items()}
            self.conn = np.frombuffer(meta["conn"], dtype=np.uint32)
            self.time = np.frombuffer(meta["time"], dtype=np.int64)
            self.chunks: list[tuple[str, int, int]] = [tuple(c) for c in meta["chunks"]]
            self.unindexed = bool(meta["unindexed"])
            self.kept_chunks = int(meta["kept_chunks"])
            self.cut = meta["cut"]
        except (ValueError, KeyError, TypeError, zlib.error, msgpack.ExtraData) as error:
            raise FormatError(f"damaged {META_MEMBER} member: {error!r}") from None
        if len(self.time) != len(reader) or len(self.conn) != len(reader):
            raise FormatError(
                f"{META_MEMBER} describes {len(self.time)} messages, not {len(reader)}"
            )

    @cached_property
    def raw(self) -> bytes:
        return self.reader.member(RAW_MEMBER)

    @cached_property
    def templates(self) -> Templates:
        return Templates([list(o) for o in self.orders])  # type: ignore[misc]

    def topic(self, conn: int) -> str:
        c = self.connections.get(conn)
        return c.topic if c is not None else f"conn:{conn}"

    def conns_of(self, topics: set[str] | None) -> NDArray[np.bool_]:
        """Per message: whether its topic is in `topics` (all when None)."""
        if topics is None:
            return np.ones(len(self.conn), dtype=bool)
        ids = [c.id for c in self.connections.values() if c.topic in topics]
        return np.isin(self.conn, np.array(ids, dtype=np.uint32))
