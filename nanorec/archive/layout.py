"""Which layout new archives get: compact (the default) or stored.

Compact archives deflate every member (`messages.msgpack` in independent blocks, see
`nanorec.archive.blocks`): a fraction of the stored size, a message read inflates at most one
16 KiB block. Stored archives keep every member as is: zero-copy reads of large payloads
(`ArchiveReader.member_view`), at several times the disk cost. Every path that writes an
archive (convert, batch, recover, adopt, repack) asks `compact_default()` unless told, so
`nanorec convert --stored` reaches the converters without a new option in their contract.

An archive that lives for one command (a native file opened by a verb, `nanorec.open` of a
native file) is a `scratch` one: stored, and never synced to disk, since deflating and
syncing what is deleted a moment later only costs time.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from typing import Final

from nanorec.errors import UsageError

COMPACT: Final = "compact"
STORED: Final = "stored"
LAYOUTS: Final = (COMPACT, STORED)

_LAYOUT: contextvars.ContextVar[str] = contextvars.ContextVar("nanorec_layout", default=COMPACT)
_DURABLE: contextvars.ContextVar[bool] = contextvars.ContextVar("nanorec_durable", default=True)


def compact_default() -> bool:
    """Whether a new archive is compact unless its writer is told otherwise."""
    return _LAYOUT.get() == COMPACT


@contextlib.contextmanager
def use_layout(layout: str) -> Iterator[None]:
    """Within the block, new archives get `layout` ("compact" or "stored") by default."""
    if layout not in LAYOUTS:
        raise UsageError(f"layout is one of {LAYOUTS}, not {layout!r}")
    token = _LAYOUT.set(layout)
    try:
        yield
    finally:
        _LAYOUT.reset(token)


def durable() -> bool:
    """Whether a new archive is synced to disk as it is written and at close."""
    return _DURABLE.get()


@contextlib.contextmanager
def scratch() -> Iterator[None]:
    """Within the block, new archives are temporary: stored and not synced (see above)."""
    token = _DURABLE.set(False)
    try:
        with use_layout(STORED):
            yield
    finally:
        _DURABLE.reset(token)


__all__ = ["COMPACT", "LAYOUTS", "STORED", "compact_default", "durable", "scratch", "use_layout"]
