"""How the generated actors move: circles at constant speed, computed with numpy for a whole
group at once, and rounded so that the same call writes the same bytes on every machine
(trigonometric results are rounded to 2^-20: last-bit differences between maths libraries
cannot leak into the file). Units as in the files: cm, degrees, m/s for velocities."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from .geometry import wrap_degrees

_Q = float(2**20)


def quantize(values: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """Round to a multiple of 2^-20 so libm/SIMD last-bit differences cannot change bytes."""
    return np.round(values * _Q) / _Q


def quantize_scalar(value: float) -> float:
    """`quantize` for one number."""
    return round(value * _Q) / _Q


class Motion:
    """Circular motion of a group of actors: centre, radius (cm), phase, ω (rad/s)."""

    def __init__(
        self,
        cx: npt.NDArray[np.float64],
        cy: npt.NDArray[np.float64],
        r: npt.NDArray[np.float64],
        z: npt.NDArray[np.float64],
        phase: npt.NDArray[np.float64],
        omega: npt.NDArray[np.float64],
        *,
        vehicle: bool,
    ) -> None:
        self.cx, self.cy, self.r, self.z, self.phase, self.omega = cx, cy, r, z, phase, omega
        self.turn = 90.0 * np.sign(omega)  # heading is the tangent of the circle
        self.vehicle = vehicle
        self.c = self.s = np.zeros(len(cx))

    def pose(self, t: float, loc: npt.NDArray[Any], rot: npt.NDArray[Any]) -> None:
        """Write locations (n, 3) cm and rotations (n, 3) degrees at `t` seconds into views."""
        theta = self.phase + self.omega * t
        c = self.c = quantize(np.cos(theta))
        s = self.s = quantize(np.sin(theta))
        loc[:, 0] = self.cx + self.r * c
        loc[:, 1] = self.cy + self.r * s
        rot[:, 2] = wrap_degrees(np.degrees(theta) + self.turn)
        if self.vehicle:
            wobble = c * c - s * s  # cos 2θ: a gentle road undulation
            loc[:, 2] = self.z + 0.25 * wobble
            rot[:, 0] = 0.1 * c * s  # sin 2θ / 20
            rot[:, 1] = 0.4 * wobble
        else:
            loc[:, 2] = self.z
            rot[:, :2] = 0.0

    def velocity(self, out: npt.NDArray[Any]) -> None:
        """Linear velocity (n, 3) in m/s at the last `pose` time."""
        speed = self.r * self.omega / 100.0
        out[:, 0] = -speed * self.s
        out[:, 1] = speed * self.c
        out[:, 2] = 0.0


__all__ = ["Motion", "quantize", "quantize_scalar"]
