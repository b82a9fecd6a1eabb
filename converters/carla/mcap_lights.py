"""`/carla/traffic_lights` (`carla.TrafficLights`, JSON) of the frames of a run, from the
frames' State records and the latest TrafficLightTime rows: `mcap._lights`' message, the
same bytes as `json_bytes` writes it (`tests/mcap/test_carla_fast.py`).

A run whose frames hold the same lights in the same order (CARLA writes them all, frame
after frame) is written at once: a light's text is its head (id, state, frozen: a few
distinct ones per run), its elapsed time (all of the run's numbers written by one
`orjson.dumps` and cut at the commas) and its tail (its phase times, fixed in the run).
Other runs, or without orjson, go frame by frame through dicts.
"""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np
import numpy.typing as npt

from nanorec.mcap import McapRecord, json_bytes

from .ids import TrafficLightState
from .mcap import TOPICS, TRAFFIC_LIGHTS_SCHEMA

_orjson: Any
try:
    _orjson = importlib.import_module("orjson")
except ImportError:  # then frame by frame, `json_bytes` writing its own numbers
    _orjson = None

STATES = {state.value: state.name for state in TrafficLightState}
_NO_TIMES = (None, None, None)
_NO_STATE = dict.fromkeys(
    ("id", "state", "is_frozen", "elapsed_time", "green_time", "yellow_time", "red_time")
)


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
    states: Any, spans: dict[int, Any], time_ns: int, frame_id: int
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
    states: Any, spans: dict[int, Any], times: list[int], frame_ids: list[int]
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
    pieces = np.full((count, len(order), 3), b"", object)
    for slot, light_id in enumerate(order):
        j = column.get(light_id)
        if j is None:  # timed but without a State record: nulls
            text = json_bytes(_item(light_id, None, None, spans.get(light_id, _NO_TIMES)))
            pieces[:, slot, 0] = b"," + text
            continue
        tail = _dumps(spans.get(light_id, _NO_TIMES))[1:-1].split(b",")
        pieces[:, slot, 2] = b',"green_time":%b,"yellow_time":%b,"red_time":%b}' % tuple(tail)
    codes = states["state"].astype(np.int64)
    frozen = states["is_frozen"] != 0
    key = (np.arange(width)[None, :] * 512 + codes) * 2 + frozen
    unique, inverse = np.unique(key, return_inverse=True)
    heads = np.empty(len(unique), object)
    heads[:] = [_head(int(ids[k >> 10]), int(k >> 1) & 511, bool(k & 1)) for k in unique]
    slots = np.array([order.index(light_id) for light_id in ids.tolist()], np.intp)
    pieces[:, slots, 0] = heads[inverse.reshape(count, width)]
    elapsed = states["elapsed_time"].astype(np.float64).ravel()
    numbers = _orjson.dumps(elapsed, option=_orjson.OPT_SERIALIZE_NUMPY)[1:-1].split(b",")
    pieces[:, slots, 1] = np.array(numbers, object).reshape(count, width)
    out: list[bytes | None] = []
    for f, (time_ns, frame_id) in enumerate(zip(times, frame_ids, strict=True)):
        sec, nsec = divmod(time_ns, 1_000_000_000)
        lights = b"".join(pieces[f].ravel().tolist())[1:]
        out.append(
            b'{"timestamp":{"sec":%d,"nsec":%d},"frame_id":%d,"lights":[%b]}'
            % (sec, nsec, frame_id, lights)
        )
    return out


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
    """`,{"id":..,"state":..,"is_frozen":..,"elapsed_time":` (a State's code is a byte)."""
    state = _dumps(STATES.get(code))
    return b',{"id":%d,"state":%b,"is_frozen":%b,"elapsed_time":' % (
        light_id,
        state,
        b"true" if frozen else b"false",
    )


def _dumps(value: Any) -> bytes:
    data: bytes = _orjson.dumps(value)
    return data


def spans_of(rows: npt.NDArray[Any]) -> dict[int, Any]:
    """light id -> (green, yellow, red) from TrafficLightTime rows."""
    return {row[0]: row[1:] for row in rows.tolist()}


__all__ = ["STATES", "frame_message", "record", "run_messages", "spans_of"]
