"""The records of one CARLA packet kind as a flat table, for pandas or a spreadsheet.

CARLA's own queries print text for people; analysis wants one row per record with named
columns. `iter_rows` gives exactly that for every fixed-size kind plus EventAdd (spawns
with blueprint and attributes) and AnimVehicleWheels (one row per wheel), streaming one
archive message at a time: `--start` is found with one `searchsorted` on the index
timestamps, and frames that do not carry the kind are skipped from the index flags without
being decoded, so a sparse kind (collisions, spawns) costs almost nothing on a 1 GB file.

Every row starts with `frame` (CARLA's 1-based frame id), `index` (0-based archive frame)
and `time` (the frame's elapsed seconds, as recorded in its FrameStart). Values keep the
file's units (spec §1): locations, origins and extents in cm; angles in degrees; times in
seconds; kinematic linear velocity in m/s, angular velocity as CARLA reports it (deg/s).
The file stores rotations as (roll, pitch, yaw); the columns are named and ordered
`pitch, yaw, roll` like `carla.Rotation`. Floats are the recorded values exactly (a float32
widened to a Python float), never rounded.
"""

from __future__ import annotations

import csv
import json
import math
import struct
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from nanorec.errors import UsageError
from nanorec.untyped import Payload

from .ids import ActorType, Engine, Kind, TrafficLightState
from .message import KIND_KEYS, checked_frame, maps_to_var, wheel_records
from .records import FIXED_DTYPES, WHEEL_ANIM_DTYPE, ActorAdd

if TYPE_CHECKING:
    from .recording import CarlaRecording

Row = dict[str, Any]

FRAME_COLUMNS = ("frame", "index", "time")
_FRAME_START = struct.Struct("<Qdd")

# Kinds whose records name an actor, and the fields that hold actor ids.
_ACTOR_FIELDS: dict[Kind, tuple[str, ...]] = {
    Kind.EVENT_ADD: ("id",),
    Kind.EVENT_DEL: ("id",),
    Kind.EVENT_PARENT: ("id", "parent_id"),
    Kind.COLLISION: ("actor1_id", "actor2_id"),
    Kind.POSITION: ("id",),
    Kind.STATE: ("id",),
    Kind.ANIM_VEHICLE: ("id",),
    Kind.ANIM_WALKER: ("id",),
    Kind.VEHICLE_LIGHT: ("id",),
    Kind.KINEMATICS: ("id",),
    Kind.BOUNDING_BOX: ("id",),
    Kind.TRAFFIC_LIGHT_TIME: ("id",),
    Kind.TRIGGER_VOLUME: ("id",),
    Kind.ANIM_VEHICLE_WHEELS: ("id",),
    Kind.ANIM_BIKER: ("id",),
    Kind.VEHICLE_DOOR: ("id",),
}

# Vector fields spread into one column per element, in file order.
_ELEMENTS: dict[str, tuple[str, ...]] = {
    "location": ("location_x", "location_y", "location_z"),
    "origin": ("origin_x", "origin_y", "origin_z"),
    "extent": ("extent_x", "extent_y", "extent_z"),
    "linear_velocity": ("velocity_x", "velocity_y", "velocity_z"),
    "angular_velocity": ("angular_velocity_x", "angular_velocity_y", "angular_velocity_z"),
    "color": ("color_r", "color_g", "color_b", "color_a"),
}
# The file's (roll, pitch, yaw): element numbers of pitch, yaw, roll.
_ROTATION = (("pitch", 1), ("yaw", 2), ("roll", 0))

# Scalar fields renamed (None: dropped, because the frame columns already hold them).
_RENAMES: dict[Kind, dict[str, str | None]] = {
    Kind.FRAME_START: {"id": None, "elapsed": None},
    Kind.PLATFORM_TIME: {"time": "platform_time"},
    Kind.VISUAL_TIME: {"time": "visual_time"},
    Kind.FRAME_COUNTER: {"frame": "frame_counter"},
}
BOOLEANS = frozenset(
    {"is_frozen", "handbrake", "is_on", "is_actor1_hero", "is_actor2_hero", "is_open"}
)

_EVENT_ADD_COLUMNS = (
    "id",
    "type",
    "type_name",
    "type_id",
    "uid",
    "location_x",
    "location_y",
    "location_z",
    "pitch",
    "yaw",
    "roll",
    "attributes",
)
# `wheel` is the recorded wheel location: FL 0, FR 1, BL 2, BR 3, ML 4, MR 5 (bikes: front 0,
# back 1); angles in degrees.
_WHEEL_COLUMNS = ("id", "wheel", "steering_angle", "tire_rotation")

# Short aliases accepted besides the kind names: the archive keys (`pos`, `tl`...) and a few
# words people type.
_EXTRA_ALIASES: dict[str, Kind] = {
    "wheels": Kind.ANIM_VEHICLE_WHEELS,
    "traffic_light": Kind.STATE,
    "collisions": Kind.COLLISION,
    "spawn": Kind.EVENT_ADD,
    "destroy": Kind.EVENT_DEL,
}
_VARIABLE = (Kind.EVENT_ADD, Kind.ANIM_VEHICLE_WHEELS)


def table_kinds() -> tuple[Kind, ...]:
    """The kinds `iter_rows` can tabulate, in the kind table's order."""
    fixed = FIXED_DTYPES[Engine.UE4]
    return tuple(kind for kind in Kind if kind in fixed or kind in _VARIABLE)


def kind_names() -> list[str]:
    """Every name `parse_kind` accepts: each kind's name, then the aliases."""
    kinds = table_kinds()
    aliases = {KIND_KEYS[kind]: kind for kind in kinds} | _EXTRA_ALIASES
    return [kind.value for kind in kinds] + sorted(
        name for name in aliases if name not in {kind.value for kind in kinds}
    )


def parse_kind(name: str) -> Kind:
    """The kind called `name` (`position`, `pos`, `traffic_light_time`, `tltime`...).

    Case and `-`/`_` do not matter. Raises ValueError naming the valid names otherwise.
    """
    key = name.strip().lower().replace("-", "_")
    kinds = table_kinds()
    for kind in kinds:
        if key in (kind.value, KIND_KEYS[kind]):
            return kind
    alias = _EXTRA_ALIASES.get(key)
    if alias is not None:
        return alias
    raise UsageError(f"unknown record type {name!r}; valid: {', '.join(kind_names())}")


@dataclass(frozen=True)
class _Layout:
    """How to read one fixed kind's records straight into its columns (one numpy view)."""

    dtype: np.dtype[Any]
    flat: np.dtype[Any]  # the same bytes, one scalar field per column, in column order
    columns: tuple[str, ...]
    booleans: tuple[int, ...]  # column positions to turn into bool


def _layout(kind: Kind, engine: Engine) -> _Layout:
    dtype = FIXED_DTYPES[engine][kind]
    renames = _RENAMES.get(kind, {})
    names: list[str] = []
    formats: list[Any] = []
    offsets: list[int] = []
    for name in dtype.names or ():
        field_dtype, offset = dtype.fields[name][:2]  # type: ignore[index]
        if field_dtype.subdtype is None:
            column = renames.get(name, name)
            if column is not None:
                names.append(column)
                formats.append(field_dtype)
                offsets.append(offset)
            continue
        base, _shape = field_dtype.subdtype
        elements: Iterable[tuple[str, int]] = (
            _ROTATION if name == "rotation" else ((c, i) for i, c in enumerate(_ELEMENTS[name]))
        )
        for column, element in elements:
            names.append(column)
            formats.append(base)
            offsets.append(offset + element * base.itemsize)
    flat = np.dtype(
        {"names": names, "formats": formats, "offsets": offsets, "itemsize": dtype.itemsize}
    )
    booleans = tuple(i for i, name in enumerate(names) if name in BOOLEANS)
    return _Layout(dtype, flat, tuple(names), booleans)


_LAYOUTS: dict[tuple[Kind, Engine], _Layout] = {}


def cached_layout(kind: Kind, engine: Engine) -> _Layout:
    found = _LAYOUTS.get((kind, engine))
    if found is None:
        found = _LAYOUTS[kind, engine] = _layout(kind, engine)
    return found


def columns(kind: Kind) -> tuple[str, ...]:
    """The column names of `kind`'s rows, `frame`, `index`, `time` first.

    The same for every release family (vectors only change width). Raises ValueError for
    a kind that is not tabulated (PhysicsControl, WalkerBones, FrameEnd).
    """
    if kind is Kind.EVENT_ADD:
        own: tuple[str, ...] = _EVENT_ADD_COLUMNS
    elif kind is Kind.ANIM_VEHICLE_WHEELS:
        own = _WHEEL_COLUMNS
    elif kind in FIXED_DTYPES[Engine.UE4]:
        own = cached_layout(kind, Engine.UE4).columns
        if kind is Kind.STATE:
            own = (*own, "state_name")
    else:
        raise UsageError(
            f"{kind.value} records are not tabulated; valid: {', '.join(kind_names())}"
        )
    return FRAME_COLUMNS + own


def frame_span(
    rec: CarlaRecording, start_s: float | None = None, stop_s: float | None = None
) -> range:
    """Archive frames whose elapsed time is within `[start_s, stop_s]` (seconds, inclusive;
    None for unbounded), found with `searchsorted` on the index (its timestamps never
    decrease in a CARLA archive). Raises ValueError when `start_s > stop_s`."""
    if start_s is not None and stop_s is not None and start_s > stop_s:
        raise UsageError(f"the start ({start_s} s) is after the end ({stop_s} s)")
    times = rec.reader.index.timestamp_us
    lo = 0 if start_s is None else int(np.searchsorted(times, _micros(start_s), "left"))
    hi = len(times) if stop_s is None else int(np.searchsorted(times, _micros(stop_s), "right"))
    return range(lo, max(lo, hi))


def _micros(seconds: float) -> int:
    if not math.isfinite(seconds):
        raise UsageError(f"a time must be a finite number of seconds, not {seconds}")
    return round(seconds * 1e6)


def iter_rows(
    rec: CarlaRecording,
    kind: Kind | str,
    *,
    actor: int | None = None,
    start_s: float | None = None,
    stop_s: float | None = None,
    frames: range | None = None,
) -> Iterator[Row]:
    """Yield one row (a dict, keys as `columns(kind)`) per `kind` record, in file order.

    `kind` is a `Kind` or a name `parse_kind` accepts. `actor` keeps the records that name
    that actor id (either actor of a collision, child or parent of an EventParent);
    `start_s`/`stop_s` keep frames with `start_s <= elapsed <= stop_s` (seconds), or
    `frames` those archive frames (what a `Selection` chose: the CLI's selection). A
    record's `pitch`, `yaw`, `roll` columns come from the file's (roll, pitch, yaw) vector.

    Records CARLA wrote that the archive carries raw (a body that did not fit its layout)
    are not decoded here. Raises ValueError for an unknown or untabulated kind, or for
    `actor` with a kind that names no actor; `FormatError` for a damaged archive message.
    """
    kind = parse_kind(kind) if isinstance(kind, str) else kind
    columns(kind)  # raises for an untabulated kind
    if actor is not None and kind not in _ACTOR_FIELDS:
        raise UsageError(f"--actor does not apply to {kind.value} records: they name no actor")
    engine = rec.family.engine
    span = frame_span(rec, start_s, stop_s) if frames is None else frames
    numbers = np.arange(span.start, span.stop, dtype=np.int64)
    run = rec.reader.index_run(span.start, span.stop)  # by URL: the span's pages alone
    flags = run.flags
    if len(flags) and bool(flags.all()):  # flags recorded: skip frames without the kind
        numbers = numbers[(flags & np.uint64(kind.bit)) != 0]
    key = KIND_KEYS[kind]
    for number in numbers.tolist():
        frame = checked_frame(rec.reader[number], number, engine)
        content = frame.get(key)
        if content is None:
            continue
        head = frame_columns(number, frame, run.timestamp_us, span.start)
        if kind is Kind.EVENT_ADD:
            yield from add_rows(head, content, engine, actor)
        elif kind is Kind.ANIM_VEHICLE_WHEELS:
            yield from _wheel_rows(head, content, actor)
        else:
            yield from _fixed_rows(kind, head, content, engine, actor)


def frame_columns(
    number: int, frame: Mapping[str, Any], times: npt.NDArray[np.int64], base: int = 0
) -> tuple[Any, ...]:
    """Frame id, number, elapsed seconds; `times`: the index times from frame `base` on."""
    start = frame.get(KIND_KEYS[Kind.FRAME_START])
    if isinstance(start, bytes | bytearray | memoryview) and len(start) == _FRAME_START.size:
        frame_id, _duration, elapsed = _FRAME_START.unpack(start)
        return (frame_id, number, elapsed)
    return (None, number, times.item(number - base) / 1e6)  # no FrameStart: the index time


def _fixed_rows(
    kind: Kind, head: tuple[Payload, ...], content: Payload, engine: Engine, actor: int | None
) -> Iterator[Row]:
    layout = cached_layout(kind, engine)
    records = np.frombuffer(content, layout.dtype)
    if actor is not None:
        mask = np.zeros(len(records), np.bool_)
        for field in _ACTOR_FIELDS[kind]:
            mask |= records[field] == actor
        records = records[mask]
    names = FRAME_COLUMNS + layout.columns
    for values in records.view(layout.flat).tolist():
        row = dict(zip(names, head + values, strict=True))
        for position in layout.booleans:
            name = layout.columns[position]
            row[name] = bool(row[name])
        if kind is Kind.STATE:
            row["state_name"] = _state_name(row["state"])
        yield row


def _state_name(code: int) -> str | None:
    try:
        return TrafficLightState(code).name.lower()
    except ValueError:
        return None


def add_rows(
    head: tuple[Payload, ...], content: Payload, engine: Engine, actor: int | None
) -> Iterator[Row]:
    for add in maps_to_var(Kind.EVENT_ADD, content, engine):
        if not isinstance(add, ActorAdd) or (actor is not None and add.id != actor):
            continue
        x, y, z = add.location.tolist()
        roll, pitch, yaw = add.rotation.tolist()
        try:
            type_name: str | None = ActorType(add.type).name.lower()
        except ValueError:
            type_name = None
        values = (
            add.id,
            add.type,
            type_name,
            add.blueprint,
            add.uid,
            x,
            y,
            z,
            pitch,
            yaw,
            roll,
            {attr.id: attr.value for attr in add.attributes},
        )
        yield dict(zip(FRAME_COLUMNS + _EVENT_ADD_COLUMNS, head + values, strict=True))


def _wheel_rows(head: tuple[Payload, ...], content: Payload, actor: int | None) -> Iterator[Row]:
    names = FRAME_COLUMNS + _WHEEL_COLUMNS
    for vehicle, start, count in wheel_records(content) or ():
        if actor is not None and vehicle != actor:
            continue
        wheels = np.frombuffer(content, WHEEL_ANIM_DTYPE, count, start).tolist()
        for location, steering, rotation in wheels:
            yield dict(zip(names, (*head, vehicle, location, steering, rotation), strict=True))


# --------------------------------------------------------------------------- writers


def write_ndjson(rows: Iterable[Row], stream: IO[str]) -> int:
    """Write one JSON object per line; returns the number of rows.

    NaN and infinities, which JSON cannot hold, are written as null.
    """
    count = 0
    for row in rows:
        try:
            line = json.dumps(row, allow_nan=False, ensure_ascii=False)
        except ValueError:
            line = json.dumps(_finite(row), allow_nan=False, ensure_ascii=False)
        stream.write(line + "\n")
        count += 1
    return count


def _finite(value: Payload) -> Payload:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(item) for item in value]
    return value


def write_csv(rows: Iterable[Row], stream: IO[str], header: Iterable[str]) -> int:
    """Write a header row then one line per row (csv module quoting); returns the rows.

    Empty cells are None; maps (EventAdd attributes) are written as JSON text; floats as
    Python prints them (`nan`, `inf` included, which pandas reads back).
    """
    names = list(header)
    writer = csv.writer(stream, lineterminator="\n")
    writer.writerow(names)
    count = 0
    for row in rows:
        writer.writerow(
            [
                json.dumps(value, ensure_ascii=False) if isinstance(value, dict) else value
                for value in (row.get(name) for name in names)
            ]
        )
        count += 1
    return count


__all__ = [
    "FRAME_COLUMNS",
    "Row",
    "columns",
    "frame_span",
    "iter_rows",
    "kind_names",
    "parse_kind",
    "table_kinds",
    "write_csv",
    "write_ndjson",
]
