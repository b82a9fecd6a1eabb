"""The records a writer builds rather than copies: row layouts and a default PhysicsControl.

Two variable-length kinds (AnimVehicleWheels, WalkerBones) have a fixed layout once the
wheel count or the skeleton is known: `wheels_dtype` and `bones_dtype` give it, so that a
bulk writer fills whole numpy arrays and hands their bytes to `RecordingWriter.add_raw`.
A PhysicsControl is a vehicle's whole physics, which trajectory data never has:
`default_physics_control` makes a plausible one in the family's layout.

Units are the file's: cm for positions and radii, kg, rpm.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from nanorec.errors import UnsupportedError, UsageError

from .ids import Engine, Family, Kind
from .records import (
    CURVE_DTYPE,
    GEAR_DTYPE,
    PHYSICS_UE4_DTYPE,
    PHYSICS_UE5_DTYPE,
    PHYSICS_WHEEL_DTYPES,
    UE5_WHEEL_SIZE_GUESS,
    WHEEL_ANIM_DTYPE,
    PhysicsControl,
)

__all__ = ["bones_dtype", "default_physics_control", "wheels_dtype"]


def wheels_dtype(wheels: int) -> np.dtype[np.void]:
    """Row dtype of one AnimVehicleWheels record for vehicles with `wheels` wheels."""
    return np.dtype([("id", "<u4"), ("count", "<u4"), ("wheels", WHEEL_ANIM_DTYPE, (wheels,))])


def bones_dtype(names: Sequence[str], engine: Engine) -> np.dtype[np.void]:
    """Row dtype of one WalkerBones record for a skeleton with bones `names`.

    Fields: `id`, `count`, then per bone i `n{i}` (name length), `s{i}` (UTF-8 name),
    `l{i}` (location) and `r{i}` (rotation) vectors of the engine's width.
    """
    vec = "<f4" if engine is Engine.UE4 else "<f8"
    fields: list[Any] = [("id", "<u4"), ("count", "<u2")]
    for i, name in enumerate(names):
        size = len(name.encode("utf-8", "surrogateescape"))
        fields += [
            (f"n{i}", "<u2"),
            (f"s{i}", f"S{size}" if size else "V0"),
            (f"l{i}", vec, (3,)),
            (f"r{i}", vec, (3,)),
        ]
    return np.dtype(fields)


def default_physics_control(
    family: Family,
    actor_id: int,
    *,
    wheels: int = 4,
    wheel_size: int | None = None,
    mass: float = 1845.0,
    max_rpm: float = 15000.0,
    seed: int = 0,
) -> PhysicsControl:
    """A plausible PhysicsControl record (mass in kg, rpm, wheel radius and position in cm).

    UE4 families get the 53-byte head and `wheel_size`-byte wheels (36 or 48; default the
    family's). UE5 families get the 111-byte head and opaque 208-byte wheel elements filled
    with deterministic bytes derived from `seed` and `actor_id`, because the real elements
    are raw memory (spec §5.15). Raises UnsupportedError for a family without physics
    control and ValueError for a bad wheel size.
    """
    if Kind.PHYSICS_CONTROL not in family.kinds:
        raise UnsupportedError(f"CARLA family {family.name!r} has no physics_control packet")
    torque = np.array([(0.0, 400.0), (1890.0, 500.0), (5730.0, 400.0)], dtype=CURVE_DTYPE)
    steering = np.array([(0.0, 1.0), (20.0, 0.9), (60.0, 0.8), (120.0, 0.7)], dtype=CURVE_DTYPE)
    if wheels == 2:  # a bike: front and back on the centre line
        positions = [(140.0, 0.0, 30.0), (-140.0, 0.0, 30.0)]
    else:  # front axle first, left then right, as CARLA lists four-wheelers
        axles = [140.0 - 280.0 * (i // 2) / max(1, (wheels - 1) // 2) for i in range(wheels)]
        positions = [(x, -80.0 if i % 2 == 0 else 80.0, 30.0) for i, x in enumerate(axles)]
    if family.engine is Engine.UE4:
        size = wheel_size or family.physics_wheel_size or 48
        if size not in PHYSICS_WHEEL_DTYPES:
            raise UsageError(f"UE4 physics wheel records are 36 or 48 bytes, not {size}")
        head = np.zeros(1, dtype=PHYSICS_UE4_DTYPE)[0]
        for name, value in (
            ("id", actor_id),
            ("max_rpm", max_rpm),
            ("moi", 1.0),
            ("damping_rate_full_throttle", 0.15),
            ("damping_rate_zero_throttle_clutch_engaged", 2.0),
            ("damping_rate_zero_throttle_clutch_disengaged", 0.35),
            ("use_gear_autobox", 1),
            ("clutch_strength", 10.0),
            ("final_ratio", 4.0),
            ("mass", mass),
            ("drag_coefficient", 0.3),
            ("center_of_mass", (0.0, 0.0, -0.3)),
        ):
            head[name] = value
        gears = np.array(
            [(2.85, 0.15, 0.65), (1.75, 0.25, 0.75), (1.3, 0.35, 0.8), (1.0, 0.45, 0.85)],
            dtype=GEAR_DTYPE,
        )
        wheel_rows = np.zeros(wheels, dtype=PHYSICS_WHEEL_DTYPES[size])
        wheel_rows["tire_friction"] = 3.5
        wheel_rows["damping_rate"] = 0.25
        wheel_rows["max_steer_angle"] = [70.0 if p[0] > 0 else 0.0 for p in positions]
        wheel_rows["radius"] = 37.0
        wheel_rows["max_brake_torque"] = 1500.0
        wheel_rows["max_handbrake_torque"] = [0.0 if p[0] > 0 else 3000.0 for p in positions]
        if size == 48:
            wheel_rows["lat_stiff_max_load"] = 3.0
            wheel_rows["lat_stiff_value"] = 20.0
            wheel_rows["long_stiff_value"] = 3000.0
        wheel_rows["position"] = positions
        arrays: tuple[tuple[str, npt.NDArray[Any]], ...] = (
            ("torque_curve", torque),
            ("forward_gears", gears),
            ("steering_curve", steering),
            ("wheels", wheel_rows),
        )
        return PhysicsControl(head, arrays)
    if wheel_size is not None and wheel_size <= 0:
        raise UsageError(f"UE5 wheel elements need a positive size, not {wheel_size}")
    size = wheel_size or UE5_WHEEL_SIZE_GUESS
    head = np.zeros(1, dtype=PHYSICS_UE5_DTYPE)[0]
    for name, value in (
        ("id", actor_id),
        ("max_torque", 300.0),
        ("max_rpm", max_rpm),
        ("idle_rpm", 900.0),
        ("brake_effect", 1.0),
        ("rev_up_moi", 1.0),
        ("rev_down_rate", 600.0),
        ("differential_type", 0),
        ("front_rear_split", 0.5),
        ("use_automatic_gears", 1),
        ("gear_change_time", 0.5),
        ("final_ratio", 4.0),
        ("change_up_rpm", 4500.0),
        ("change_down_rpm", 2000.0),
        ("transmission_efficiency", 0.9),
        ("mass", mass),
        ("drag_coefficient", 0.3),
        ("center_of_mass", (0.0, 0.0, -0.3)),
        ("chassis_width", 180.0),
        ("chassis_height", 140.0),
        ("downforce_coefficient", 0.3),
        ("drag_area", 0.0),
        ("inertia_tensor_scale", (1.0, 1.0, 1.0)),
        ("sleep_threshold", 10.0),
        ("sleep_slope_limit", 0.866),
        ("use_sweep_wheel_collision", 0),
    ):
        head[name] = value
    # numpy keeps raw bit-generator streams stable across versions (not Generator methods)
    bits = np.random.PCG64([seed, actor_id])
    words = np.asarray(bits.random_raw((wheels * size + 7) // 8), dtype="<u8")
    raw = np.frombuffer(words.tobytes()[: wheels * size], dtype=np.uint8).reshape(wheels, size)
    arrays = (
        ("torque_curve", torque),
        ("forward_gear_ratios", np.array([4.25, 2.52, 1.66, 1.22, 1.0], dtype="<f4")),
        ("reverse_gear_ratios", np.array([4.04], dtype="<f4")),
        ("steering_curve", steering),
        ("wheels", raw),
    )
    return PhysicsControl(head, arrays)
