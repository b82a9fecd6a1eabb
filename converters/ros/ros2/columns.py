"""The per-message columns of a conversion (time, data length, topic), held compactly.

Why not lists or `array("q")` of every column: a bag of ~10 M small messages held six
int64 columns and the sort's temporaries, ~500 MB. Here each column is spooled to a
temporary file as it is scanned, at its own width (times 8 bytes, lengths 4, topic codes
4), and read back whole only for the write; a message's file and rank are its position
among the files' counts, its spool offset the sum of the lengths before it, so neither is
kept. A batch's topic keys become archive topic codes through a table of the keys seen
(`known_codes`), not a sort a batch.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import IO, Any, Final

import numpy as np
from numpy.typing import NDArray

from nanorec.errors import FormatError

_BLOCK: Final = 1 << 20
_DTYPES: Final[dict[str, np.dtype[Any]]] = {
    "time": np.dtype("<i8"),
    "length": np.dtype("<u4"),
    "topic": np.dtype("<u4"),
}


class Columns:
    """The columns of the messages scanned so far, file after file, in file order."""

    def __init__(
        self, scratch: Callable[[str], IO[bytes]], file_dtype: str, rank_dtype: str
    ) -> None:
        self._files = {name: scratch(f"column-{name}") for name in _DTYPES}
        #: messages of each storage file, in bag order
        self.counts: list[int] = []
        #: the dtypes of the file and rank members
        self.dtypes = {"file": np.dtype(file_dtype), "rank": np.dtype(rank_dtype)}
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

    def read(self, name: str, start: int = 0, count: int | None = None) -> NDArray[Any]:
        """A column (once the scan is done): whole, or `count` values from `start`."""
        dtype = _DTYPES[name]
        file = self._files[name]
        file.flush()
        file.seek(start * dtype.itemsize)
        wanted = self.count - start if count is None else min(count, self.count - start)
        values: NDArray[Any] = np.frombuffer(file.read(wanted * dtype.itemsize), dtype)
        return values

    def read_bytes(self, name: str) -> bytes:
        """A column's bytes whole (the time column is the time member of a bag in order)."""
        file = self._files[name]
        file.flush()
        file.seek(0)
        return file.read()

    def members(self, order: NDArray[Any] | None) -> dict[str, bytes]:
        """The file and rank of each message in archive order (`order`: scan numbers, or None
        when it is the scan order), as `dtypes` say (`file` only for a bag of many files);
        FormatError past what they hold. Made a block at a time (one file's ranks at once:
        they are the scan numbers)."""
        out = {}
        for name, dtype in self.dtypes.items():
            if name == "file" and len(self.counts) < 2:
                continue
            held = [n for n, count in enumerate(self.counts) if count]  # files with messages
            largest = max(self.counts, default=0) - 1 if name == "rank" else max(held, default=0)
            if largest > np.iinfo(dtype).max:
                raise FormatError(f"a bag beyond {np.iinfo(dtype).max} files or messages")
            if len(self.counts) == 1:  # one file: a message's rank is its scan number
                ranks = np.arange(self.count, dtype=dtype) if order is None else order
                out[name] = np.asarray(ranks, dtype).tobytes()
                continue
            column = np.empty(self.count, dtype)
            for at in range(0, self.count, _BLOCK):
                stop = min(at + _BLOCK, self.count)
                numbers = np.arange(at, stop) if order is None else order[at:stop]
                column[at:stop] = self.file_and_rank(numbers)[name == "rank"]
            out[name] = column.tobytes()
        return out

    def file_and_rank(self, numbers: NDArray[Any]) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """The storage file of each message numbered (in scan order) and its rank in it."""
        starts = np.cumsum([0, *self.counts[:-1]], dtype=np.int64)
        file = np.searchsorted(starts, numbers, "right") - 1
        return file, numbers - starts[file]


#: Topic keys (sqlite topic ids, MCAP channel ids) looked up in a table when below this.
_KEYS: Final = 1 << 16


def known_codes(keys: NDArray[np.int64], known: NDArray[np.int64]) -> NDArray[np.int64] | None:
    """The archive codes of a batch's topic keys when every one is known (`known`: code + 1
    by key, 0 for a key not seen; see `learn_codes`), read from the table at once; else
    None: a new topic, sorted out by the caller in order of first coming (as every batch was
    before: ~1 ms a batch of small messages for the sort)."""
    if not len(keys):
        return keys
    if int(keys.min()) < 0 or int(keys.max()) >= len(known):
        return None
    codes = known[keys]
    return codes - 1 if codes.all() else None


def learn_codes(
    known: NDArray[np.int64], keys: NDArray[np.int64], codes: NDArray[np.int64]
) -> NDArray[np.int64]:
    """`known` with `keys` coded `codes`; a key outside 0 to 2**16 is not kept (its batches
    take the sort; a table of it could be huge)."""
    inside = (keys >= 0) & (keys < _KEYS)
    if not inside.any():
        return known
    grown = np.zeros(max(len(known), int(keys[inside].max()) + 1), np.int64)
    grown[: len(known)] = known
    grown[keys[inside]] = codes[inside] + 1
    return grown
