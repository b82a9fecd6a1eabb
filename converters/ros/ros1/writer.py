"""`BagWriter`: write a valid, indexed bag 2.0 the way ROS's C++ writer does.

Fields sorted by name, chunks closed past `chunk_threshold` uncompressed bytes (768 KiB as
`rosbag record`), each connection record written in the chunk of its first message and
again in the index section, index data after each chunk, then connections and chunk infos,
and finally the bag header rewritten with the index position. Used for cuts of a bag
(`filter.py`), the repair of a crashed one, and the synthetic bags of tests and benchmarks
(`generate.py`, which can also leave a bag as a killed writer does).
"""

from __future__ import annotations

from typing import BinaryIO, Final

from nanorec.errors import UnknownNameError, UsageError

from . import compression as compressions
from .records import (
    BAG_HEADER_SPACE,
    OP_BAG_HEADER,
    OP_CHUNK,
    OP_CHUNK_INFO,
    OP_CONNECTION,
    OP_INDEX,
    OP_MESSAGE,
    VERSION_LINE,
    Fields,
    build_fields,
    pack_time,
    pack_u32,
    pack_u64,
    record,
)

CHUNK_THRESHOLD: Final = 768 * 1024


def _sorted(*fields: tuple[bytes, bytes]) -> Fields:
    return tuple(sorted(fields))


def bag_header(index_pos: int, conns: int, chunks: int) -> bytes:
    header = build_fields(
        _sorted(
            (b"index_pos", pack_u64(index_pos)),
            (b"conn_count", pack_u32(conns)),
            (b"chunk_count", pack_u32(chunks)),
            (b"op", bytes((OP_BAG_HEADER,))),
        )
    )
    padding = b" " * (BAG_HEADER_SPACE - len(header))
    return pack_u32(len(header)) + header + pack_u32(len(padding)) + padding


def connection_record(conn: int, topic: str, fields: Fields) -> bytes:
    return record(
        _sorted(
            (b"conn", pack_u32(conn)),
            (b"op", bytes((OP_CONNECTION,))),
            (b"topic", topic.encode()),
        ),
        build_fields(fields),
    )


def message_record(conn: int, time_ns: int, data: bytes) -> bytes:
    return record(
        _sorted(
            (b"conn", pack_u32(conn)),
            (b"op", bytes((OP_MESSAGE,))),
            (b"time", pack_time(time_ns)),
        ),
        data,
    )


class BagWriter:
    """Write to a seekable binary `stream`; `close()` writes the index (see the module)."""

    def __init__(
        self,
        stream: BinaryIO,
        *,
        compression: str = "none",
        chunk_threshold: int = CHUNK_THRESHOLD,
    ) -> None:
        if compression not in compressions.KINDS:
            raise UsageError(
                f"compression must be one of {compressions.KINDS}, not {compression!r}"
            )
        self.stream = stream
        self.compression = compression
        self.chunk_threshold = chunk_threshold
        self.connections: dict[int, tuple[str, Fields]] = {}
        self._written: set[int] = set()
        self._chunk: list[bytes | bytearray] = []
        self._chunk_size = 0
        self._chunk_index: dict[int, list[tuple[int, int]]] = {}
        self._chunk_infos: list[tuple[int, int, int, dict[int, int]]] = []
        self.messages = 0
        stream.write(VERSION_LINE + bag_header(0, 0, 0))

    def add_connection(self, conn: int, topic: str, fields: Fields) -> None:
        """Declare connection `conn` (its record is written with its first message)."""
        self.connections[conn] = (topic, fields)

    def write(self, conn: int, time_ns: int, data: bytes | bytearray) -> None:
        if conn not in self.connections:
            raise UnknownNameError(f"connection {conn} was not added")
        if conn not in self._written:
            topic, fields = self.connections[conn]
            self._append(connection_record(conn, topic, fields))
            self._written.add(conn)
        self._chunk_index.setdefault(conn, []).append((time_ns, self._chunk_size))
        # the record's head and its data kept apart: a message of a GiB is not copied into
        # a record, nor into a joined chunk when chunks are stored uncompressed
        head = message_record(conn, time_ns, b"")
        self._append(head[:-4] + pack_u32(len(data)))
        self._append(data)
        self.messages += 1
        if self._chunk_size > self.chunk_threshold:
            self.flush_chunk()

    def _append(self, data: bytes | bytearray) -> None:
        self._chunk.append(data)
        self._chunk_size += len(data)

    def chunk_header(self, size: int, stored: int) -> bytes:
        fields = _sorted(
            (b"compression", self.compression.encode()),
            (b"op", bytes((OP_CHUNK,))),
            (b"size", pack_u32(size)),
        )
        header = build_fields(fields)
        return pack_u32(len(header)) + header + pack_u32(stored)

    def flush_chunk(self) -> None:
        """Close the current chunk: write it and its index data records."""
        if not self._chunk_index:
            return
        position = self.stream.tell()
        if self.compression == "none":
            self.stream.write(self.chunk_header(self._chunk_size, self._chunk_size))
            for piece in self._chunk:
                self.stream.write(piece)
        else:
            data = b"".join(self._chunk)
            stored = compressions.compress(self.compression, data)
            self.stream.write(self.chunk_header(len(data), len(stored)) + stored)
        times = [t for entries in self._chunk_index.values() for t, _ in entries]
        counts = {}
        for conn in sorted(self._chunk_index):
            entries = sorted(self._chunk_index[conn], key=lambda e: e[0])
            counts[conn] = len(entries)
            body = b"".join(pack_time(t) + pack_u32(offset) for t, offset in entries)
            self.stream.write(
                record(
                    _sorted(
                        (b"conn", pack_u32(conn)),
                        (b"count", pack_u32(len(entries))),
                        (b"op", bytes((OP_INDEX,))),
                        (b"ver", pack_u32(1)),
                    ),
                    body,
                )
            )
        self._chunk_infos.append((position, min(times), max(times), counts))
        self._chunk, self._chunk_size, self._chunk_index = [], 0, {}

    def close(self) -> None:
        """Finish the bag: last chunk, index section, bag header."""
        self.flush_chunk()
        index_pos = self.stream.tell()
        for conn in sorted(self._written):
            topic, fields = self.connections[conn]
            self.stream.write(connection_record(conn, topic, fields))
        for position, start, end, counts in self._chunk_infos:
            body = b"".join(pack_u32(c) + pack_u32(n) for c, n in sorted(counts.items()))
            self.stream.write(
                record(
                    _sorted(
                        (b"chunk_pos", pack_u64(position)),
                        (b"count", pack_u32(len(counts))),
                        (b"end_time", pack_time(end)),
                        (b"op", bytes((OP_CHUNK_INFO,))),
                        (b"start_time", pack_time(start)),
                        (b"ver", pack_u32(1)),
                    ),
                    body,
                )
            )
        end = self.stream.tell()
        self.stream.seek(len(VERSION_LINE))
        self.stream.write(bag_header(index_pos, len(self._written), len(self._chunk_infos)))
        self.stream.seek(end)

    def crash(self, *, cut: int = 0) -> None:
        """Stop as a killed `rosbag record` does: the current chunk left open (size and data
        length 0; an uncompressed chunk's records after its header, a compressed one's held
        in the compressor but lz4's frame header), no index, the bag header as opened; then
        drop the last `cut` bytes (a record cut by the kill)."""
        if not self._chunk_index:
            return
        if self.compression == "none":
            body = b"".join(self._chunk)
        else:
            body = compressions.LZ4_HEADER if self.compression == "lz4" else b""
        data = self.chunk_header(0, 0) + body
        self.stream.write(data[: len(data) - cut])
