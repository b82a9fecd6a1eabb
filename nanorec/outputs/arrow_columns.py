"""Arrow columns from row values, the part of the Parquet export that touches every cell.

Byte strings (`bytes`, and the 1-D `uint8` numpy arrays the ROS decoders give for `uint8[]`
fields: image, point cloud and map data) become one Arrow `binary` column built from offsets
and a single joined buffer, so a 1 MB image is one copy instead of a million Python ints in
JSON text. Other 1-D numeric arrays (a LaserScan's float32 `ranges`, a covariance) become
one Arrow list column of their element type (`list<float>`, `list<double>`, `list<int16>`...)
from offsets and the joined values, NaN kept as NaN: queried as lists by DuckDB or Polars
instead of parsed from text, and written without a Python float a value. Scalars stay as
they are; maps, lists and other arrays are JSON text (`nanorec.outputs.tables.dumps`).
"""

from __future__ import annotations

import json
import operator
from typing import Any

import numpy as np

from nanorec.errors import UnsupportedError
from nanorec.outputs.tables import dumps, json_safe

#: The most bytes one Arrow `binary` column (32-bit offsets) holds; Parquet pages cannot
#: hold a larger value either.
MAX_BINARY = 2**31 - 1

_BYTES = (bytes, bytearray, memoryview)
#: The types of values a column passes to Arrow untouched.
_PLAIN = frozenset({int, float, str, bool, type(None)})
#: The types of values that may make a binary column.
_BINARY = frozenset({*_BYTES, np.ndarray})


def cell(value: Any) -> Any:
    """A value as Arrow infers it: maps, lists and arrays as JSON text (`dumps`)."""
    if isinstance(value, dict | list | tuple):
        return dumps(value)
    if isinstance(value, np.ndarray):
        return _array_text(value)
    if hasattr(value, "tolist"):  # numpy scalars
        value = value.tolist()
        return dumps(value) if isinstance(value, list) else value
    return value


def _array_text(value: np.ndarray[Any, Any]) -> str:
    """`dumps(value.tolist())` for numbers: the same text, without the per-element walk
    when there is no NaN or infinity to turn into null."""
    kind = value.dtype.kind
    if kind in "biu" or (kind == "f" and bool(np.isfinite(value).all())):
        return json.dumps(value.tolist(), ensure_ascii=False)
    return dumps(value.tolist())


def is_numbers(value: Any) -> bool:
    """Whether `value` goes into a list column: a 1-D numeric or bool numpy array (not
    `uint8`: those are bytes)."""
    return (
        isinstance(value, np.ndarray)
        and value.ndim == 1
        and value.dtype.kind in "biuf"
        and value.dtype != np.uint8
    )


def list_array(pa: Any, values: np.ndarray[Any, Any], offsets: np.ndarray[Any, Any]) -> Any:
    """An Arrow list array of `values[offsets[i]:offsets[i + 1]]` (a 1-D numeric array,
    `len(offsets) - 1` rows): one copy of the values, in native byte order."""
    if len(values) > MAX_BINARY:
        raise UnsupportedError(
            f"{len(values)} array values in a batch of {len(offsets) - 1} rows: one list "
            f"column holds at most {MAX_BINARY} (batches end at far less, so one cell is that "
            "large)"
        )
    flat = pa.array(values.astype(values.dtype.newbyteorder("="), copy=False))
    return pa.ListArray.from_arrays(pa.array(offsets.astype(np.int32)), flat)


def list_column(pa: Any, values: list[Any]) -> Any:
    """`values` (1-D numeric arrays and None) as one Arrow list array of their common
    element type, or None when one of them is something else or all are None."""
    arrays = [value for value in values if value is not None]
    if not arrays or not all(map(is_numbers, arrays)):
        return None
    dtype = np.result_type(*{a.dtype for a in arrays})
    lengths = np.fromiter((0 if v is None else len(v) for v in values), np.int64, len(values))
    offsets = np.zeros(len(values) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    array = list_array(pa, np.concatenate(arrays).astype(dtype, copy=False), offsets)
    if len(arrays) == len(values):
        return array
    valid = np.fromiter((v is not None for v in values), np.bool_, len(values))
    mask = pa.py_buffer(np.packbits(valid, bitorder="little"))
    return pa.Array.from_buffers(
        array.type,
        len(values),
        [mask, array.buffers()[1]],
        null_count=len(values) - len(arrays),
        children=[array.values],
    )


def is_bytes(value: Any) -> bool:
    """Whether `value` goes into a binary column: bytes, or a 1-D `uint8` array."""
    if isinstance(value, np.ndarray):
        return value.dtype == np.uint8 and value.ndim == 1
    return isinstance(value, _BYTES)


def payload_size(row: dict[str, Any]) -> int:
    """The bytes of the arrays and byte strings of `row` (what bounds a batch's memory)."""
    if _PLAIN.issuperset(map(type, row.values())):  # most rows: one C-level test
        return 0
    size = 0
    for value in row.values():
        kind = type(value)
        if kind is np.ndarray or kind is memoryview:
            size += value.nbytes
        elif kind in _BINARY:
            size += len(value)
    return size


def transpose(rows: list[dict[str, Any]]) -> dict[str, list[Any]]:
    """Row dicts as column lists, keys in first-seen order (None where a row lacks one).
    Rows of one shape (most tables) are taken apart by `itemgetter` and `zip` in C, not a
    `row.get` a cell."""
    first = rows[0].keys() if rows else {}.keys()
    if len(first) > 1 and all(map(first.__eq__, map(dict.keys, rows))):
        names = list(first)
        cells = zip(*map(operator.itemgetter(*names), rows), strict=True)
        return {name: list(values) for name, values in zip(names, cells, strict=True)}
    keys: dict[str, Any] = {}
    for row in rows:
        keys.update(row)
    return {name: [row.get(name) for row in rows] for name in keys}


def column(pa: Any, values: list[Any]) -> Any:
    """One Arrow column of a batch from its row values (None: a null cell)."""
    types = set(map(type, values))
    if types & _BINARY:
        binary = binary_column(pa, values)
        if binary is not None:
            return binary
        numbers = list_column(pa, values)
        if numbers is not None:
            return numbers
    cells = values if types <= _PLAIN else [cell(value) for value in values]  # Arrow takes
    try:  # plain values as they are: no call a cell
        return pa.array(cells)
    except OverflowError:  # an integer past int64 (a uint64 field's top half)
        return big_integers(pa, cells)


def big_integers(pa: Any, values: list[Any]) -> Any:
    """A column holding an integer past int64: uint64 when none is negative (what a uint64
    field holds), else each as its decimal text (no Arrow integer type holds them all)."""
    if all(v is None or (isinstance(v, int) and 0 <= v < 1 << 64) for v in values):
        return pa.array(values, pa.uint64())
    return pa.array([None if v is None else _text(v) for v in values], pa.string())


def binary_column(pa: Any, values: list[Any]) -> Any:
    """`values` as an Arrow `binary` array (offsets + one buffer), or None when one of them
    is not a byte string or all are None (such a column keeps its old type)."""
    parts: list[Any] = []
    lengths = np.zeros(len(values), np.int64)
    valid = np.ones(len(values), np.bool_)
    for row, value in enumerate(values):
        if value is None:
            valid[row] = False
            continue
        if not is_bytes(value):
            return None
        if isinstance(value, np.ndarray) and not value.flags.c_contiguous:
            value = np.ascontiguousarray(value)
        elif isinstance(value, memoryview):  # its bytes, whatever its format and shape
            value = value.cast("B") if value.c_contiguous else value.tobytes()
        parts.append(value)
        lengths[row] = len(value)
    if not parts:
        return None
    offsets = np.zeros(len(values) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    if offsets[-1] > MAX_BINARY:
        raise UnsupportedError(
            f"byte strings of {int(offsets[-1])} bytes in a batch of {len(values)} rows: one "
            f"binary column holds at most {MAX_BINARY} bytes (batches end at far less, so one "
            "cell is that large, more than Parquet stores)"
        )
    # one byte string (a camera image's pixels) is shared, not copied by a join
    data = pa.py_buffer(parts[0] if len(parts) == 1 else b"".join(parts))
    mask = None if valid.all() else pa.py_buffer(np.packbits(valid, bitorder="little"))
    return pa.Array.from_buffers(
        pa.binary(),
        len(values),
        [mask, pa.py_buffer(offsets.astype(np.int32)), data],
        null_count=int(len(values) - valid.sum()),
    )


def retyped(pa: Any, array: Any, field: Any, rows: int, table: str) -> Any:
    """`array` (None: absent from the batch) as `field`'s type, which the table's first
    batch fixed. Byte strings where the first rows held text (a string that was not UTF-8
    in the file) become text as NDJSON writes them; any other clash is an
    `UnsupportedError` naming the table and the column, not Arrow's exception."""
    if array is None:
        return pa.nulls(rows, field.type)
    if array.type == field.type:
        return array
    try:
        return array.cast(field.type)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        if not pa.types.is_string(field.type):
            raise UnsupportedError(
                f"table {table!r}, column {field.name!r}: {array.type} values where its first "
                f"rows held {field.type} (a Parquet column has one type)"
            ) from None
    return pa.array([None if v is None else _text(v) for v in array.to_pylist()], pa.string())


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    safe = json_safe(value)  # UTF-8 bytes as their text, others {"base64": ...}
    return safe if isinstance(safe, str) else dumps(safe)


__all__ = [
    "MAX_BINARY",
    "binary_column",
    "cell",
    "column",
    "is_bytes",
    "is_numbers",
    "list_array",
    "list_column",
    "payload_size",
    "retyped",
    "transpose",
]
