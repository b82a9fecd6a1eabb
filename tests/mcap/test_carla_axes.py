"""CARLA's left-handed frame to Foxglove's right-handed one, against Unreal's own rotation
matrix (FRotationMatrix: the rows are the rotated x, y, z axes in world coordinates)."""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt
from hypothesis import given
from hypothesis import strategies as st

from nanorec.converters.carla.mcap_scene import rotate, to_foxglove

MIRROR = np.diag([1.0, -1.0, 1.0])  # Unreal's y (right) is Foxglove's -y (left)


def unreal_matrix(pitch: float, yaw: float, roll: float) -> npt.NDArray[np.float64]:
    """Unreal Engine's FRotationMatrix(FRotator(pitch, yaw, roll)), degrees, transposed to
    act on column vectors."""
    sp, cp = math.sin(math.radians(pitch)), math.cos(math.radians(pitch))
    sy, cy = math.sin(math.radians(yaw)), math.cos(math.radians(yaw))
    sr, cr = math.sin(math.radians(roll)), math.cos(math.radians(roll))
    rows = np.array(
        [
            [cp * cy, cp * sy, sp],
            [sr * sp * cy - cr * sy, sr * sp * sy + cr * cy, -sr * cp],
            [-(cr * sp * cy + sr * sy), cy * sr - cr * sp * sy, cr * cp],
        ]
    )
    return rows.T


def quaternion_matrix(q: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    x, y, z, w = q
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
        ]
    )


angles = st.floats(-180, 180, allow_nan=False)


@given(pitch=st.floats(-90, 90, allow_nan=False), yaw=angles, roll=angles)
def test_rotation_is_the_mirrored_unreal_rotation(pitch: float, yaw: float, roll: float) -> None:
    _, quaternion = to_foxglove([0, 0, 0], [pitch, yaw, roll])
    assert math.isclose(float(np.linalg.norm(quaternion[0])), 1.0, rel_tol=1e-12)
    expected = MIRROR @ unreal_matrix(pitch, yaw, roll) @ MIRROR
    np.testing.assert_allclose(quaternion_matrix(quaternion[0]), expected, atol=1e-12)


@given(
    location=st.tuples(*[st.floats(-1e6, 1e6, allow_nan=False)] * 3),
    rotation=st.tuples(st.floats(-90, 90, allow_nan=False), angles, angles),
    offset=st.tuples(*[st.floats(-500, 500, allow_nan=False)] * 3),
)
def test_points_of_an_actor_land_where_unreal_puts_them(
    location: tuple[float, float, float],
    rotation: tuple[float, float, float],
    offset: tuple[float, float, float],
) -> None:
    """A point `offset` cm in an actor's local frame: Unreal's world point, mirrored and in
    metres, is where Foxglove's pose puts it."""
    position, quaternion = to_foxglove(location, rotation)
    unreal_world = np.array(location) + unreal_matrix(*rotation) @ np.array(offset)
    local = np.array([offset]) * [0.01, -0.01, 0.01]
    ours = position + rotate(quaternion, local)
    np.testing.assert_allclose(ours[0], MIRROR @ unreal_world / 100, atol=1e-9)


def test_named_cases() -> None:
    """Yaw 90 (facing CARLA's +y, to the right) faces Foxglove's -y; nose-up pitch lifts
    the nose; positive roll drops the right side (CARLA) = raises nothing on the left."""
    forward = np.array([[1.0, 0.0, 0.0]])
    left = np.array([[0.0, 1.0, 0.0]])
    cases = {
        (0.0, 90.0, 0.0): (forward, [0.0, -1.0, 0.0]),
        (30.0, 0.0, 0.0): (forward, [math.cos(math.pi / 6), 0.0, 0.5]),
        (0.0, 0.0, 30.0): (left, [0.0, math.cos(math.pi / 6), 0.5]),
    }
    for rotation, (axis, expected) in cases.items():
        _, q = to_foxglove([0, 0, 0], rotation)
        np.testing.assert_allclose(rotate(q, axis)[0], expected, atol=1e-12)
    position, _ = to_foxglove([100.0, 250.0, -30.0], [0, 0, 0])
    np.testing.assert_allclose(position[0], [1.0, -2.5, -0.3])


def test_many_at_once_match_one_by_one() -> None:
    rng = np.random.default_rng(1)
    location = rng.uniform(-1e4, 1e4, (50, 3))
    rotation = rng.uniform(-180, 180, (50, 3))
    position, quaternion = to_foxglove(location, rotation)
    for i in range(50):
        p, q = to_foxglove(location[i], rotation[i])
        np.testing.assert_array_equal(p[0], position[i])
        np.testing.assert_array_equal(q[0], quaternion[i])
    empty_p, empty_q = to_foxglove(np.empty((0, 3)), np.empty((0, 3)))
    assert empty_p.shape == (0, 3) and empty_q.shape == (0, 4)
