"""The numbers a CARLA server computes before it writes them: time steps and rotations.

A recording stores what the engine computed, not what a client asked for: tick deltas
rounded to float32 and summed in double (spec §3.3), and rotations as the Euler angles of
the actor's quaternion, in Unreal's (roll, pitch, yaw) order (spec §1). These pure
functions reproduce that arithmetic, so that the writer (and anyone building a recording
from their own data) stores the values a server would have stored.

Units: seconds for times, degrees for angles, quaternions as (x, y, z, w).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from nanorec.errors import UsageError

__all__ = [
    "carla_delta",
    "elapsed_times",
    "file_rotations",
    "normalize_rotation",
    "quaternion_from_rotation",
    "rotation_from_quaternion",
    "wrap_degrees",
]


# --------------------------------------------------------------------------- time helpers


def carla_delta(seconds: float) -> float:
    """A tick delta as CARLA stores it: rounded to float32, widened back to double.

    `carla_delta(0.05)` is `0.05000000074505806`, the value real files carry (spec §3.3).
    """
    return float(np.float32(seconds))


def elapsed_times(deltas: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Elapsed seconds of each frame for per-tick deltas (seconds), summed as CARLA does.

    `deltas[i]` is the delta of the tick that wrote frame i+1. Frame 1 always has elapsed
    0 (its delta is ignored); each later frame adds its float32-rounded delta, in double,
    one frame after the other.
    """
    widened = np.asarray(deltas, dtype=np.float64).astype(np.float32).astype(np.float64)
    if widened.size:
        widened[0] = 0.0
    return np.add.accumulate(widened) if widened.size else widened


# ----------------------------------------------------------------------- rotation helpers


def wrap_degrees(angles: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Angles (degrees) mapped into (-180, 180], like Unreal's `FRotator::NormalizeAxis`."""
    values = np.asarray(angles, dtype=np.float64)
    wrapped = np.mod(values, 360.0)  # [0, 360)
    return np.where(wrapped > 180.0, wrapped - 360.0, wrapped)


def quaternion_from_rotation(rotations: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Unit quaternions (x, y, z, w) from rotations (..., 3) as (roll, pitch, yaw) degrees.

    Follows Unreal's `FRotator::Quaternion` (left-handed, Z up).
    """
    rot = np.asarray(rotations, dtype=np.float64)
    half = np.radians(rot) / 2.0
    sr, cr = np.sin(half[..., 0]), np.cos(half[..., 0])
    sp, cp = np.sin(half[..., 1]), np.cos(half[..., 1])
    sy, cy = np.sin(half[..., 2]), np.cos(half[..., 2])
    return np.stack(
        [
            cr * sp * sy - sr * cp * cy,
            -cr * sp * cy - sr * cp * sy,
            cr * cp * sy - sr * sp * cy,
            cr * cp * cy + sr * sp * sy,
        ],
        axis=-1,
    )


def rotation_from_quaternion(quaternions: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Rotations (..., 3) as CARLA records them from quaternions (..., 4) given as (x, y, z, w).

    Follows Unreal's `FQuat::Rotator`: pitch in [-90, 90] degrees, roll and yaw in
    (-180, 180]; at the gimbal-lock singularity pitch is ±90 and the roll absorbs the
    rest. Computed in double precision, so values can differ from the engine's float32
    arithmetic in the last bits. Raises ValueError for a zero quaternion.
    """
    q = np.asarray(quaternions, dtype=np.float64)
    norm = np.linalg.norm(q, axis=-1, keepdims=True)
    if np.any(norm == 0):
        raise UsageError("a zero quaternion has no rotation")
    x, y, z, w = np.moveaxis(q / norm, -1, 0)
    test = z * x - w * y
    yaw = np.degrees(np.arctan2(2.0 * (w * z + x * y), 1.0 - 2.0 * (y * y + z * z)))
    pitch = np.degrees(np.arcsin(np.clip(2.0 * test, -1.0, 1.0)))
    roll = np.degrees(np.arctan2(-2.0 * (w * x + y * z), 1.0 - 2.0 * (x * x + y * y)))
    threshold = 0.4999995
    twist = 2.0 * np.degrees(np.arctan2(x, w))
    pitch = np.where(test > threshold, 90.0, np.where(test < -threshold, -90.0, pitch))
    roll = np.where(test > threshold, yaw - twist, np.where(test < -threshold, -yaw - twist, roll))
    return np.stack([wrap_degrees(roll), pitch, wrap_degrees(yaw)], axis=-1)


def normalize_rotation(rotations: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Arbitrary (roll, pitch, yaw) degrees (..., 3) → the equivalent rotation CARLA records.

    CARLA records the Euler angles of the actor's quaternion, so a pitch of 100° comes back
    as 80° with roll and yaw turned by 180°. Use this on rotations from your own data to
    get the values a CARLA server would have written.
    """
    return rotation_from_quaternion(quaternion_from_rotation(rotations))


def file_rotations(rotations: npt.ArrayLike, count: int) -> npt.NDArray[np.float64]:
    """Pitch/yaw/roll rotations (named fields, or columns in that order) as the file's
    (roll, pitch, yaw) rows."""
    array = np.asarray(rotations)
    if array.dtype.names is not None:
        if not {"pitch", "yaw", "roll"} <= set(array.dtype.names):
            raise UsageError("rotations need fields pitch, yaw and roll")
        columns = [array["roll"], array["pitch"], array["yaw"]]
        return np.stack([np.asarray(c, dtype=np.float64) for c in columns], axis=-1).reshape(-1, 3)
    array = np.asarray(array, dtype=np.float64).reshape(count, 3)
    return array[:, [2, 0, 1]]
