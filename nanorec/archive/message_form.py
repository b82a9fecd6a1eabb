"""The form a message takes in `messages.msgpack`, and the checks it passes on the way in.

Kept apart from `MessageStream` (which buffers, indexes and flushes messages) because these
are pure rules on one message: its top-level keys (str, unique, not `"nanorec.t"`), its flags
and timestamp ranges, its caller metadata (packed for the index), and the `"nanorec.t"`
timestamp entry patched into its packed map (see `nanorec.archive.wire`). Each raises `UsageError`
(or `TypeError` for a value of the wrong type) naming the message.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from typing import Any, Final

import msgpack

from nanorec.archive.index import RESERVED_METADATA
from nanorec.archive.wire import TIMESTAMP_KEY, map_header, read_map_header, timestamp_entry
from nanorec.errors import FormatError, UsageError

#: A fixmap's first byte by entry count.
FIXMAP_HEADERS: Final = tuple(bytes((0x80 | count,)) for count in range(16))
INT64_MIN: Final = -(2**63)
INT64_MAX: Final = 2**63 - 1
_UINT64_MAX: Final = 2**64 - 1


def embed_timestamp(
    packed: bytes, entries: int, timestamp: int, number: int
) -> tuple[bytes | memoryview, ...]:
    """Message `number`'s packed map (`entries` top-level keys) with the `"nanorec.t"` entry
    appended, as pieces written one after the other (a large message is not copied)."""
    first = packed[0] if packed else 0
    # The common case, a fixmap that stays a fixmap: only the count byte changes.
    if 0x80 <= first <= 0x8E and first - 0x80 == entries:
        if len(packed) < 4096:  # small: one piece (one CRC, one buffer to write)
            return (
                b"".join((FIXMAP_HEADERS[entries + 1], packed[1:], timestamp_entry(timestamp))),
            )
        return FIXMAP_HEADERS[entries + 1], memoryview(packed)[1:], timestamp_entry(timestamp)
    try:
        count, header_len = read_map_header(packed)
    except FormatError as error:
        raise UsageError(f"message {number}: {error}") from None
    if count != entries:
        raise UsageError(
            f"message {number}: the packed map has {count} entries but {entries} types were given"
        )
    return map_header(count + 1), memoryview(packed)[header_len:], timestamp_entry(timestamp)


def check_types(types: tuple[str, ...]) -> None:
    """A message's top-level keys: str, unique, none of them nanorec's own."""
    for name in types:
        if type(name) is not str:
            raise TypeError(f"top-level keys must be str, not {type(name).__name__}")
        if name == TIMESTAMP_KEY:
            raise UsageError(f"{TIMESTAMP_KEY!r} is a reserved top-level key")
    if len(set(types)) != len(types):
        raise UsageError(f"duplicate top-level keys in {types}")


def checked_flags(flags: int) -> int:
    """`flags` as an int in [0, 2**64)."""
    bits = flags if type(flags) is int else operator.index(flags)
    if not 0 <= bits <= _UINT64_MAX:
        raise UsageError(f"flags must be in [0, 2**64), not {bits}")
    return bits


def pack_metadata(metadata: Mapping[str, Any]) -> bytes:
    """The caller's metadata entries packed one after the other (keys str, not reserved)."""
    parts = []
    for key, value in metadata.items():
        if type(key) is not str:
            raise TypeError(f"metadata keys must be str, not {type(key).__name__}")
        if key in RESERVED_METADATA:
            raise UsageError(f"metadata key {key!r} is written by nanorec itself")
        try:
            parts.append(msgpack.packb(key) + msgpack.packb(value))
        except (TypeError, ValueError, OverflowError) as error:
            raise TypeError(f"metadata {key!r} cannot be packed: {error}") from None
    return b"".join(parts)


def run_length(messages: Sequence[Any], types: Sequence[Any], timestamps_us: Sequence[int]) -> int:
    """How many messages a run holds (one types tuple and one timestamp each, or `UsageError`)."""
    count = len(messages)
    if len(types) != count or len(timestamps_us) != count:
        raise UsageError("one types tuple and one timestamp per message are needed")
    return count
