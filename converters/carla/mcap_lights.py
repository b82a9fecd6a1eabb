"""Traffic lights in CARLA's MCAP export: each actor's state for the scene's colours
(`actor_states`, `run_actor_states`), and `/carla/traffic_lights` (`carla.TrafficLights`,
JSON) of the frames of a run, from the frames' State records and the latest
TrafficLightTime rows: `mcap._lights`' message, the same bytes as `json_bytes` writes it
(`tests/mcap/test_carla_fast.py`).

A run whose frames hold the same lights in the same order (CARLA writes them all, frame
after frame) is written at once: a light's text is its head (id, state, frozen: a few
distinct ones per run), its elapsed time (all of the run's numbers written by one
`orjson.dumps` and cut at the commas) and its tail (its phase times, fixed in the run).
Other runs, or without orjson, go frame by frame through dicts.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from typing import Any, TypeAlias

import numpy as np
import numpy.typing as npt

from nanorec.outputs.mcap import McapRecord, json_bytes
from nanorec.untyped import Payload

from .ids import Engine, Kind, TrafficLightState
from .mcap_scene import TOPICS, TRAFFIC_LIGHTS_SCHEMA
from .message import kind_key, records

_orjson: Any
try:
    _orjson = importlib.import_module("orjson")
except ImportError:  # then frame by frame, `json_bytes` writing its own numbers
    _orjson = None

STATES = {state.value: state.name for state in TrafficLightState}
_STATE = kind_key(Kind.STATE)
_NO_TIMES = (None, None, None)
#: State records: a frame's (lights), or a run's (frames, lights).
States: TypeAlias = npt.NDArray[np.void]
#: light id -> (green, yellow, red) times, from TrafficLightTime rows.
Spans: TypeAlias = dict[int, tuple[float, ...]]
_NO_STATE = dict.fromkeys(
    ("id", "state", "is_frozen", "elapsed_time", "green_time", "yellow_time", "red_time")
)


def match(keys: npt.NDArray[Any], wanted: npt.NDArray[Any]) -> tuple[Any, Any]:
    """For each of `wanted`: its position in `keys` (sorted, unique) and whether found."""
    at = np.searchsorted(keys, wanted)
    at[at >= len(keys)] = 0
    found = keys[at] == wanted if len(keys) else np.zeros(len(wanted), np.bool_)
    return at, found


def same_rows(table: npt.NDArray[Any]) -> int:
    """How many leading rows of a 2D array equal its first."""
    differs = (table != table[0]).any(axis=1)
    return int(np.argmax(differs)) if differs.any() else len(table)


def run_states(frames: Sequence[Mapping[str, Payload]], engine: Engine) -> States | None:
    """The State records of a run's frames as (frames, lights) when every frame names the
    same lights in the same order, else None."""
    contents = [frame.get(_STATE, b"") for frame in frames]
    if any(len(c) != len(contents[0]) for c in contents):
        return None
    states = records({_STATE: b"".join(contents)}, Kind.STATE, engine)
    states = states.reshape(len(frames), -1)
    if states.shape[1] and same_rows(states["id"]) != len(frames):
        return None
    return states


def actor_states(states: States, ids: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """Each actor's traffic-light state code in a frame's State records (-1: none or a code
    CARLA does not define); the last record of an id counts, as in `World`."""
    state = np.full(len(ids), -1, np.int64)
    if len(states):
        order = np.argsort(states["id"], kind="stable")
        light_ids = states["id"][order].astype(np.int64)
        last = np.ones(len(order), np.bool_)
        last[:-1] = light_ids[1:] != light_ids[:-1]
        light_ids, codes = light_ids[last], states["state"][order][last].astype(np.int64)
        at, found = match(light_ids, ids)
        found &= codes[at] <= max(STATES)
        state[found] = codes[at[found]]
    return state


def run_actor_states(states: States, ids: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """`actor_states` of every frame of a run (`run_states`): (frames, actors)."""
    out = np.full((len(states), len(ids)), -1, np.int64)
    if not states.shape[1]:
        return out
    light_ids = states["id"][0].astype(np.int64)
    order = np.argsort(light_ids, kind="stable")
    sorted_ids = light_ids[order]
    if len(sorted_ids) > 1 and not (sorted_ids[1:] != sorted_ids[:-1]).all():
        return np.stack([actor_states(row, ids) for row in states])
    at, found = match(sorted_ids, ids)
    codes = states["state"][:, order[at]].astype(np.int64)
    valid = found[None, :] & (codes <= max(STATES))
    out[valid] = codes[valid]
    return out


def record(time_ns: int, data: bytes, number: int) -> McapRecord:
    return McapRecord(
        TOPICS["traffic_lights"],
        "carla.TrafficLights",
        "jsonschema",
        TRAFFIC_LIGHTS_SCHEMA,
        "json",
        time_ns,
        time_ns,
        data,
        sequence=number,
    )


def frame_message(
    states: States, spans: Spans, time_ns: int, frame_id: int
) -> dict[str, Any] | None:
    """One frame's message from its State records and `spans` (light id -> green, yellow,
    red times); None without any light."""
    found: dict[int, dict[str, Any]] = {}
    for light_id, frozen, elapsed, code in states.tolist():
        green, yellow, red = spans.get(light_id, _NO_TIMES)
        found[light_id] = {
            "id": light_id,
            "state": STATES.get(code),
            "is_frozen": bool(frozen),
            "elapsed_time": elapsed,
            "green_time": green,
            "yellow_time": yellow,
            "red_time": red,
        }
    for light_id, (green, yellow, red) in spans.items():
        if light_id not in found:
            found[light_id] = dict(_NO_STATE, id=light_id, green_time=green)
            found[light_id].update(yellow_time=yellow, red_time=red)
    if not found:
        return None
    return {
        "timestamp": {"sec": time_ns // 1_000_000_000, "nsec": time_ns % 1_000_000_000},
        "frame_id": frame_id,
        "lights": [found[light_id] for light_id in sorted(found)],
    }


def run_messages(
    states: States, spans: Spans, times: list[int], frame_ids: list[int]
) -> list[bytes | None] | None:
    """Each frame's message, encoded, for a run whose State records `states` (frames,
    lights) name the same lights in the same order; None when this way cannot (no orjson,
    a light twice)."""
    if _orjson is None or not states.size:
        return None
    ids = states["id"][0].astype(np.int64)
    if len(np.unique(ids)) != len(ids):
        return None
    count, width = states.shape
    order = sorted({*ids.tolist(), *spans})
    column = {light_id: j for j, light_id in enumerate(ids.tolist())}
    # Per frame: its start, then 3 pieces per light (head, elapsed time, tail), then "]}".
    pieces = np.full((count, 3 * len(order) + 2), b"", object)
    for slot, light_id in enumerate(order):
        comma = b"," if slot < len(order) - 1 else b""
        j = column.get(light_id)
        if j is None:  # timed but without a State record: nulls
            text = json_bytes(_item(light_id, None, None, spans.get(light_id, _NO_TIMES)))
            pieces[:, 1 + 3 * slot] = text + comma
            continue
        tail = _dumps(spans.get(light_id, _NO_TIMES))[1:-1].split(b",")
        pieces[:, 3 + 3 * slot] = (
            b',"green_time":%b,"yellow_time":%b,"red_time":%b}' % tuple(tail) + comma
        )
    codes = states["state"].astype(np.int64)
    frozen = states["is_frozen"] != 0
    key = (np.arange(width)[None, :] * 512 + codes) * 2 + frozen
    unique, inverse = np.unique(key, return_inverse=True)
    heads = np.empty(len(unique), object)
    heads[:] = [_head(int(ids[k >> 10]), int(k >> 1) & 511, bool(k & 1)) for k in unique]
    slots = np.array([1 + 3 * order.index(light_id) for light_id in ids.tolist()], np.intp)
    pieces[:, slots] = heads[inverse.reshape(count, width)]
    elapsed = states["elapsed_time"].astype(np.float64).ravel()
    numbers = _orjson.dumps(elapsed, option=_orjson.OPT_SERIALIZE_NUMPY)[1:-1].split(b",")
    texts = np.empty(len(numbers), object)
    texts[:] = numbers
    pieces[:, slots + 1] = texts.reshape(count, width)
    starts = np.empty(count, object)
    starts[:] = [
        b'{"timestamp":{"sec":%d,"nsec":%d},"frame_id":%d,"lights":['
        % (*divmod(time_ns, 1_000_000_000), frame_id)
        for time_ns, frame_id in zip(times, frame_ids, strict=True)
    ]
    pieces[:, 0] = starts
    pieces[:, -1] = b"]}"
    step = pieces.shape[1]
    flat = pieces.ravel().tolist()
    return [b"".join(flat[f * step : (f + 1) * step]) for f in range(count)]


def _item(light_id: int, code: int | None, frozen: bool | None, span: Any) -> dict[str, Any]:
    green, yellow, red = span
    return {
        "id": light_id,
        "state": None if code is None else STATES.get(code),
        "is_frozen": frozen,
        "elapsed_time": None,
        "green_time": green,
        "yellow_time": yellow,
        "red_time": red,
    }


def _head(light_id: int, code: int, frozen: bool) -> bytes:
    """`{"id":..,"state":..,"is_frozen":..,"elapsed_time":` (a State's code is a byte)."""
    state = _dumps(STATES.get(code))
    return b'{"id":%d,"state":%b,"is_frozen":%b,"elapsed_time":' % (
        light_id,
        state,
        b"true" if frozen else b"false",
    )


def _dumps(value: Any) -> bytes:
    data: bytes = _orjson.dumps(value)
    return data


def spans_of(rows: npt.NDArray[Any]) -> Spans:
    """light id -> (green, yellow, red) from TrafficLightTime rows."""
    return {row[0]: row[1:] for row in rows.tolist()}


__all__ = [
    "STATES",
    "actor_states",
    "frame_message",
    "match",
    "record",
    "run_actor_states",
    "run_messages",
    "run_states",
    "same_rows",
    "spans_of",
]
