"""The side members of a bag archive, read back (`BagMeta`); the per-message arrays are
read only when used (export needs templates and ranks, info times and connections)."""

from __future__ import annotations

from functools import cached_property
from typing import Any

import numpy as np
from numpy.typing import NDArray

from nanorec.archive.reader import ArchiveReader
from nanorec.errors import FormatError, UnsupportedError

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


class BagMeta:
    """Connections, chunk layout, kept bytes and per-message arrays of a bag archive."""

    def __init__(self, reader: ArchiveReader) -> None:
        if META_MEMBER not in reader.member_names:
            raise FormatError(f"{reader.path} is not a ROS bag archive (no {META_MEMBER})")
        self.reader = reader
        meta = reader.meta(META_MEMBER)
        try:
            version = meta.get("version") if isinstance(meta, dict) else None
            if version != META_VERSION:
                raise UnsupportedError(
                    f"{META_MEMBER} has layout version {version!r}; this nanorec reads "
                    f"{META_VERSION}"
                )
            self.connections = {
                c.id: c for c in (Connection.unpack(v) for v in meta["connections"])
            }
            self.orders = [tuple(bytes(n) for n in order) for order in meta["orders"]]
            self.segments: list[Any] = meta["segments"]
            self.headers: dict[int, bytes] = {int(k): v for k, v in meta["headers"].items()}
            self.rank_dtype = np.dtype(meta["rank"])
            self.chunks: list[tuple[str, int, int]] = [tuple(c) for c in meta["chunks"]]
            self.unindexed = bool(meta["unindexed"])
            self.kept_chunks = int(meta["kept_chunks"])
            self.cut = meta["cut"]
            #: Rebuilt from a killed conversion's messages: no layout to export exactly.
            self.adopted = bool(meta.get("adopted", False))
        except (ValueError, KeyError, TypeError) as error:
            raise FormatError(f"damaged {META_MEMBER} member: {error!r}") from None

    def _array(self, name: str, dtype: Any) -> NDArray[Any]:
        return self.reader.member_array(name, dtype)

    def check(self) -> None:
        """Read every side member once (`verify`): an archive it passes has what export
        needs (an adopted one has no template or rank: export writes a new bag)."""
        _ = (self.time, self.conn, self.raw)
        if not self.adopted:
            _ = (self.template, self.rank)
            self.check_kept()

    def check_kept(self) -> None:
        """Every kept span the layout names lies inside the kept bytes (export slices them:
        a short member would give a shorter bag, silently). FormatError otherwise."""
        size = len(self.raw)
        for segment in self.segments:
            spans = [segment[1:3]] if segment[0] == "raw" else [segment[1], *segment[6]]
            for start, length in spans:
                if start < 0 or length < 0 or start + length > size:
                    raise FormatError(
                        f"{META_MEMBER}: kept bytes {start}..{start + length} are past "
                        f"the {size} bytes of {RAW_MEMBER}"
                    )

    @cached_property
    def time(self) -> NDArray[np.int64]:
        """Per archive message: its ROS time in ns."""
        return self._array(TIME_MEMBER, "<i8")

    @cached_property
    def conn(self) -> NDArray[np.uint32]:
        """Per archive message: its connection id."""
        return self._array(CONN_MEMBER, "<u4")

    @cached_property
    def template(self) -> NDArray[np.int16]:
        """Per archive message: the field order of its record header (-1: kept bytes)."""
        return self._array(TEMPLATE_MEMBER, "<i2")

    @cached_property
    def rank(self) -> NDArray[Any]:
        """Per message record in file order: its archive number."""
        return self._array(RANK_MEMBER, self.rank_dtype)

    @cached_property
    def raw(self) -> memoryview:
        return self.reader.member_view(RAW_MEMBER)

    def topic(self, conn: int) -> str:
        c = self.connections.get(conn)
        return c.topic if c is not None else f"conn:{conn}"

    def conns_of(self, topics: set[str] | None) -> NDArray[np.bool_]:
        """Per message: whether its topic is in `topics` (all when None)."""
        if topics is None:
            return np.ones(len(self.conn), dtype=bool)
        ids = [c.id for c in self.connections.values() if c.topic in topics]
        return np.isin(self.conn, np.array(ids, dtype=np.uint32))
