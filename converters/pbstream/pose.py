"""A pose as seven numbers, x y z qx qy qz qw: the column names and a decoded Rigid3d's
values. Why a module: the tables, the numpy readers and the trajectories all speak it, and
it needs none of them."""

from __future__ import annotations

from typing import Any, Final

#: A pose's columns: translation x y z, rotation quaternion qx qy qz qw.
POSE: Final = ("x", "y", "z", "qx", "qy", "qz", "qw")


def pose7(rigid: dict[str, Any] | None) -> tuple[float, ...]:
    """A decoded Rigid3d as (x, y, z, qx, qy, qz, qw), absent fields zero."""
    rigid = rigid or {}
    t = rigid.get("translation") or {}
    q = rigid.get("rotation") or {}
    return (
        t.get("x", 0.0),
        t.get("y", 0.0),
        t.get("z", 0.0),
        q.get("x", 0.0),
        q.get("y", 0.0),
        q.get("z", 0.0),
        q.get("w", 0.0),
    )
