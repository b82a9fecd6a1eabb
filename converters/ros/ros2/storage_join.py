"""A storage file joined back from its skeleton and its messages' datas, whichever its
storage (sqlite3 or MCAP): export's and verify's way out.

Why a module of its own: `storage.py` is below the storage modules (`db3_skeleton.py`,
`mcap_skeleton.py` build on it), so the choice between them is made above them, here.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from .datas import Source
from .db3_skeleton import join_db3
from .mcap_skeleton import join_mcap


def join(
    storage: str, skeleton: bytes | memoryview, datas: Source | Iterable[bytes | memoryview]
) -> Iterator[bytes | memoryview]:
    """The pieces of a storage file: its skeleton with `datas` (file order: a `Source`, or
    byte strings) put back."""
    if storage == "sqlite3":
        return join_db3(skeleton, datas)
    return join_mcap(skeleton, datas)
