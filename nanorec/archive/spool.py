"""`IndexSpool`: the writer's per-message index rows, in bounded memory.

Rows are kept in a small in-memory chunk and spooled, column by column, to an anonymous
temporary file in the output directory (it vanishes with the process, even on a kill), so
memory stays bounded however many messages are written; `index.msgpack` and the description's
columns are generated from the spooled chunks at close, with numpy.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any, Final

import numpy as np
from numpy.typing import NDArray

#: One index row: length, timestamp_us, crc, flags, types code, extra count, extra length.
Row = tuple[int, int, int, int, int, int, int]

#: One index row per message while it is in memory (spooled per chunk, column by column).
_ROW: Final = np.dtype(
    [
        ("length", "<i8"),
        ("timestamp_us", "<i8"),
        ("crc", "<u4"),
        ("flags", "<u8"),
        ("types", "<u4"),
        ("extra_count", "<u4"),
        ("extra_length", "<u4"),
    ]
)
# Spooled columns, in the order they are stored per chunk.
_COLUMNS: Final[tuple[tuple[str, np.dtype[Any]], ...]] = tuple(
    (name, np.dtype(_ROW[name])) for name in _ROW.names or ()
)


class _Chunk:
    """Where one spooled chunk of index rows lives in the spool file."""

    __slots__ = ("extra_bytes", "position", "rows")

    def __init__(self, position: int, rows: int, extra_bytes: int) -> None:
        self.position = position
        self.rows = rows
        self.extra_bytes = extra_bytes


class IndexSpool:
    """Index rows and caller-metadata bytes, spilled to a temporary file in `directory`
    every `chunk_rows` rows."""

    def __init__(self, directory: Path, chunk_rows: int) -> None:
        self.directory = directory
        self.chunk_rows = chunk_rows
        self.max_length = 0
        self.max_flags = 0
        self._rows: list[Row] = []
        self._blocks: list[NDArray[Any]] = []  # tables of rows before `_rows` (see `extend`)
        self._count = 0  # rows in `_blocks`
        self._extra = bytearray()
        self._file: IO[bytes] | None = None
        self._chunks: list[_Chunk] = []
        #: The last rows and their extra bytes, kept in memory at close (see `spill`).
        self._held: tuple[NDArray[Any], bytes] | None = None

    def append(self, row: Row, extra: bytes) -> None:
        self._rows.append(row)
        if extra:
            self._extra += extra
        if len(self._rows) + self._count >= self.chunk_rows:
            self.spill()

    def extend(
        self,
        lengths: NDArray[Any],
        timestamps: NDArray[Any],
        crcs: NDArray[Any],
        flags: int,
        types: int | NDArray[Any],
    ) -> None:
        """Append one row per message of a run written at once (no caller metadata):
        columns instead of a tuple per row, for `ArchiveWriter.write_stored_rows`."""
        block = np.zeros(len(lengths), dtype=_ROW)
        block["length"] = lengths
        block["timestamp_us"] = timestamps
        block["crc"] = crcs
        block["flags"] = flags
        block["types"] = types
        self._take_rows()
        self._blocks.append(block)
        self._count += len(block)
        if self._count >= self.chunk_rows:
            self.spill()

    def _take_rows(self) -> None:
        """Move the tuple rows appended so far into `_blocks`, as one table (keeps order)."""
        if self._rows:
            self._blocks.append(np.array(self._rows, dtype=_ROW))
            self._count += len(self._rows)
            self._rows.clear()

    def spill(self, *, last: bool = False) -> None:
        """Write the rows in memory to the spool file. `last` (at close): when nothing was
        spooled yet, keep them in memory instead: a small archive's index rows made a
        temporary file, written and read back once a column, for nothing."""
        self._take_rows()
        if not self._blocks:
            return
        table = np.concatenate(self._blocks) if len(self._blocks) > 1 else self._blocks[0]
        self._blocks.clear()
        self._count = 0
        count = len(table)
        if not count:
            return
        self.max_length = max(self.max_length, int(table["length"].max()))
        self.max_flags = max(self.max_flags, int(table["flags"].max()))
        if last and self._file is None:
            self._held = (table, bytes(self._extra))
            self._extra.clear()
            return
        if self._file is None:
            # Anonymous (O_TMPFILE on Linux): it vanishes with the process, even on a kill.
            self._file = tempfile.TemporaryFile(  # noqa: SIM115 - closed in close()
                dir=self.directory, prefix=".nanorec-index-"
            )
        position = self._file.seek(0, os.SEEK_END)
        for name, dtype in _COLUMNS:
            self._file.write(table[name].astype(dtype).tobytes())
        self._file.write(self._extra)
        self._chunks.append(_Chunk(position, count, len(self._extra)))
        self._extra.clear()

    def chunks(self) -> Iterator[tuple[dict[str, NDArray[Any]], bytes]]:
        """Each spooled chunk's columns and extra-metadata bytes, in order (call `spill`
        first)."""
        for chunk in self._chunks:
            assert self._file is not None
            self._file.seek(chunk.position)
            columns: dict[str, NDArray[Any]] = {}
            for name, dtype in _COLUMNS:
                data = self._file.read(chunk.rows * dtype.itemsize)
                columns[name] = np.frombuffer(data, dtype=dtype)
            yield columns, self._file.read(chunk.extra_bytes)
        if self._held is not None:
            table, extra = self._held
            yield (
                {name: np.ascontiguousarray(table[name], dtype) for name, dtype in _COLUMNS},
                extra,
            )

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


__all__ = ["IndexSpool", "Row"]
