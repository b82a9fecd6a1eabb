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

from .columnar_shape import DOUBLE, INT32, INT64, Message
from .columnar_wire import message_run
from .decode import decode_message
from .pose import POSE, pose7
from .wire import LEN, VARINT, iter_fields, signed32


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
Span = tuple[int, int]


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


def _columns(shape: Message, payload: bytes, spans: list[Span]) -> dict[str, Any] | None:
    """The columns of the messages at `spans` of `payload`, or None unless all read."""
    if not spans:
        return {name: np.zeros(0) for name in shape.columns()}
    starts, ends = np.array(spans, np.int64).T
    ok, columns = message_run(shape, payload, ends - starts, starts)  # in place: no copies
    return columns if ok.all() else None


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
    nodes = _by_trajectory(node_columns, [(tid, len(n)) for tid, n, _ in trajectories], True)
    submaps = _by_trajectory(submap_columns, [(tid, len(s)) for tid, _, s in trajectories], False)
    return nodes, submaps, constraint_columns, landmarks


__all__ = ["Graph", "PoseColumns", "parse"]
