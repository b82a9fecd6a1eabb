"""The per-message columns of a conversion (time, data length, topic), held compactly.

Why not lists or `array("q")` of every column: a bag of ~10 M small messages held six
int64 columns and the sort's temporaries, ~500 MB. Here each column is spooled to a
temporary file as it is scanned, at its own width (times 8 bytes, lengths 4, topic codes
4), and read back whole only for the write; a message's file and rank are its position
among the files' counts, its spool offset the sum of the lengths before it, so neither is
kept.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import IO, Any, Final

import numpy as np
from numpy.typing import NDArray

from nanorec.errors import FormatError

_DTYPES: Final[dict[str, np.dtype[Any]]] = {
    "time": np.dtype("<i8"),
    "length": np.dtype("<u4"),
    "topic": np.dtype("<u4"),
}


class Columns:
    """The columns of the messages scanned so far, file after file, in file order."""

    def __init__(self, scratch: Callable[[str], IO[bytes]]) -> None:
        self._files = {name: scratch(f"column-{name}") for name in _DTYPES}
        #: messages of each storage file, in bag order
        self.counts: list[int] = []
        self.count = 0

    def add(self, times: NDArray[Any], lengths: NDArray[Any], topics: NDArray[Any]) -> None:
        """A batch of one file's messages (the file's count goes up by as many)."""
        if len(lengths) and int(lengths.max()) >= 1 << 32:
            raise FormatError("a message of 4 GiB or more")
        for name, values in (("time", times), ("length", lengths), ("topic", topics)):
            self._files[name].write(np.ascontiguousarray(values, _DTYPES[name]).data)
        self.counts[-1] += len(times)
        self.count += len(times)

    def start_file(self) -> None:
        self.counts.append(0)

    def read(self, name: str) -> NDArray[Any]:
        """A column whole (once the scan is done)."""
        file = self._files[name]
        file.flush()
        file.seek(0)
        values: NDArray[Any] = np.fromfile(file, _DTYPES[name], self.count)
        return values

    def file_and_rank(self, numbers: NDArray[Any]) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """The storage file of each message numbered (in scan order) and its rank in it."""
        starts = np.cumsum([0, *self.counts[:-1]], dtype=np.int64)
        file = np.searchsorted(starts, numbers, "right") - 1
        return file, numbers - starts[file]
