"""Properties of the wire layer, both ways (parse(build(x)) == x): varints, fields of every
wire type, packed arrays, and gzip members built and inflated."""

from __future__ import annotations

import struct

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from nanorec.converters.pbstream.stream import (
    GZIP_HEADER,
    MAGIC,
    Frame,
    build_member,
    inflate_member,
    iter_frames,
)
from nanorec.converters.pbstream.wire import (
    FIXED32,
    FIXED64,
    LEN,
    VARINT,
    as_int32,
    iter_fields,
    key,
    packed_varints,
    read_varint,
    unpack_varints,
    varint,
)

_FIELD = st.one_of(
    st.tuples(st.integers(1, 1 << 20), st.just(VARINT), st.integers(0, (1 << 64) - 1)),
    st.tuples(st.integers(1, 1 << 20), st.just(FIXED64), st.binary(min_size=8, max_size=8)),
    st.tuples(st.integers(1, 1 << 20), st.just(FIXED32), st.binary(min_size=4, max_size=4)),
    st.tuples(st.integers(1, 1 << 20), st.just(LEN), st.binary(max_size=300)),
)


@given(st.integers(-(1 << 63), (1 << 64) - 1))
def test_varint_round_trip(value: int) -> None:
    data = varint(value)
    assert read_varint(data, 0, len(data)) == (value % (1 << 64), len(data))


@given(st.lists(_FIELD, max_size=20))
def test_fields_round_trip(fields: list[tuple[int, int, object]]) -> None:
    parts = []
    for number, wire, value in fields:
        if wire == VARINT:
            assert isinstance(value, int)
            parts.append(key(number, wire) + varint(value))
        elif wire == LEN:
            assert isinstance(value, bytes)
            parts.append(key(number, wire) + varint(len(value)) + value)
        else:
            assert isinstance(value, bytes)
            parts.append(key(number, wire) + value)
    data = b"".join(parts)
    parsed = []
    for number, wire, a, b in iter_fields(data):
        parsed.append((number, wire, a if wire == VARINT else data[a:b]))
    assert parsed == fields


@given(st.lists(st.integers(-(1 << 31), (1 << 31) - 1), max_size=500))
def test_packed_int32_round_trip(values: list[int]) -> None:
    assert as_int32(unpack_varints(packed_varints(np.array(values, np.int64)))).tolist() == values


@settings(max_examples=50)
@given(st.lists(st.binary(max_size=3000), max_size=8))
def test_members_round_trip(payloads: list[bytes]) -> None:
    members = [build_member(p) for p in payloads]
    assert all(m.startswith(GZIP_HEADER) for m in members)
    stream = MAGIC + b"".join(struct.pack("<Q", len(m)) + m for m in members)
    frames = list(iter_frames(stream))
    assert all(isinstance(f, Frame) for f in frames)
    found = [
        inflate_member(stream[f.start : f.end], f.start) for f in frames if isinstance(f, Frame)
    ]
    assert found == payloads
