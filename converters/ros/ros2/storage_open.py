"""Opening a storage file whichever its storage (sqlite3 or MCAP): the conversion's way in.

Why a module of its own: it is the one place that knows both storages' readers (`db3.py`,
`mcap_file.py`), which build on `storage.py`; with the choice made there, the storage
modules and what they share would import each other. Reading an archive back needs only
`storage_join.py`, so it does not load the readers.
"""

from __future__ import annotations

import mmap

from .db3 import open_db3
from .mcap_file import open_mcap
from .storage import StorageFile


def open_storage(
    storage: str, buf: bytes | mmap.mmap | memoryview, main_size: int | None = None
) -> StorageFile:
    """The storage file `buf` (a sqlite3 or MCAP file's bytes; with `main_size`, a sqlite3
    file's `main_size` bytes followed by its WAL's)."""
    if storage == "sqlite3":
        return open_db3(buf, main_size)
    return open_mcap(buf)
