"""The trajectory table `nanorec carla author` reads: CSV, Parquet or columns in memory.

A table is one row per actor and time. Checking it here, before a byte is written, is what
lets a bad table end as one line naming the row and the column (`FormatError`) instead
of a half-written recording or a traceback from deep in the writer.

Columns (units of CARLA's Python API: metres, degrees, seconds; axes as `carla.Location`):

- required: `t` (s), `id` (actor id, 1 to 4294967294), `type_id` (blueprint id, e.g.
  `vehicle.tesla.model3`, `walker.pedestrian.0001`), `x`, `y`, `z` (m), `yaw` (degrees);
- optional: `pitch`, `roll` (degrees, default 0); `extent_x`, `extent_y`, `extent_z`
  (bounding-box half-extents in m, all three or none); `role_name`; `uid` (the
  blueprint's number in the server's library); vehicle control `throttle`, `steer`,
  `brake` (floats), `hand_brake`, `reverse` (0/1, true/false), `gear` (int).

Other columns are ignored (and listed in the report). Rows number from 1, the header not
counted (a CSV row r is on line r + 1). `type_id`, `role_name`, `uid` and the extents
describe the actor: they must not change between its rows.
"""

from __future__ import annotations

import csv
import io
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from nanorec.errors import FormatError, UnsupportedError, UsageError
from nanorec.untyped import Payload

__all__ = [
    "CONTROL_COLUMNS",
    "OPTIONAL_COLUMNS",
    "REQUIRED_COLUMNS",
    "ActorRows",
    "TrajectoryTable",
    "actors",
    "read",
]

REQUIRED_COLUMNS = ("t", "id", "type_id", "x", "y", "z", "yaw")
EXTENT_COLUMNS = ("extent_x", "extent_y", "extent_z")
CONTROL_COLUMNS = ("throttle", "steer", "brake", "hand_brake", "reverse", "gear")
OPTIONAL_COLUMNS = ("pitch", "roll", *EXTENT_COLUMNS, "role_name", "uid", *CONTROL_COLUMNS)

_BOOLS = ("hand_brake", "reverse")
_TEXTS = ("type_id", "role_name")
# 0 is CARLA's invalid actor and 0xFFFFFFFF the "not an actor" id of collisions (spec §5.5).
_ID_RANGE = (1, 0xFFFFFFFE)
_RANGES: Mapping[str, tuple[int, int]] = {
    "id": _ID_RANGE,
    "uid": (1, 0xFFFFFFFF),
    "gear": (-(2**31), 2**31 - 1),
}
_F32_MAX = float(np.finfo(np.float32).max)
#: The longest string CARLA writes intact: its length goes through an int16 (spec §1).
MAX_TEXT = 32767
_TRUE = {"1": True, "true": True, "0": False, "false": False}


@dataclass
class TrajectoryTable:
    """The checked columns of a trajectory table, one array element per row.

    Floats are float64 in the table's units (m, degrees, s); `id`, `uid` and `gear`
    int64; `hand_brake` and `reverse` bool; `type_id` and `role_name` lists of text.
    Optional columns absent from the table are missing from `columns`.
    """

    source: str  # the path, or "table" for columns in memory
    rows: int
    columns: dict[str, Any]
    ignored: tuple[str, ...] = ()
    line_offset: int = 1  # a CSV row r is on line r + 1; 0 for other sources

    def has(self, name: str) -> bool:
        return name in self.columns

    def where(self, row: int) -> str:
        """`row 12 (line 13)` for 0-based `row` (`header` when row < 0)."""
        if row < 0:
            return "header"
        line = f" (line {row + 1 + self.line_offset})" if self.line_offset else ""
        return f"row {row + 1}{line}"

    def fail(self, row: int, column: str | None, what: str) -> FormatError:
        """The error for a bad value: `source: row 12 (line 13), column x: what`."""
        place = self.where(row) + (f", column {column}" if column else "")
        return FormatError(f"{self.source}: {place}: {what}")


def read(source: str | os.PathLike[str] | Mapping[str, Any]) -> TrajectoryTable:
    """Read and check a trajectory table: a `.csv` or `.parquet` path, or a mapping of
    column name to a sequence or array. Raises FormatError naming the row and column of
    the first bad value, UnsupportedError for Parquet without pyarrow."""
    if isinstance(source, Mapping):
        raw, names, name, offset = dict(source), list(source), "table", 0
    else:
        path = Path(source)
        suffix = path.suffix.lower()
        if suffix in (".parquet", ".pq"):
            raw, names = _read_parquet(path)
            name, offset = str(path), 0
        elif suffix in (".csv", ".txt", ""):
            raw, names = _read_csv(path)
            name, offset = str(path), 1
        else:
            raise UsageError(f"{path}: a trajectory table is .csv or .parquet, not {suffix!r}")
    return _check(raw, names, name, offset)


@dataclass(frozen=True)
class ActorRows:
    """One actor of a table: its rows in time order and what describes it."""

    actor_id: int
    rows: npt.NDArray[np.int64]  # 0-based table rows, t strictly increasing
    type_id: str
    role_name: str | None
    uid: int | None
    extent: tuple[float, float, float] | None  # m


def actors(table: TrajectoryTable) -> list[ActorRows]:
    """The table's actors in order of first appearance. Raises FormatError for a repeated
    (t, id), a time that does not increase along an actor's rows, or a description
    column (`type_id`, `role_name`, `uid`, extents) that changes between its rows."""
    ids, times = table.columns["id"], table.columns["t"]
    order = np.lexsort((np.arange(table.rows), ids))
    starts = np.flatnonzero(np.r_[True, ids[order][1:] != ids[order][:-1]])
    groups = np.split(order, starts[1:])
    found = []
    for rows in sorted(groups, key=lambda group: int(group[0])):
        _check_times(table, rows, times[rows])
        found.append(_describe(table, rows))
    return found


def _check_times(table: TrajectoryTable, rows: npt.NDArray[Any], times: npt.NDArray[Any]) -> None:
    by_time = np.argsort(times, kind="stable")
    same = np.flatnonzero(np.diff(times[by_time]) == 0)
    if len(same):
        first, second = sorted((int(rows[by_time[same[0]]]), int(rows[by_time[same[0] + 1]])))
        actor = int(table.columns["id"][first])
        raise table.fail(
            second,
            "t",
            f"duplicate (t, id) = ({float(times[by_time[same[0]]])!r}, {actor}): "
            f"{table.where(first)} has it too",
        )
    back = np.flatnonzero(np.diff(times) <= 0)
    if len(back):
        row, before = int(rows[back[0] + 1]), int(rows[back[0]])
        now, then = float(times[back[0] + 1]), float(times[back[0]])
        raise table.fail(
            row,
            "t",
            f"time {now!r} of actor {int(table.columns['id'][row])} is not after its previous "
            f"row's {then!r} ({table.where(before)}): an actor's rows must be in increasing time",
        )


def _describe(table: TrajectoryTable, rows: npt.NDArray[Any]) -> ActorRows:
    first = int(rows[0])
    described: dict[str, Any] = {}
    for name in ("type_id", "role_name", "uid", *EXTENT_COLUMNS):
        if not table.has(name):
            continue
        column = table.columns[name]
        value = column[first]
        for row in rows.tolist():
            if column[row] != value:
                raise table.fail(
                    row,
                    name,
                    f"{_shown(column[row])} differs from {_shown(value)} of the "
                    f"actor's first row ({table.where(first)}); {name} describes the actor",
                )
        described[name] = value
    extent = None
    if table.has("extent_x"):
        extent = tuple(float(described[name]) for name in EXTENT_COLUMNS)
    return ActorRows(
        int(table.columns["id"][first]),
        rows.astype(np.int64),
        str(described["type_id"]),
        described.get("role_name"),
        int(described["uid"]) if "uid" in described else None,
        extent,  # type: ignore[arg-type]
    )


# ------------------------------------------------------------------------------ readers


def _read_csv(path: Path) -> tuple[dict[str, Any], list[str]]:
    data = path.read_bytes()
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        raise FormatError(
            f"{path}: line {line}: not UTF-8 text (byte {data[error.start]:#04x})",
            offset=error.start,
        ) from None
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    try:
        header = next(reader, None)
        if header is None:
            raise FormatError(f"{path}: the table is empty (no header line)")
        names = [name.strip() for name in header]
        lines = list(reader)
    except csv.Error as error:
        raise FormatError(f"{path}: line {reader.line_num}: not CSV: {error}") from None
    widths = np.fromiter(map(len, lines), dtype=np.int64, count=len(lines))
    bad = np.flatnonzero(widths != len(names))
    if len(bad):
        number = int(bad[0]) + 1
        found = int(widths[bad[0]])
        what = "empty line" if found == 0 else f"{found} values, the header has {len(names)}"
        raise FormatError(f"{path}: row {number} (line {number + 1}): {what}")
    columns = list(zip(*lines, strict=True)) if lines else [() for _ in names]
    return dict(zip(names, columns, strict=True)), names


def _read_parquet(path: Path) -> tuple[dict[str, Any], list[str]]:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise UnsupportedError(
            "Parquet tables need pyarrow: pip install 'nanorec[tables]'"
        ) from None
    try:
        table = pq.read_table(path)
    except (OSError, ValueError) as error:  # pyarrow's ArrowInvalid is a ValueError
        raise FormatError(f"{path}: not a readable Parquet file: {error}") from None
    names = [str(name) for name in table.column_names]
    return {name: table.column(name).to_pylist() for name in names}, names


# ------------------------------------------------------------------------------ checks


def _check(raw: dict[str, Any], names: list[str], source: str, offset: int) -> TrajectoryTable:
    empty = TrajectoryTable(source, 0, {}, line_offset=offset)
    duplicated = sorted({name for name in names if names.count(name) > 1})
    if duplicated:
        raise empty.fail(-1, None, f"column {duplicated[0]} appears more than once")
    missing = [name for name in REQUIRED_COLUMNS if name not in raw]
    if missing:
        raise empty.fail(-1, None, f"missing column(s) {', '.join(missing)}")
    present = [name for name in EXTENT_COLUMNS if name in raw]
    if present and len(present) != len(EXTENT_COLUMNS):
        lacking = ", ".join(name for name in EXTENT_COLUMNS if name not in raw)
        raise empty.fail(-1, None, f"extents need all of extent_x/y/z; missing {lacking}")
    known = set(REQUIRED_COLUMNS) | set(OPTIONAL_COLUMNS)
    for name in known & set(raw):
        if isinstance(raw[name], (str, bytes)) or not hasattr(raw[name], "__len__"):
            raise empty.fail(-1, name, "not a sequence of one value per row")
    lengths = {name: len(raw[name]) for name in raw if name in known}
    rows = lengths["t"]
    for name, length in lengths.items():
        if length != rows:
            raise empty.fail(-1, name, f"{length} values, column t has {rows}")
    if rows == 0:
        raise empty.fail(-1, None, "the table has no rows")
    table = TrajectoryTable(
        source, rows, {}, tuple(n for n in names if n not in known), line_offset=offset
    )
    for name in [n for n in (*REQUIRED_COLUMNS, *OPTIONAL_COLUMNS) if n in raw]:
        values = raw[name]
        if name in _TEXTS:
            table.columns[name] = _texts(table, name, values)
        elif name in _BOOLS:
            table.columns[name] = _bools(table, name, values)
        elif name in _RANGES:
            table.columns[name] = _integers(table, name, values)
        else:
            table.columns[name] = _floats(table, name, values)
    for name in ("x", "y", "z", *EXTENT_COLUMNS):
        if name in table.columns:
            _fits_float32_cm(table, name)
    return table


def _texts(table: TrajectoryTable, name: str, values: Sequence[Payload]) -> list[str]:
    texts = ["" if value is None else str(value).strip() for value in values]
    for row, text in enumerate(texts):
        if name == "type_id" and not text:
            raise table.fail(row, name, "empty blueprint id")
        if len(text) > MAX_TEXT // 4 and len(text.encode("utf-8", "surrogateescape")) > MAX_TEXT:
            raise table.fail(row, name, f"text longer than CARLA's {MAX_TEXT} bytes")
    return texts


def _floats(table: TrajectoryTable, name: str, values: Any) -> npt.NDArray[np.float64]:
    try:
        array = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        array = np.asarray([_float(table, row, name, v) for row, v in enumerate(values)])
    if array.ndim != 1:
        raise table.fail(-1, name, "values are not one number per row")
    bad = np.flatnonzero(~np.isfinite(array))
    if len(bad):
        row = int(bad[0])
        raise table.fail(row, name, f"{_shown(values[row])} is not a finite number")
    return array


def _float(table: TrajectoryTable, row: int, name: str, value: Payload) -> float:
    if isinstance(value, bool) or value is None:
        raise table.fail(row, name, f"{_shown(value)} is not a number")
    try:
        return float(value)
    except (TypeError, ValueError):
        raise table.fail(row, name, f"{_shown(value)} is not a number") from None


def _integers(table: TrajectoryTable, name: str, values: Any) -> npt.NDArray[np.int64]:
    low, high = _RANGES[name]
    array = np.asarray(values)
    if array.ndim != 1:
        raise table.fail(-1, name, "values are not one number per row")
    if array.dtype.kind not in "iu":
        try:
            array = np.asarray(values, dtype=np.float64)
        except (TypeError, ValueError):
            array = np.asarray([_float(table, row, name, v) for row, v in enumerate(values)])
        whole = np.isfinite(array) & (array == np.floor(array))
        if not whole.all():
            row = int(np.flatnonzero(~whole)[0])
            raise table.fail(row, name, f"{_shown(values[row])} is not an integer")
    bad = np.flatnonzero((array < low) | (array > high))
    if len(bad):
        row = int(bad[0])
        raise table.fail(row, name, f"{_shown(values[row])} is outside {low}..{high}")
    return array.astype(np.int64)


def _bools(table: TrajectoryTable, name: str, values: Any) -> npt.NDArray[np.bool_]:
    out = np.empty(len(values), dtype=np.bool_)
    for row, value in enumerate(values):
        if isinstance(value, (bool, np.bool_)):
            out[row] = bool(value)
            continue
        flag = _TRUE.get(str(value).strip().lower())
        if flag is None:
            flag = {1.0: True, 0.0: False}.get(_float_or_nan(value))
        if flag is None:
            raise table.fail(row, name, f"{_shown(value)} is not 0/1 or true/false")
        out[row] = flag
    return out


def _float_or_nan(value: Payload) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def _fits_float32_cm(table: TrajectoryTable, name: str) -> None:
    """The file stores cm as float32: metres beyond ~3.4e36 would become infinite."""
    bad = np.flatnonzero(np.abs(table.columns[name]) * 100.0 > _F32_MAX)
    if len(bad):
        row = int(bad[0])
        value = table.columns[name][row]
        raise table.fail(row, name, f"{value!r} m does not fit the file's float32 centimetres")


def _shown(value: Payload) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
