"""Submap tables a run at once (`columnar_wire`'s submap shape, #39 item 9): 2D and 3D
submaps read with numpy give the per-record table; a submap of another shape (both parts,
an unknown field) is patched from `rows`, a damaged one gives the per-record error, and a
damaged large member the error `inflate_member` gives."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from nanorec.converters.pbstream import columnar, tables
from nanorec.converters.pbstream.generate import Plan, rigid3d
from nanorec.converters.pbstream.records import SUBMAP
from nanorec.converters.pbstream.scan import WHOLE_BELOW
from nanorec.converters.pbstream.stream import build_member, inflate_member
from nanorec.converters.pbstream.wire import field_bytes, field_varint, iter_fields, varint
from nanorec.errors import FormatError
from tests.converters.pbstream.test_columnar import (
    _changed,
    _error,
    _fast,
    _generated,
    _opened,
    _same_tables,
    _slow,
    _write,
)

pytest.importorskip("pyarrow")

SUBMAP_KEY = 3 << 3 | 2


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The kinds of the records read through `record_rows` (by `columnar`, or by the
    table's own rows), as they go."""
    slow: list[str] = []
    real = tables.record_rows

    def counted(rec: Any, kind: str, numbers: list[int]) -> Iterator[dict[str, Any]]:
        slow.extend([kind] * len(numbers))
        yield from real(rec, kind, numbers)

    monkeypatch.setattr(columnar, "record_rows", counted)
    monkeypatch.setattr(tables, "record_rows", counted)
    return slow


@pytest.mark.parametrize("dims", [2, 3])
def test_generated_submaps_read_at_once(
    dims: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plan = Plan(trajectories=2, nodes=45, nodes_per_submap=10, dims=dims)
    path = _write(tmp_path / "g.pbstream", _generated(plan))
    with _opened(path, tmp_path) as rec:
        _same_tables(rec)
        slow = _counting(monkeypatch)
        table = _fast(rec, SUBMAP)
        assert table.num_rows == len(rec.numbers_of(SUBMAP)) == 10
        assert set(table["dims"].to_pylist()) == {dims}
    assert slow == []


def _submap_fields(payload: bytes) -> list[bytes]:
    """The Submap message's fields, each as its bytes."""
    _, _, a, b = next(iter_fields(payload))
    pieces = []
    for _, _, c, d in iter_fields(payload, a, b):
        start = c - 1
        while start > a and payload[start - 1] >= 0x80:  # back over the length's bytes
            start -= 1
        pieces.append(payload[start - 1 : d])  # the one-byte key too
    return pieces


def _submap(fields: list[bytes]) -> bytes:
    body = b"".join(fields)
    return bytes([SUBMAP_KEY]) + varint(len(body)) + body


def _both_parts(payload: bytes) -> bytes:
    """A 2D submap given a 3D part too (rows take the 2D one)."""
    return _submap([*_submap_fields(payload), field_bytes(3, field_bytes(1, rigid3d(1, 2, 3)))])


def _unknown_field(payload: bytes) -> bytes:
    """A submap with a field no schema has (9, a varint): valid, not the usual shape."""
    return _submap([*_submap_fields(payload), field_varint(9, 5)])


def _garbled_count(payload: bytes) -> bytes:
    """The 2D part's `num_range_data` key (10) made wire type 7."""
    fields = _submap_fields(payload)
    two = fields[1]
    at = two.index(b"\x10", two.index(b"\x0a", 2) + 2 + two[two.index(b"\x0a", 2) + 1])
    fields[1] = two[:at] + b"\x17" + two[at + 1 :]
    return _submap(fields)


def _plan() -> Plan:
    return Plan(trajectories=2, nodes=60, nodes_per_submap=10, grid_cells=40)


@pytest.mark.parametrize("change", [_both_parts, _unknown_field])
def test_other_submap_shapes_are_patched_from_rows(change: Any, tmp_path: Path) -> None:
    payloads = _changed(_generated(_plan()), SUBMAP_KEY, 3, change)
    with _opened(_write(tmp_path / "odd.pbstream", payloads), tmp_path) as rec:
        _same_tables(rec)
        assert 2 in _fast(rec, SUBMAP)["dims"].to_pylist()


def test_a_damaged_submap_gives_the_per_record_error(tmp_path: Path) -> None:
    payloads = _changed(_generated(_plan()), SUBMAP_KEY, 4, _garbled_count)
    with _opened(_write(tmp_path / "bad.pbstream", payloads), tmp_path) as rec:
        slow = _error(lambda: _slow(rec, SUBMAP))
        assert slow == _error(lambda: _fast(rec, SUBMAP))


@pytest.mark.parametrize("size", [9000, 300])
def test_a_damaged_member_inflated_alone_gives_the_member_error(size: int) -> None:
    """A member inflated by itself (a submap's size; a node's, ~300 bytes) whose CRC is
    wrong: ISA-L declines it, and `inflate_member` says what is wrong, as `rows` would."""
    noise = np.random.default_rng(3).integers(0, 256, size, np.uint8).tobytes()
    member = bytearray(build_member(noise))
    assert len(member) >= WHOLE_BELOW or len(member) >= columnar._ONE_AT_A_TIME
    member[-6] ^= 0x01  # the CRC-32
    with pytest.raises(FormatError) as expected:
        inflate_member(bytes(member), 0)
    with pytest.raises(FormatError) as got:
        columnar._inflated([build_member(noise[:250]), bytes(member)])
    assert str(got.value) == str(expected.value)
