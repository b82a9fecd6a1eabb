"""`nanorec.outputs.arrow_columns`: binary columns from offsets and one buffer, JSON text as
`nanorec.outputs.tables.dumps` writes it, and what no column can hold."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from nanorec.errors import UnsupportedError
from nanorec.outputs import arrow, arrow_columns
from nanorec.outputs.arrow_columns import binary_column, cell, column, payload_size, transpose
from nanorec.outputs.tables import dumps

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")


def test_byte_strings_and_uint8_arrays_make_one_binary_column() -> None:
    image = np.arange(12, dtype=np.uint8)
    values = [image, None, b"abc", image[::2], bytearray(b""), memoryview(b"xy")]
    array = column(pa, values)
    assert array.type == pa.binary() and array.null_count == 1
    assert array.to_pylist() == [image.tobytes(), None, b"abc", image[::2].tobytes(), b"", b"xy"]


def test_a_memoryview_is_its_bytes_whatever_its_format() -> None:
    floats = np.arange(3, dtype="<f8")
    strided = memoryview(np.arange(8, dtype=np.uint8))[::2]
    array = column(pa, [memoryview(floats), strided])
    assert array.to_pylist() == [floats.tobytes(), bytes([0, 2, 4, 6])]
    assert payload_size({"a": memoryview(floats)}) == 24


def test_other_columns_keep_their_old_form() -> None:
    assert column(pa, [1, None, 3]).type == pa.int64()
    assert column(pa, [None, None]).type == pa.null()  # the schema makes it text
    mixed = column(pa, [np.arange(3, dtype=np.uint8), "text"])  # not all bytes: JSON text
    assert mixed.to_pylist() == ["[0, 1, 2]", "text"]
    assert column(pa, [np.int16(4), None]).to_pylist() == [4, None]


def test_numeric_arrays_make_one_list_column_of_their_type() -> None:
    """1-D numeric arrays (not uint8) are a list column of their common type, NaN kept, None
    a null, big-endian values read as numbers; an array among other values is JSON text."""
    floats = column(pa, [np.array([1.5, np.nan]), None, np.zeros(0), np.zeros(2, ">f8")])
    assert floats.type == pa.list_(pa.float64()) and floats.null_count == 1
    assert str(floats.to_pylist()) == "[[1.5, nan], None, [], [0.0, 0.0]]"
    singles = column(pa, [np.arange(3, dtype=np.float32), np.ones(1, np.float32)])
    assert singles.type == pa.list_(pa.float32())
    mixed = column(pa, [np.arange(2, dtype=np.int16), np.array([0.5], np.float32)])
    assert mixed.type == pa.list_(pa.float32()) and mixed.to_pylist() == [[0, 1], [0.5]]
    flags = column(pa, [np.array([True, False])])
    assert flags.type == pa.list_(pa.bool_()) and flags.to_pylist() == [[True, False]]
    assert column(pa, [np.zeros(2), [1, 2]]).to_pylist() == ["[0.0, 0.0]", "[1, 2]"]
    assert column(pa, [np.zeros((1, 2))]).to_pylist() == ["[[0.0, 0.0]]"]  # 2-D: text


@pytest.mark.parametrize(
    "value",
    [
        np.array([1.0, float("inf"), -0.0]),
        np.arange(6, dtype=np.int64).reshape(2, 3),
        np.array([True, False]),
        np.array([1e300, 2.5e-8], np.float64),
        np.array([0.1], np.float32),
        np.arange(4, dtype=np.uint8).reshape(2, 2),
        np.zeros(0),
    ],
)
def test_array_text_is_dumps_text(value: np.ndarray[Any, Any]) -> None:
    assert cell(value) == dumps(value.tolist())
    json.loads(cell(value))


def test_payload_size_counts_arrays_and_bytes() -> None:
    row = {"a": np.zeros(10, np.float64), "b": b"1234", "c": "text", "d": 7}
    assert payload_size(row) == 84


def test_a_binary_column_over_2_gib_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(arrow_columns, "MAX_BINARY", 10)
    assert binary_column(pa, [b"x" * 10]) is not None
    with pytest.raises(UnsupportedError, match="at most 10 bytes"):
        binary_column(pa, [b"x" * 6, b"y" * 5])


class _Rows:
    """A recording as `nanorec.outputs.arrow` sees it: named rows of one kind."""

    def __init__(self, rows: list[dict[str, Any]]) -> None:
        self.reader = SimpleNamespace(description={}, path=Path("fake.log"))
        self._rows = rows

    def table_kinds(self) -> list[str]:
        return ["kind"]

    def rows(self, kind: str, selection: object = None) -> Iterator[dict[str, Any]]:
        return iter(self._rows)


def test_bytes_after_text_in_a_later_batch_become_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A string column whose later batch holds a string that was not UTF-8 (bytes): text as
    NDJSON writes it, not Arrow's "Invalid UTF8" traceback."""
    monkeypatch.setattr(arrow, "BATCH_ROWS", 2)
    rows = [{"name": "a"}, {"name": "b"}, {"name": b"caf\xe9"}, {"name": b"ok"}, {"name": None}]
    arrow.export_parquet(_Rows(rows), tmp_path / "out")  # type: ignore[arg-type]
    table = pq.read_table(tmp_path / "out" / "kind.parquet")
    assert table.schema.field("name").type == pa.string()
    assert table.column("name").to_pylist() == ["a", "b", '{"base64": "Y2Fm6Q=="}', "ok", None]


def test_a_type_clash_between_batches_is_one_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(arrow, "BATCH_ROWS", 2)
    rows = [{"n": 1}, {"n": 2}, {"n": 2.5}]
    with pytest.raises(UnsupportedError, match="table 'kind', column 'n': double values"):
        arrow.export_parquet(_Rows(rows), tmp_path / "out")  # type: ignore[arg-type]
    assert not (tmp_path / "out").exists()


def test_transpose_keeps_first_seen_order_and_fills_missing_cells() -> None:
    same = [{"a": 1, "b": "x"}, {"b": "y", "a": 2}]  # one shape, keys in another order
    assert transpose(same) == {"a": [1, 2], "b": ["x", "y"]}
    ragged = [{"a": 1}, {"b": 2, "a": 3}, {"c": None}]
    assert transpose(ragged) == {"a": [1, 3, None], "b": [None, 2, None], "c": [None] * 3}
    assert list(transpose(ragged)) == ["a", "b", "c"]
    assert transpose([{"only": 5}]) == {"only": [5]} and transpose([]) == {}
