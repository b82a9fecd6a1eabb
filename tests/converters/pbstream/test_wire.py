"""Our protobuf wire reader: varints (negative int32 as 10 bytes, sint32 zigzag), packed
fields in bulk, and errors naming the offset; cross-checked with the protobuf package on
generated records."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from nanorec.converters.pbstream.decode import decode_message, decode_record
from nanorec.converters.pbstream.generate import Plan, iter_payloads
from nanorec.converters.pbstream.records import V2_KINDS, describe
from nanorec.converters.pbstream.wire import (
    as_int32,
    as_sint32,
    iter_fields,
    packed_varints,
    read_varint,
    signed32,
    signed64,
    unpack_varints,
    varint,
)
from nanorec.errors import FormatError


def protobuf() -> tuple[Any, Any, Any]:
    """protobuf's side of the cross-checks (skips where the package is not installed)."""
    pytest.importorskip("google.protobuf")
    from tests.converters.pbstream.protobuf_reference import message_class, ours, plain

    return message_class, ours, plain


def test_varints_round_trip() -> None:
    rng = random.Random(3)
    values = [
        0,
        1,
        127,
        128,
        300,
        (1 << 63) - 1,
        -1,
        -(1 << 31),
        *(rng.getrandbits(64) for _ in range(200)),
    ]
    for value in values:
        data = varint(value)
        decoded, end = read_varint(data, 0, len(data))
        assert end == len(data) and decoded == value % (1 << 64)
    assert len(varint(-1)) == 10
    assert signed32(read_varint(varint(-5), 0, 10)[0]) == -5
    assert signed64(read_varint(varint(-(1 << 40)), 0, 10)[0]) == -(1 << 40)


def test_packed_varints_decode_in_bulk() -> None:
    rng = np.random.default_rng(5)
    values = np.concatenate([rng.integers(-(1 << 31), 1 << 31, 500), [0, 1, -1, 127, 128]])
    data = b"".join(varint(int(v)) for v in values)
    assert as_int32(unpack_varints(data)).tolist() == values.tolist()
    assert packed_varints(values) == data
    zigzag = [(v << 1) ^ (v >> 31) for v in values.tolist()]
    data = b"".join(varint(z & 0xFFFFFFFF) for z in zigzag)
    assert as_sint32(unpack_varints(data)).tolist() == values.tolist()
    with pytest.raises(FormatError):
        unpack_varints(b"\x01\x80")


@pytest.mark.parametrize("longest", [1, 2, 3, 4])
def test_packed_varints_of_each_length(longest: int) -> None:
    """Runs whose varints are at most 1, 2, 3 (grid cells: the shift-and-add path) and 4
    bytes, lengths mixed, against the one-at-a-time reader."""
    rng = np.random.default_rng(longest)
    values = rng.integers(0, 1 << (7 * longest), 2000)
    values[rng.random(2000) < 0.5] = 0
    data = b"".join(varint(int(v)) for v in values)
    assert unpack_varints(data).tolist() == values.tolist()
    assert unpack_varints(data[: len(varint(int(values[0])))]).tolist() == values[:1].tolist()


def test_errors_name_the_offset() -> None:
    with pytest.raises(FormatError) as error:
        list(iter_fields(b"\x08\x01\x12\x05ab", base=100))
    assert error.value.offset == 102
    with pytest.raises(FormatError) as error:
        list(iter_fields(b"\x08\x01\x0b", base=10))  # wire type 3
    assert error.value.offset == 12
    with pytest.raises(FormatError):
        read_varint(b"\xff" * 11, 0, 11)
    with pytest.raises(FormatError):
        list(iter_fields(b"\x00\x01"))  # field number 0


def test_last_singular_wins_and_unpacked_is_accepted() -> None:
    data = b"\x08\x05\x08\x07"  # trajectory_id twice
    assert decode_message(data, "NodeId") == {"trajectory_id": 7}
    cloud = b"\x18\x02\x18\x04\x1a\x01\x06"  # point_data unpacked twice, then packed
    assert decode_message(cloud, "CompressedPointCloud")["point_data"].tolist() == [2, 4, 6]


def test_packed_false_leaves_out_only_the_packed_fields() -> None:
    """Flat tables decode with `packed=False`: the same body less its packed arrays (point
    clouds, grid cells), which no table holds."""
    cloud = b"\x08\x03\x18\x02\x1a\x01\x06"  # num_points 3, point_data unpacked and packed
    assert decode_message(cloud, "CompressedPointCloud", packed=False) == {"num_points": 3}

    def without_packed(value: object) -> object:
        if isinstance(value, dict):
            return {k: without_packed(v) for k, v in value.items() if not hasattr(v, "dtype")}
        if isinstance(value, list):
            return [without_packed(v) for v in value]
        return value

    for payload in list(iter_payloads(Plan(trajectories=1, nodes=6, dims=3)))[1:]:
        kind = describe(payload, V2_KINDS).kind
        full = decode_record(kind, {"payload": payload})
        assert decode_record(kind, {"payload": payload}, packed=False) == without_packed(full)


@pytest.mark.parametrize("layout", ["2", "1"])
def test_generated_records_match_protobuf(layout: str) -> None:
    message_class, ours, plain = protobuf()
    serialized = message_class("SerializedData")
    for payload in list(iter_payloads(Plan(trajectories=2, nodes=8), layout))[1:]:
        info = describe(payload, V2_KINDS)
        mine = ours(decode_record(info.kind, {"payload": payload}))
        number = payload[0] >> 3
        assert mine == plain(serialized.FromString(payload))[f"f{number}"], info.kind


def test_generated_3d_records_match_protobuf() -> None:
    message_class, ours, plain = protobuf()
    serialized = message_class("SerializedData")
    for payload in list(iter_payloads(Plan(trajectories=1, nodes=4, dims=3)))[1:]:
        info = describe(payload, V2_KINDS)
        mine = ours(decode_record(info.kind, {"payload": payload}))
        assert mine == plain(serialized.FromString(payload))[f"f{payload[0] >> 3}"], info.kind


def test_a_short_fixed_field_is_a_format_error_not_a_struct_error() -> None:
    """`struct`'s own words ("unpack_from requires a buffer...") never reach a user."""
    from nanorec.converters.pbstream.wire import double_at, float_at

    with pytest.raises(FormatError, match="8-byte double") as caught:
        double_at(b"\0" * 10, 5)
    assert caught.value.offset == 5 and "unpack" not in str(caught.value)
    with pytest.raises(FormatError, match="4-byte float"):
        float_at(b"\0\0", 0)


def test_describe_prefix_needs_more_or_tells() -> None:
    """A prefix too short for the ids asks for more (None); the whole payload always gives
    an answer (a varint cut by the end of the record is `unknown`, never "more")."""
    from nanorec.converters.pbstream.records import Described, describe_prefix

    node = list(iter_payloads(Plan(trajectories=1, nodes=2)))
    payload = next(p for p in node if p[0] == 0x22)
    assert describe_prefix(payload[:3], len(payload), V2_KINDS) is None
    whole = describe_prefix(payload, len(payload), V2_KINDS)
    assert whole is not None and whole == describe(payload, V2_KINDS)
    cut = b"\x22\x03\x0a\x01\x88"  # a node whose id's varint runs past the record
    assert describe_prefix(cut, len(cut), V2_KINDS) == describe(cut, V2_KINDS)
    short = b"\x22\x02\x08\x96"  # a varint cut by the end of the whole payload
    assert describe_prefix(short, len(short), V2_KINDS) == Described("unknown")
