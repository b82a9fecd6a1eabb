"""Flat tables from any recording: one row per record, written as CSV or NDJSON.

A recording gives rows of a kind with `rows(kind, selection)` (dicts, flat or nested); this
module flattens nested maps into dotted column names (`pose.position.x`), and writes rows
as CSV (a header from the first rows' keys, in first-seen order) or NDJSON (one JSON object a
line). NDJSON is always valid JSON: NaN and infinities become `null`, bytes become text when
they are UTF-8 and `{"base64": ...}` otherwise (so do strings a file held as bytes that are not
UTF-8), numpy values become JSON numbers and lists.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Iterator, Mapping
from typing import IO, Any

import numpy as np

from nanorec.outputs.json_pieces import BigArrays, csv_row_pieces, dumps_pieces, is_big, json_safe

Row = dict[str, Any]

#: Rows buffered to learn the CSV header before the first line is written.
HEADER_ROWS = 256


def dumps(value: Any) -> str:
    """One line of valid JSON for `value` (never NaN or Infinity)."""
    return json.dumps(json_safe(value), allow_nan=False, ensure_ascii=False)


def flatten(row: Mapping[str, Any], prefix: str = "") -> Row:
    """Nested maps become dotted keys; lists and arrays stay values of their column."""
    flat: Row = {}
    _into(flat, row, prefix)
    return flat


#: Values that are never maps: tested by type before `Mapping`'s (slow) ABC check, which
#: was a third of flattening a decoded ROS message.
_LEAVES = frozenset({int, float, str, bool, bytes, type(None), list, np.ndarray})


def _into(flat: Row, row: Mapping[str, Any], prefix: str) -> None:
    for key, value in row.items():
        kind = type(value)
        if kind not in _LEAVES and (kind is dict or isinstance(value, Mapping)) and value:
            _into(flat, value, f"{prefix}{key}.")
        else:
            flat[f"{prefix}{key}"] = value


def write_ndjson(rows: Iterable[Mapping[str, Any]], stream: IO[str]) -> int:
    """Write one JSON object per line; returns the number of rows."""
    count = 0
    for row in rows:
        write_line(row, stream)
        count += 1
    return count


def write_line(value: Any, stream: IO[str]) -> None:
    """`dumps(value)` and a newline, written in pieces when `value` holds a big array."""
    for piece in dumps_pieces(value):
        stream.write(piece)
    stream.write("\n")


def write_csv(
    rows: Iterable[Mapping[str, Any]], stream: IO[str], header: Iterable[str] | None = None
) -> int:
    """Write a header line then one line per row; returns the number of rows.

    Without `header`, the columns are the keys of the first `HEADER_ROWS` rows in first-seen
    order. Cells: None is empty, maps and lists are JSON text, bytes as in NDJSON, floats as
    Python prints them (`nan`, `inf` included, which pandas reads back).
    """
    iterator: Iterator[Mapping[str, Any]] = iter(rows)
    buffered: list[Mapping[str, Any]] = []
    if header is None:
        names: dict[str, None] = {}
        for row in iterator:
            buffered.append(row)
            names.update(dict.fromkeys(row))
            if len(buffered) >= HEADER_ROWS:
                break
        header = list(names)
    columns = list(header)
    writer = csv.writer(stream, lineterminator="\n")
    writer.writerow(columns)
    count = 0
    for row in _chain(buffered, iterator):
        cells = [row.get(name) for name in columns]
        if any(is_big(cell) for cell in cells):  # written in pieces (`json_pieces`)
            big = BigArrays()
            marked = [big.add(cell) if is_big(cell) else _cell(cell) for cell in cells]
            for piece in csv_row_pieces(marked, big):
                stream.write(piece)
        else:
            writer.writerow([_cell(cell) for cell in cells])
        count += 1
    return count


def _chain(
    first: list[Mapping[str, Any]], rest: Iterator[Mapping[str, Any]]
) -> Iterator[Mapping[str, Any]]:
    yield from first
    yield from rest


def _cell(value: Any) -> Any:
    if isinstance(value, float | int | str) or value is None:
        return value
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, bytes | bytearray | memoryview | Mapping | list | tuple | np.ndarray):
        return dumps(value)
    return value


__all__ = ["Row", "dumps", "flatten", "json_safe", "write_csv", "write_line", "write_ndjson"]
