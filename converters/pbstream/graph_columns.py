"""`PoseGraph.parse` at once: the pose graph's nodes, submaps and constraints (thousands of
small messages in one payload) walked with numpy (`columnar_wire.message_run`), a kind at
a time, instead of one `decode_message` a message (~0.3 ms for a graph of 4,000 nodes).

The top levels (PoseGraph, each Trajectory) are read field by field as the decoder reads
them; each node, submap and constraint must have the shape Cartographer writes (fields in
ascending order, each once, of their schema's wire type; any may be left out). Anything
else, landmark poses excepted (decoded one by one as the decoder does), makes `parse`
return None: the caller decodes the graph as before, which says what is wrong.
"""

from __future__ import annotations

from typing import Any, Final

import numpy as np

from nanorec.errors import FormatError

from .columnar_shape import DOUBLE, INT32, INT64, PADDING, Message
from .columnar_wire import message_run
from .decode import decode_message
from .pose import POSE, pose7
from .wire import LEN, VARINT, read_varint, signed32


def _doubles(*names: str) -> Message:
    return Message({key: (DOUBLE, name) for key, name in zip((9, 17, 25, 33), names, strict=False)})


def _rigid(prefix: str) -> Message:
    names = [prefix + name for name in POSE]
    return Message({0x0A: _doubles(*names[:3]), 0x12: _doubles(*names[3:])})


def _id(prefix: str, index: str) -> Message:
    return Message({0x08: (INT32, f"{prefix}trajectory"), 0x10: (INT32, f"{prefix}{index}")})


_NODE: Final = Message({0x08: (INT64, "timestamp"), 0x2A: _rigid(""), 0x38: (INT32, "index")})
_SUBMAP: Final = Message({0x0A: _rigid(""), 0x10: (INT32, "index")})
_CONSTRAINT: Final = Message(
    {
        0x0A: _id("submap_", "index"),
        0x12: _id("node_", "index"),
        0x1A: _rigid(""),
        0x28: (INT32, "tag"),
        0x31: (DOUBLE, "translation_weight"),
        0x39: (DOUBLE, "rotation_weight"),
    }
)
Ints = np.ndarray[Any, np.dtype[np.int64]]
#: PoseGraph's fields: constraint (2), trajectory (4), landmark pose (5), length-delimited.
_CONSTRAINT_KEY, _TRAJECTORY_KEY, _LANDMARK_KEY = 0x12, 0x22, 0x2A
_NONE: Final = np.zeros(0, np.int64)


#: A trajectory's nodes or submaps: index (int32), ticks (int64, 0 for submaps) and poses
#: (n, 7: x y z qx qy qz qw), sorted by index.
PoseColumns = tuple[np.ndarray, np.ndarray, np.ndarray]
#: What `parse` gives: nodes and submaps by trajectory id, the constraints' columns (by
#: field name, `POSE` for the pose) and landmarks as (landmark id, pose).
Graph = tuple[
    dict[int, PoseColumns],
    dict[int, PoseColumns],
    dict[str, np.ndarray],
    list[tuple[str, tuple[float, ...]]],
]


def _columns(shape: Message, payload: bytes, starts: Ints, ends: Ints) -> dict[str, Any] | None:
    """The columns of the messages at `starts`..`ends` of `payload`, or None unless all
    read."""
    if not len(starts):
        return {name: np.zeros(0) for name in shape.columns()}
    ok, columns = message_run(shape, payload, ends - starts, starts)  # in place: no copies
    return columns if ok.all() else None


def _fields(buf: bytes, pos: int, stop: int) -> tuple[Ints, Ints, Ints] | None:
    """Key, body start and body end (a varint: its value and the offset after it) of each
    field of `buf[pos:stop]`: `wire.iter_fields` for the pose graph's levels (thousands of
    constraints), without a tuple a field (~2.5x sooner). None for anything but one-byte
    keys of wire types 0 and 2 inside `stop`: the decoder then reads (and judges) it."""
    keys: list[int] = []
    firsts: list[int] = []
    lasts: list[int] = []
    try:
        while pos < stop:
            key = buf[pos]
            wire = key & 7
            if key >= 0x80 or key < 8 or wire not in (VARINT, LEN):
                return None
            if pos + 1 < stop and buf[pos + 1] < 0x80:
                value, after = buf[pos + 1], pos + 2
            else:
                value, after = read_varint(buf, pos + 1, stop)
            if wire == LEN:
                value, after = after, after + value
                if after > stop:
                    return None
            keys.append(key)
            firsts.append(value)
            lasts.append(after)
            pos = after
    except FormatError:
        return None
    return np.array(keys, np.int64), np.array(firsts, np.int64), np.array(lasts, np.int64)


def _by_trajectory(
    columns: dict[str, Any], counts: list[tuple[int, int]], timed: bool
) -> dict[int, PoseColumns]:
    """Each trajectory's (index, ticks or 0, poses (n, 7)) from the messages' columns
    (`counts`: each trajectory's id and how many messages, in order), sorted by index
    (stable), as `trajectory.Poses` holds them."""
    found = {}
    first = 0
    pose = np.stack([columns[name] for name in POSE], axis=1) if counts else None
    for tid, count in counts:
        part = slice(first, first + count)
        first += count
        index = columns["index"][part].astype(np.int32)
        order = np.argsort(index, kind="stable")
        ticks = columns["timestamp"][part] if timed else np.zeros(count, np.int64)
        table = pose[part][order] if pose is not None else np.zeros((0, 7))
        found[tid] = (index[order], ticks.astype(np.int64)[order], table)
    return found


def parse(payload: bytes, start: int, end: int | None) -> Graph | None:
    """(nodes, submaps, constraint columns, landmarks) for `PoseGraph.parse` (see
    there), or None when the graph is not all of the usual shape."""
    top = _fields(payload, start, len(payload) if end is None else end)
    if top is None:
        return None
    keys, firsts, lasts = top
    if not np.isin(keys, (_CONSTRAINT_KEY, _TRAJECTORY_KEY, _LANDMARK_KEY)).all():
        return None
    trajectories: list[tuple[int, Ints, Ints, Ints, Ints]] = []
    landmarks: list[tuple[str, tuple[float, ...]]] = []
    for k in np.flatnonzero(keys != _CONSTRAINT_KEY).tolist():
        a, b = int(firsts[k]), int(lasts[k])
        if keys[k] == _LANDMARK_KEY:
            try:
                item = decode_message(payload, "LandmarkPose", a, b)
            except FormatError:
                return None
            landmarks.append((str(item.get("landmark_id", "")), pose7(item.get("global_pose"))))
            continue
        inner = _fields(payload, a, b)
        if inner is None:
            return None
        kinds, c, d = inner
        ids = np.flatnonzero(kinds == 0x18)  # trajectory_id: the last one given
        tid = signed32(int(c[ids[-1]])) if len(ids) else 0
        nodes, submaps = kinds == 0x0A, kinds == 0x12
        if not (nodes | submaps | (kinds == 0x18)).all():
            return None
        trajectories.append((tid, c[nodes], d[nodes], c[submaps], d[submaps]))
    constraints = keys == _CONSTRAINT_KEY
    padded = payload + bytes(PADDING)  # once for the three runs (`message_run` pads a copy)
    found = [
        _columns(shape, padded, np.concatenate([t[k] for t in trajectories] or [_NONE]), ends)
        for shape, k, ends in (
            (_NODE, 1, np.concatenate([t[2] for t in trajectories] or [_NONE])),
            (_SUBMAP, 3, np.concatenate([t[4] for t in trajectories] or [_NONE])),
        )
    ]
    found.append(_columns(_CONSTRAINT, padded, firsts[constraints], lasts[constraints]))
    if any(columns is None for columns in found):
        return None
    node_columns, submap_columns, constraint_columns = found
    assert node_columns is not None and submap_columns is not None
    assert constraint_columns is not None
    nodes = _by_trajectory(node_columns, [(t[0], len(t[1])) for t in trajectories], True)
    submaps = _by_trajectory(submap_columns, [(t[0], len(t[3])) for t in trajectories], False)
    return nodes, submaps, constraint_columns, landmarks


__all__ = ["Graph", "PoseColumns", "parse"]
