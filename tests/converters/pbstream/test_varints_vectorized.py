"""`wire.unpack_varints` (whole-buffer numpy: terminator mask, each varint built from its
last byte down) against the one-at-a-time reader it replaces for packed fields
(`read_varint` in a loop) and against the numpy decoder before it (a gather per byte of
every varint, kept here): varints of every length 1-10 mixed, 4-5 byte ones, empty fields
and submaps, truncated and over-long varints (`FormatError` naming the offset), and every
grid cells field of the samples and the real pbstreams (skipped when ../shared/realdata is
absent)."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
from numpy.typing import NDArray

from nanorec import registry
from nanorec.converters.pbstream.decode import decode_message
from nanorec.converters.pbstream.grid import texture_of
from nanorec.converters.pbstream.recording import PbstreamRecording
from nanorec.converters.pbstream.wire import (
    LEN,
    field_bytes,
    field_double,
    field_varint,
    iter_fields,
    read_varint,
    unpack_varints,
    varint,
)
from nanorec.errors import FormatError
from tests.conftest import REALDATA, SAMPLES

FOLDER = REALDATA / "pbstream"
REAL = sorted(FOLDER.glob("*.pbstream")) if FOLDER.is_dir() else []
IDENTITY = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0)


def scalar(data: bytes) -> list[int]:
    """The packed field read one varint at a time (the scalar path)."""
    values, pos = [], 0
    while pos < len(data):
        value, pos = read_varint(data, pos, len(data))
        values.append(value)
    return values


def previous(data: bytes) -> NDArray[np.uint64]:
    """The numpy decoder before this one: byte k of every varint gathered at once."""
    raw = np.frombuffer(data, np.uint8)
    ends = np.flatnonzero(raw < 0x80)
    starts = np.concatenate(([0], ends[:-1] + 1))
    lengths = ends - starts + 1
    low = (raw & np.uint8(0x7F)).astype(np.uint64)
    result = low[starts]
    for k in range(1, int(lengths.max())):
        group = low[np.minimum(starts + k, len(raw) - 1)]
        group[lengths <= k] = 0
        result |= group << np.uint64(7 * k)
    return result


def mixed(rng: random.Random, count: int, longest: int) -> list[int]:
    """`count` values whose varints are 1 to `longest` bytes long, lengths mixed."""
    values = []
    for _ in range(count):
        bits = rng.randint(1, min(7 * longest, 64))
        values.append(rng.getrandbits(bits - 1) | 1 << (bits - 1))
    return values


@pytest.mark.parametrize("longest", range(1, 11))
def test_every_length_equals_the_scalar_reader(longest: int) -> None:
    values = mixed(random.Random(longest), 3000, longest)
    values[::7] = [0] * len(values[::7])
    if longest == 10:
        values[1::11] = [(1 << 64) - 1 - v for v in values[1::11]]  # negative int64s
    data = b"".join(varint(v) for v in values)
    got = unpack_varints(data)
    assert got.dtype == np.uint64
    assert got.tolist() == scalar(data) == values
    assert max(len(varint(v)) for v in values) == longest
    assert np.array_equal(got, previous(data))


@pytest.mark.parametrize("width", [4, 5])
def test_four_and_five_byte_varints_among_short_ones(width: int) -> None:
    low, high = 1 << (7 * (width - 1)), (1 << (7 * width)) - 1
    values = [3, low, 200, high, 0, low + 12345, 1, high - 1, 127, 128, 16383, 16384]
    data = b"".join(varint(v) for v in values)
    assert max(len(varint(v)) for v in values) == width
    assert unpack_varints(data).tolist() == scalar(data) == values
    one = varint(high)
    assert unpack_varints(one).tolist() == [high]


def test_empty_field_and_empty_submap() -> None:
    assert unpack_varints(b"").tolist() == []
    empty = field_bytes(2, b"", keep_empty=True)  # cells: zero bytes
    assert decode_message(empty, "Grid2D")["cells"].tolist() == []
    assert texture_of(decode_message(empty, "Grid2D"), IDENTITY, IDENTITY) is None
    limits = field_bytes(
        1,
        field_double(1, 0.05)
        + field_bytes(3, field_varint(1, 2) + field_varint(2, 3), keep_empty=True),
    )
    with pytest.raises(FormatError, match="0 cells for 2 x 3"):
        texture_of(decode_message(limits + empty, "Grid2D"), IDENTITY, IDENTITY)


@pytest.mark.parametrize("cut", [1, 2, 3, 4])
def test_a_truncated_field_is_a_format_error(cut: int) -> None:
    values = [5, 300, 70000, 1 << 25, 9]
    data = b"".join(varint(v) for v in values[:-1]) + varint(1 << 30)
    short = data[:-cut]
    with pytest.raises(FormatError, match="ends inside a varint") as error:
        unpack_varints(short, base=1000)
    assert error.value.offset == 1000 + len(short)
    with pytest.raises(FormatError):
        scalar(short)
    grid = field_bytes(2, short)
    with pytest.raises(FormatError, match="ends inside a varint"):
        decode_message(grid, "Grid2D")


def test_a_varint_longer_than_ten_bytes_is_a_format_error() -> None:
    data = varint(7) + b"\xff" * 10 + b"\x01" + varint(9)
    with pytest.raises(FormatError, match="longer than 10 bytes") as error:
        unpack_varints(data, base=50)
    assert error.value.offset == 51
    with pytest.raises(FormatError):
        scalar(data)


def cells_fields(path: Path) -> list[bytes]:
    """The bytes of every Grid2D cells field of a pbstream's submaps."""
    found = []
    with registry.open(path) as rec:
        assert isinstance(rec, PbstreamRecording)
        for number in rec.numbers_of("submap").tolist():
            payload, start, end = rec.body(number)
            for n, w, a, b in iter_fields(payload, start, end):
                if n != 2 or w != LEN:  # submap_2d
                    continue
                for n2, w2, c, d in iter_fields(payload, a, b):
                    if n2 != 4 or w2 != LEN:  # grid
                        continue
                    for n3, w3, e, f in iter_fields(payload, c, d):
                        if n3 == 2 and w3 == LEN:  # cells
                            found.append(payload[e:f])
    return found


def _sources() -> list[Path]:
    return [*sorted(SAMPLES.glob("pbstream-*.pbstream")), *REAL]


@pytest.mark.parametrize("path", _sources(), ids=lambda p: p.name)
def test_real_cells_equal_the_previous_decoder_and_the_scalar_reader(path: Path) -> None:
    """Every cells field against the previous numpy decoder, and its first 20,000 bytes
    (to a varint's end) against the scalar reader (all of it: `test_real_cells_scalar`)."""
    fields = cells_fields(path)
    if not fields:
        pytest.skip(f"{path.name} has no 2D grid")
    for data in fields:
        got = unpack_varints(data)
        assert np.array_equal(got, previous(data))
        ends = np.flatnonzero(np.frombuffer(data, np.uint8) < 0x80)
        head = data[: int(ends[min(np.searchsorted(ends, 20_000), len(ends) - 1)]) + 1]
        assert unpack_varints(head).tolist() == scalar(head) == got[: len(scalar(head))].tolist()


@pytest.mark.slow
@pytest.mark.parametrize("path", REAL, ids=lambda p: p.name)
def test_real_cells_scalar(path: Path) -> None:
    for data in cells_fields(path):
        assert unpack_varints(data).tolist() == scalar(data)
