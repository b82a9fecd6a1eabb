"""The embedded timestamp: map-header patching for fixmap, map16 and map32."""

from __future__ import annotations

import msgpack
import pytest

from nanorec.archive.wire import (
    TIMESTAMP_KEY,
    embed_timestamp,
    map_header,
    read_array_header,
    read_map_header,
    timestamp_patch,
)
from nanorec.errors import FormatError

TIMESTAMPS = [0, 1, 2**32 - 1, 2**32, -1, -(2**63), 2**63 - 1]
#: Every timestamp's encoding on maps around the fixmap limit, and the map16/map32 limit's
#: maps (the header grows there; a timestamp's encoding does not depend on it) with three.
ROUND_TRIPS = [(count, t) for count in (0, 1, 14, 15, 16) for t in TIMESTAMPS] + [
    (count, t) for count in (65534, 65535, 65536) for t in (0, -1, 2**63 - 1)
]


@pytest.mark.parametrize(("count", "timestamp"), ROUND_TRIPS)
def test_embed_timestamp_round_trip(count: int, timestamp: int) -> None:
    message = {f"k{i}": i for i in range(count)}
    stored = embed_timestamp(msgpack.packb(message), timestamp)
    decoded = msgpack.unpackb(stored)
    assert decoded.pop(TIMESTAMP_KEY) == timestamp
    assert decoded == message
    assert list(decoded) == list(message)  # the entry is appended, order kept


@pytest.mark.parametrize(("count", "before", "after"), [(14, 1, 1), (15, 1, 3), (65535, 3, 5)])
def test_header_grows_at_boundaries(count: int, before: int, after: int) -> None:
    packed = msgpack.packb({f"k{i}": 0 for i in range(count)})
    header, body_start, _ = timestamp_patch(packed, 7)
    assert body_start == before
    assert len(header) == after


def test_headers_match_msgpack() -> None:
    for count in (0, 15, 16, 65535, 65536):
        packed = msgpack.packb({f"k{i}": 0 for i in range(count)})
        assert packed.startswith(map_header(count))
        assert read_map_header(packed) == (count, len(map_header(count)))
    for count in (0, 15, 16, 65536):
        assert read_array_header(msgpack.packb([0] * count))[0] == count


@pytest.mark.parametrize("packed", [b"", msgpack.packb([1, 2]), msgpack.packb(3), b"\xde\x00"])
def test_non_map_is_rejected(packed: bytes) -> None:
    with pytest.raises(FormatError):
        timestamp_patch(packed, 0)
