"""What a walk of a bag finds (`scan.walk` makes it, `convert` writes it, `export` reads its
archived form): the message entries, spooled in blocks, and each chunk's plan for being
written back, with every byte that is not rebuilt kept as a source range."""

from __future__ import annotations

from array import array
from dataclasses import dataclass, field
from typing import IO, Any, Final

import numpy as np
from numpy.typing import NDArray

from nanorec.contract import Region

from .connection import Connection
from .records import Fields
from .template import Templates

FROM_SOURCE: Final = 0
FROM_SPOOL: Final = 1


@dataclass
class RawSegment:
    """Source bytes `[start, end)` written back as they are."""

    start: int
    end: int


@dataclass
class ChunkPlan:
    """A chunk written back from its messages: `head` is the source range of its header
    length word, header and data length word. Its records in file order are `runs`: `n >= 0`
    is the next `n` message entries (from `first` on), `n < 0` is `inner[-1 - n]`, a record
    kept as bytes (a connection, an unknown op)."""

    head: RawSegment
    compression: str
    #: "rebuild": compress the records again (checked to give the stored bytes);
    #: "open": a crashed writer's uncompressed chunk, written as plain records.
    mode: str
    first: int = 0
    runs: array[int] = field(default_factory=lambda: array("q"))
    inner: list[bytes] = field(default_factory=list)

    def add_message(self) -> None:
        runs = self.runs
        if runs and runs[-1] >= 0:
            runs[-1] += 1
        else:
            runs.append(1)

    def add_messages(self, count: int) -> None:
        runs = self.runs
        if runs and runs[-1] >= 0:
            runs[-1] += count
        else:
            runs.append(count)

    def add_inner(self, record: bytes) -> None:
        self.runs.append(-1 - len(self.inner))
        self.inner.append(record)


#: One entry per message record, in file order: spooled to a file in blocks, so memory
#: stays bounded however many messages a bag holds.
ROW: Final = np.dtype(
    [
        ("conn", "<u4"),
        ("time", "<i8"),  # ns
        ("src", "i1"),  # FROM_SOURCE or FROM_SPOOL
        ("offset", "<i8"),  # of the payload, in the source or the spool
        ("length", "<u4"),
        ("template", "<i2"),  # -1: the header is in `Entries.headers`
    ]
)
_BLOCK: Final = 1 << 16


class Entries:
    """Appends rows (see `ROW`) and writes them to `file` a block at a time."""

    def __init__(self, file: IO[bytes]) -> None:
        self.file = file
        self.flushed = 0
        self.headers: dict[int, bytes] = {}
        self._columns: list[array[int]] = []
        self._reset()

    def _reset(self) -> None:
        self._columns = [array(code) for code in ("I", "q", "b", "q", "I", "h")]
        (self.conn, self.time, self.src, self.offset, self.length, self.template) = self._columns

    def __len__(self) -> int:
        return self.flushed + len(self.conn)

    def flush(self) -> None:
        count = len(self.conn)
        if not count:
            return
        block = np.empty(count, ROW)
        for name, column in zip(ROW.names or (), self._columns, strict=True):
            block[name] = np.frombuffer(column, dtype=ROW[name].newbyteorder("="))
        self.file.write(block.tobytes())
        self.flushed += count
        self._reset()

    def extend(self, *columns: NDArray[Any]) -> None:
        """Append rows given as one array per column (in `ROW`'s order)."""
        for column, values in zip(self._columns, columns, strict=True):
            column.frombytes(values.astype(column.typecode, copy=False).tobytes())

    def full(self) -> bool:
        return len(self.conn) >= _BLOCK


@dataclass
class Scan:
    segments: list[RawSegment | ChunkPlan]
    entries: Entries
    templates: Templates
    connections: dict[int, Connection]
    bag_header: Fields | None
    tail_start: int
    cut: Region | None = None
    damaged: list[Region] = field(default_factory=list)
    #: Chunks kept as stored bytes because recompressing them gave other bytes.
    kept_chunks: int = 0
    #: (compression, size, stored size) of every complete chunk, in file order.
    chunk_stats: list[tuple[str, int, int]] = field(default_factory=list)
    unindexed: bool = False
