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
        self._extra = bytearray()
        self._file: IO[bytes] | None = None
        self._chunks: list[_Chunk] = []

    def append(self, row: Row, extra: bytes) -> None:
        self._rows.append(row)
        if extra:
            self._extra += extra
        if len(self._rows) >= self.chunk_rows:
            self.spill()

    def spill(self) -> None:
        """Write the rows in memory to the spool file."""
        rows = self._rows
        count = len(rows)
        if not count:
            return
        if self._file is None:
            # Anonymous (O_TMPFILE on Linux): it vanishes with the process, even on a kill.
            self._file = tempfile.TemporaryFile(  # noqa: SIM115 - closed in close()
                dir=self.directory, prefix=".nanorec-index-"
            )
        table = np.array(rows, dtype=_ROW)
        self.max_length = max(self.max_length, int(table["length"].max()))
        self.max_flags = max(self.max_flags, int(table["flags"].max()))
        position = self._file.seek(0, os.SEEK_END)
        for name, dtype in _COLUMNS:
            self._file.write(table[name].astype(dtype).tobytes())
        self._file.write(self._extra)
        self._chunks.append(_Chunk(position, count, len(self._extra)))
        rows.clear()
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

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


__all__ = ["IndexSpool", "Row"]
