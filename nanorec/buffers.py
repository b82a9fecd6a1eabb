"""What a reader walks at absolute offsets: a file mapped into memory, or bytes already read.

One name for the union, so that a parser's `buf` says what it takes instead of `Any`: every
member indexes to an int, slices to bytes (a memoryview to a memoryview) and has the buffer
protocol (`np.frombuffer`, `struct.unpack_from`, `zlib`).
"""

from __future__ import annotations

import mmap
from typing import TypeAlias

#: An mmap of the file, or bytes (or a view) of it.
Buffer: TypeAlias = bytes | bytearray | memoryview | mmap.mmap

__all__ = ["Buffer"]
