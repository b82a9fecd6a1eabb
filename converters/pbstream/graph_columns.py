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

from .columnar_wire import DOUBLE, INT32, INT64, Message, message_run
from .decode import decode_message
from .wire import LEN, VARINT, iter_fields, signed32

_POSE: Final = ("x", "y", "z", "qx", "qy", "qz", "qw")


def _doubles(*names: str) -> Message:
    return Message({key: (DOUBLE, name) for key, name in zip((9, 17, 25, 33), names, strict=False)})


def _rigid(prefix: str) -> Message:
    names = [prefix + name for name in _POSE]
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
Span = tuple[int, int]


def _columns(shape: Message, payload: bytes, spans: list[Span]) -> dict[str, Any] | None:
    """The columns of the messages at `spans` of `payload`, or None unless all read."""
    if not spans:
        return {name: np.zeros(0) for name in shape.columns()}
    view = memoryview(payload)
    joined = b"".join([view[a:b] for a, b in spans])
    sizes = np.array([b - a for a, b in spans], np.int64)
    ok, columns = message_run(shape, joined, sizes)
    return columns if ok.all() else None


def _poses(columns: dict[str, Any], trajectories: list[tuple[int, int]], timed: bool) -> Any:
    """Each trajectory's `Poses` (`trajectories`: its id and how many messages, in order)
    from the messages' columns, sorted by index (stable), as `trajectory._poses` sorts."""
    from .trajectory import Poses

    found = {}
    first = 0
    pose = np.stack([columns[name] for name in _POSE], axis=1) if trajectories else None
    for tid, count in trajectories:
        part = slice(first, first + count)
        first += count
        index = columns["index"][part].astype(np.int32)
        order = np.argsort(index, kind="stable")
        ticks = columns["timestamp"][part] if timed else np.zeros(count, np.int64)
        table = pose[part][order] if pose is not None else np.zeros((0, 7))
        found[tid] = Poses(
            tid,
            index[order],
            ticks.astype(np.int64)[order],
            table[:, :3].copy(),
            table[:, 3:].copy(),
            "pose_graph",
        )
    return found


def _constraints(table: dict[str, Any]) -> Any:
    """The constraints' columns as `trajectory.CONSTRAINT_DTYPE` rows."""
    from .trajectory import CONSTRAINT_DTYPE

    found = np.zeros(len(table["tag"]), CONSTRAINT_DTYPE)
    for name in ("submap_trajectory", "submap_index", "node_trajectory", "node_index"):
        found[name.replace("trajectory", "trajectory_id")] = table[name]
    for name in ("tag", "translation_weight", "rotation_weight"):
        found[name] = table[name]
    found["pose"] = np.stack([table[name] for name in _POSE], axis=1)
    return found


def parse(payload: bytes, start: int, end: int | None) -> tuple[Any, ...] | None:
    """(nodes, submaps, constraints, landmarks) as `PoseGraph.parse` builds them (see
    there), or None when the graph is not all of the usual shape."""
    from .trajectory import pose7

    trajectories: list[tuple[int, list[Span], list[Span]]] = []
    spans: tuple[list[Span], list[Span]]
    constraints: list[Span] = []
    landmarks: list[tuple[str, tuple[float, ...]]] = []
    try:
        for number, wire, a, b in iter_fields(payload, start, end):
            if wire != LEN or number not in (2, 4, 5):
                return None
            if number == 2:
                constraints.append((a, b))
            elif number == 5:
                item = decode_message(payload, "LandmarkPose", a, b)
                landmarks.append((str(item.get("landmark_id", "")), pose7(item.get("global_pose"))))
            else:
                tid, spans = 0, ([], [])  # nodes', submaps'
                for field, kind, c, d in iter_fields(payload, a, b):
                    if field == 3 and kind == VARINT:
                        tid = signed32(c)
                    elif field in (1, 2) and kind == LEN:
                        spans[field - 1].append((c, d))
                    else:
                        return None
                trajectories.append((tid, *spans))
    except FormatError:
        return None
    node_spans = [span for _, nodes, _ in trajectories for span in nodes]
    submap_spans = [span for _, _, submaps in trajectories for span in submaps]
    found = [
        _columns(shape, payload, spans)
        for shape, spans in (
            (_NODE, node_spans),
            (_SUBMAP, submap_spans),
            (_CONSTRAINT, constraints),
        )
    ]
    if any(columns is None for columns in found):
        return None
    node_columns, submap_columns, constraint_columns = found
    assert node_columns is not None and submap_columns is not None
    assert constraint_columns is not None
    nodes = _poses(node_columns, [(tid, len(n)) for tid, n, _ in trajectories], True)
    submaps = _poses(submap_columns, [(tid, len(s)) for tid, _, s in trajectories], False)
    return nodes, submaps, _constraints(constraint_columns), landmarks


__all__ = ["parse"]
