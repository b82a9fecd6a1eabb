"""Arrow tables compared as a reader sees them: `Table.equals` holds NaN unequal to
itself, and float lists (a LaserScan's ranges) keep their NaN."""

from __future__ import annotations

import math
from typing import Any


def same_values(a: Any, b: Any) -> bool:
    """`a == b` with NaN equal to NaN, through lists and maps."""
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(map(same_values, a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_values(a[k], b[k]) for k in a)
    return bool(a == b)


def same_tables(a: Any, b: Any) -> bool:
    """The same schema and the same cells (NaN equal to NaN), whatever the chunks."""
    if a.equals(b):
        return True
    return bool(a.schema == b.schema) and same_values(a.to_pylist(), b.to_pylist())
