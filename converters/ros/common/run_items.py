"""Messages that are one array of messages (tf's TFMessage: `TransformStamped[] transforms`)
as one table row per element, decoded a run at once.

A TF table queried as `SELECT child_frame_id, "transform.translation.x" FROM tf` needs a
row per transform, not a message's transforms as one cell of JSON text; so the rows of such
a topic are its elements, each stamped with its message's number and times and `item`, its
place in the array (`table_runs.items`: the per-message rows taken apart the same way). A
run of them is decoded with `run_columns`' reader: the array's counts at once, then element
`j` of every message holding more than `j` elements at once, `j` from 0 to the longest array
(element sizes vary with their strings, so an element's start is known only after the one
before).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final

import numpy as np

from .run_columns import FieldLike, Leaf, Run, Wire, decode_fields, leaves
from .table_runs import ITEM, STAMPS, Ints

#: The types whose rows are their array's elements, as ROS1 and ROS 2 spell them.
ITEM_TYPES: Final = frozenset(
    {"tf2_msgs/TFMessage", "tf2_msgs/msg/TFMessage", "tf/tfMessage", "tf/msg/tfMessage"}
)


def array_field(fields_of: Callable[[str], Sequence[FieldLike] | None], root: str) -> str | None:
    """The one field of `root` when it is an array of messages and `root` one of
    `ITEM_TYPES` (its rows are the elements), else None."""
    fields = fields_of(root) if root in ITEM_TYPES else None
    if not fields or len(fields) != 1 or fields[0].array != -1:
        return None
    return fields[0].name if fields_of(fields[0].type) else None


def item_leaves(
    fields_of: Callable[[str], Sequence[FieldLike] | None], root: str, wire: Wire
) -> list[Leaf] | None:
    """The columns of the elements of `root`'s array (`array_field`), when they can be
    decoded a run at once."""
    if array_field(fields_of, root) is None:
        return None
    fields = fields_of(root) or ()
    found = leaves(fields_of, fields[0].type, wire)
    if found is None or any(leaf.name in STAMPS or leaf.name == ITEM for leaf in found):
        return None
    return found


def decode_items(
    leaves: list[Leaf], wire: Wire, buffer: bytes, starts: Ints, lengths: Ints
) -> tuple[Ints, dict[str, Any]] | None:
    """How many elements each message at `starts` holds, and the columns of all of them in
    order (message by message); None when a message must be decoded on its own (its
    counts run past its payload, bytes are left after it, see `run_columns.decode_run`)."""
    import pyarrow as pa

    run = Run(pa, wire, buffer, starts, lengths)
    if not run.headed():
        return None
    counts = run.counts()
    least = _least_size(leaves, wire)
    if counts is None or not least:
        return None
    if bool((counts * least > run.end - run.origin - run.at).any()):
        return None  # more elements than bytes for them: the decoder says what is wrong
    parts: list[tuple[Ints, dict[str, Any]]] = []
    for j in range(int(counts.max()) if len(counts) else 0):
        chosen = np.flatnonzero(counts > j)
        part = run.subset(chosen)
        columns = decode_fields(part, leaves, (1, 0))
        if columns is None:
            return None
        run.at[chosen] = part.at
        parts.append((chosen, columns))
    if not run.ended():
        return None
    return counts, _in_order(pa, counts, parts)


def _least_size(leaves: list[Leaf], wire: Wire) -> int:
    """The fewest bytes one element takes (a string or sequence at least its count)."""
    size = 0
    for leaf in leaves:
        if leaf.dtype is not None and (leaf.array is None or leaf.array > 0):
            size += np.dtype(leaf.dtype).itemsize * (leaf.array or 1)
        else:
            size += 4 + (leaf.dtype is None and wire.nul)
    return size


def _in_order(pa: Any, counts: Ints, parts: list[tuple[Ints, dict[str, Any]]]) -> dict[str, Any]:
    """The columns of `parts` (element `j` of messages `chosen`, for each `j`) as rows
    message by message, element by element."""
    if not parts:
        return {}
    first = np.cumsum(counts) - counts
    places = np.concatenate([first[chosen] + j for j, (chosen, _) in enumerate(parts)])
    order = np.argsort(places, kind="stable")
    columns: dict[str, Any] = {}
    for name in parts[0][1]:
        values = [columns_j[name] for _, columns_j in parts]
        if isinstance(values[0], np.ndarray):
            columns[name] = np.concatenate(values)[order]
        else:
            columns[name] = pa.concat_arrays(values).take(pa.array(order))
    return columns


__all__ = ["ITEM_TYPES", "array_field", "decode_items", "item_leaves"]
