"""CARLA's tables as numpy columns, every kind in one pass (the Parquet export's hot path).

`table.iter_rows` gives one dict per record, one kind at a time: right for a query, but
an export of every table then reads each archive message once per kind and builds
millions of dicts that Arrow takes apart again (about 3 MB/s of CARLA source). Here each
message is read once; a run of `CHUNK_FRAMES` frames becomes, per kind, one `b"".join` of
the records' bytes and one numpy view with the kind's flat layout (`table._layout`, the
same one `iter_rows` reads through), so a column is one `astype`. AnimVehicleWheels
records (variable, no count field) are found through the frame's layout, which CARLA
repeats frame after frame (checked with one gather, as the conversion does), then read
with one fancy index. EventAdd (a handful of rows) goes through `iter_rows`' own code.

The columns are exactly `iter_rows`' values with the types Arrow infers from them: ids and
counts as int64, floats widened to float64 (the recorded values exactly), flags as bool,
`frame` null where a frame has no FrameStart. `tests/tables/test_columns.py` checks the
tables against the rows of real and synthetic files.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from .ids import Engine, Kind, TrafficLightState
from .message import KIND_KEYS, checked_frame, wheel_records
from .records import WHEEL_ANIM_DTYPE
from .table import (
    BOOLEANS,
    FRAME_COLUMNS,
    add_rows,
    cached_layout,
    columns,
    frame_columns,
)

if TYPE_CHECKING:
    from .recording import CarlaRecording

#: Frames decoded together: their records of a kind become one numpy view.
CHUNK_FRAMES = 256

Columns = dict[str, Any]  # column name -> numpy array (final type) or list of Python values
Progress = Callable[[int, int], None]

#: TrafficLightState code -> its name in lower case (None for codes CARLA does not define).
_STATE_NAMES = np.full(256, None, dtype=object)
for _state in TrafficLightState:
    if 0 <= _state.value < 256:
        _STATE_NAMES[_state.value] = _state.name.lower()
_ID_BYTES = np.arange(4)


class _Heads:
    """The frame columns (`frame`, `index`, `time`) of the frames of one chunk."""

    def __init__(self) -> None:
        self.frame: list[int] = []
        self.known: list[bool] = []
        self.index: list[int] = []
        self.time: list[float] = []

    def add(self, head: tuple[Any, ...]) -> None:
        frame_id, number, elapsed = head
        self.known.append(frame_id is not None)
        self.frame.append(0 if frame_id is None else frame_id)
        self.index.append(number)
        self.time.append(elapsed)

    def repeated(self, rows: list[int], counts: npt.NDArray[np.int64]) -> Columns:
        """The frame columns of `counts[i]` records in chunk frame `rows[i]`."""
        at = np.asarray(rows, np.intp)
        frame = np.repeat(np.asarray(self.frame, np.uint64)[at].astype(np.int64), counts)
        known = np.repeat(np.asarray(self.known, np.bool_)[at], counts)
        return {
            "frame": frame if known.all() else np.ma.masked_array(frame, ~known),
            "index": np.repeat(np.asarray(self.index, np.int64)[at], counts),
            "time": np.repeat(np.asarray(self.time, np.float64)[at], counts),
        }


class _WheelLayout:
    """Which bytes of an AnimVehicleWheels body are wheel records (not a vehicle's id and
    wheel count), the vehicles' id offsets and wheel counts; cached for the layout of the
    previous frame (the check `runs.py` makes: same size, same wheel-count bytes at the
    same places, hence the same records)."""

    def __init__(self) -> None:
        self.size = -1
        self.count_bytes = np.empty(0, np.intp)
        self.expected = b""
        self.keep = np.empty(0, np.bool_)  # True on the bytes of wheel records
        self.heads = np.empty(0, np.int64)  # offset of each vehicle's id
        self.wheels = np.empty(0, np.int64)  # its number of wheels

    def of(self, data: bytes) -> _WheelLayout:
        if len(data) == self.size and (
            np.frombuffer(data, np.uint8)[self.count_bytes].tobytes() == self.expected
        ):
            return self
        found = wheel_records(data) or []  # bytes that do not split: no rows (as iter_rows)
        starts = np.array([start for _, start, _ in found], np.int64)
        self.wheels = np.array([count for _, _, count in found], np.int64)
        self.heads = starts - 8
        self.keep = np.ones(len(data) if found else 0, np.bool_)
        self.keep[(self.heads[:, None] + np.arange(8)).ravel()] = False
        self.size = len(data) if found else -1
        self.count_bytes = ((starts - 4)[:, None] + _ID_BYTES).ravel().astype(np.intp)
        self.expected = np.frombuffer(data, np.uint8)[self.count_bytes].tobytes()
        return self


def column_chunks(
    rec: CarlaRecording,
    kinds: Sequence[Kind],
    frames: range,
    progress: Progress | None = None,
) -> Iterator[tuple[Kind, Columns]]:
    """`(kind, columns)` for each of `kinds` with records in each run of `CHUNK_FRAMES`
    archive frames of `frames`, in file order; the columns as `table.columns(kind)` names
    them. `progress(done, total)` is called in frames after each run."""
    engine = rec.family.engine
    reader = rec.reader
    times = reader.index.timestamp_us
    keys = [(kind, KIND_KEYS[kind]) for kind in kinds]
    for kind in kinds:
        columns(kind)  # raises for an untabulated kind
    wheels = _WheelLayout()
    if len(frames) > CHUNK_FRAMES:
        reader.advise_sequential()
    for lo in range(frames.start, frames.stop, CHUNK_FRAMES):
        hi = min(lo + CHUNK_FRAMES, frames.stop)
        heads = _Heads()
        found: dict[Kind, tuple[list[int], list[Any]]] = {kind: ([], []) for kind in kinds}
        for row, number in enumerate(range(lo, hi)):
            frame = checked_frame(reader[number], number, engine)
            heads.add(frame_columns(number, frame, times))
            for kind, key in keys:
                content = frame.get(key)
                if content is not None:
                    rows, contents = found[kind]
                    rows.append(row)
                    contents.append(content)
        for kind in kinds:
            rows, contents = found[kind]
            if not rows:
                continue
            if kind is Kind.EVENT_ADD:
                table = _add_columns(heads, rows, contents, engine)
            elif kind is Kind.ANIM_VEHICLE_WHEELS:
                table = _wheel_columns(heads, rows, contents, wheels)
            else:
                table = _fixed_columns(kind, heads, rows, contents, engine)
            if table is not None:
                yield kind, table
        if progress is not None:
            progress(hi - frames.start, len(frames))


def _fixed_columns(
    kind: Kind, heads: _Heads, rows: list[int], contents: list[bytes], engine: Engine
) -> Columns | None:
    layout = cached_layout(kind, engine)
    size = layout.dtype.itemsize
    counts = np.fromiter((len(c) // size for c in contents), np.int64, len(contents))
    if not counts.any():
        return None
    records = np.frombuffer(b"".join(contents), layout.flat)
    table = heads.repeated(rows, counts)
    for name in layout.columns:
        values = records[name]
        if name in BOOLEANS:
            table[name] = values.astype(np.bool_)
        elif values.dtype.kind == "f":
            table[name] = values.astype(np.float64)
        else:
            table[name] = values.astype(np.int64)
    if kind is Kind.STATE:
        table["state_name"] = _STATE_NAMES[records["state"]]
    return table


def _wheel_columns(
    heads: _Heads, rows: list[int], contents: list[bytes], layout: _WheelLayout
) -> Columns | None:
    keep: list[npt.NDArray[np.bool_]] = []
    id_at: list[npt.NDArray[np.int64]] = []
    wheels: list[npt.NDArray[np.int64]] = []
    counts = np.empty(len(contents), np.int64)
    base = 0
    for row, content in enumerate(contents):
        found = layout.of(content)
        keep.append(found.keep)
        id_at.append(found.heads + base)
        wheels.append(found.wheels)
        counts[row] = int(found.wheels.sum())
        base += len(found.keep)
    if not counts.any():
        return None
    data = np.frombuffer(
        b"".join(c for c, k in zip(contents, keep, strict=True) if len(k)), np.uint8
    )
    records = data[np.concatenate(keep)].view(WHEEL_ANIM_DTYPE)
    ids = data[np.concatenate(id_at)[:, None] + _ID_BYTES].view("<u4").ravel()
    table = heads.repeated(rows, counts)
    table["id"] = np.repeat(ids, np.concatenate(wheels)).astype(np.int64)
    table["wheel"] = records["location"].astype(np.int64)
    table["steering_angle"] = records["steering_angle"].astype(np.float64)
    table["tire_rotation"] = records["tire_rotation"].astype(np.float64)
    return table


def _add_columns(
    heads: _Heads, rows: list[int], contents: list[Any], engine: Engine
) -> Columns | None:
    """EventAdd through `iter_rows`' code (spawns are few): lists of Python values."""
    names = columns(Kind.EVENT_ADD)
    table: Columns = {name: [] for name in names}
    for row, content in zip(rows, contents, strict=True):
        head = (
            heads.frame[row] if heads.known[row] else None,
            heads.index[row],
            heads.time[row],
        )
        for record in add_rows(head, content, engine, None):
            for name in names:
                table[name].append(record[name])
    return table if table[FRAME_COLUMNS[1]] else None


__all__ = ["CHUNK_FRAMES", "column_chunks"]
