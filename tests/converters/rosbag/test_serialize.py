"""`serialize.encode` is the inverse of `msgdef.Decoder`: decoding then encoding gives the
payload back byte for byte, for the real bags' messages and for every builtin kind."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest

from nanorec import registry
from nanorec.converters.ros.ros1.archived import payload
from nanorec.converters.ros.ros1.msgdef import Decoder, parse_definition
from nanorec.converters.ros.ros1.serialize import encode
from tests.conftest import REALDATA

FOLDER = REALDATA / "rosbag"
BAGS = sorted(FOLDER.glob("*.bag")) if FOLDER.is_dir() else []
#: Messages checked per bag at most (spread over the whole bag).
LIMIT = 3000


@pytest.mark.realdata
@pytest.mark.skipif(not BAGS, reason="../shared/realdata/rosbag absent")
@pytest.mark.parametrize("bag", BAGS, ids=lambda p: p.stem)
def test_real_messages_round_trip(bag: Path) -> None:
    with registry.open(bag) as recording:
        total = len(recording)
        checked = 0
        for number in range(0, total, max(1, -(-total // LIMIT))):
            value = payload(recording.reader, number)
            decoder = recording.decoder(int(value["conn"]))  # type: ignore[attr-defined]
            raw = bytes(value["data"])
            assert decoder is not None
            again = encode(decoder.types, decoder.type_name, decoder.decode(raw))
            assert again == raw, (number, decoder.type_name)
            checked += 1
    assert 0 < checked <= LIMIT


KINDS = """bool b
int8 i8
byte by
uint8 u8
char ch
int16 i16
uint16 u16
int32 i32
uint32 u32
int64 i64
uint64 u64
float32 f32
float64 f64
string s
string raw
time t
duration d
float64[3] fixed
int16[] many
bool[] flags
string[] names
time[2] times
Inner[] inners
Inner[2] pair
Inner one
================================================================================
MSG: a/Inner
uint8[] data
string label
"""


def _payload() -> bytes:
    def s(data: bytes) -> bytes:
        return struct.pack("<I", len(data)) + data

    def inner(data: bytes, label: bytes) -> bytes:
        return s(data) + s(label)

    return (
        struct.pack(
            "<?bbBBhHiIqQfd", True, -2, -3, 250, 65, -300, 60000, -7, 4000000000, -9, 2**63, 1.5, -2
        )
        + s("héllo".encode())
        + s(b"\xff\xfe not utf-8")
        + struct.pack("<IIii", 10, 20, -1, 999)
        + struct.pack("<3d", 1.0, 2.0, 3.0)
        + struct.pack("<I3h", 3, -1, 0, 1)
        + struct.pack("<I2?", 2, True, False)
        + struct.pack("<I", 2)
        + s(b"a")
        + s(b"")
        + struct.pack("<4I", 1, 2, 3, 4)
        + struct.pack("<I", 1)
        + inner(b"\x01\x02", b"x")
        + inner(b"", b"")
        + inner(b"\x09", b"y")
        + inner(b"\x00", b"z")
    )


def test_every_builtin_kind_round_trips() -> None:
    decoder = Decoder("a/Kinds", KINDS)
    data = _payload()
    value = decoder.decode(data)
    assert isinstance(value["raw"], bytes) and value["s"] == "héllo"
    assert encode(decoder.types, "a/Kinds", value) == data


def test_plain_values_encode_as_decoded_ones() -> None:
    types = parse_definition("a/P", "int16[] v\nfloat32[2] f\nduration d\n")
    value = {"v": [1, -2], "f": (0.5, 1.0), "d": {"secs": -1, "nsecs": 5}}
    assert encode(types, "a/P", value) == encode(
        types,
        "a/P",
        {"v": np.array([1, -2], "<i2"), "f": np.array([0.5, 1.0], "<f4"), "d": value["d"]},
    )


def test_a_fixed_array_of_another_length_is_refused() -> None:
    types = parse_definition("a/F", "float64[3] v\n")
    with pytest.raises(ValueError, match="holds 3 elements, not 2"):
        encode(types, "a/F", {"v": np.zeros(2)})
