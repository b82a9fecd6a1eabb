"""A recorded PhysicsControl as the `VehiclePhysicsControl` scenario_runner's parser builds.

Their parser sets one attribute per line of the info text (lower-cased names, the text's
units: centre of mass as printed, wheel positions divided by 100), the curves as the
engine stores them (sorted keys, `query.base.rich_curve`) and `gear_switch_time` as the
constant CARLA prints. UE5 records carry other fields: they are set under their own
names, with the wheels left empty (the file keeps them opaque).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import ModuleType

import numpy as np

from nanorec.untyped import Payload

from .ids import Engine, Kind
from .message import maps_to_var
from .metrics_types import CarlaObject
from .query.base import GEAR_SWITCH_TIME_DEFAULT, rich_curve
from .records import PhysicsControl


def physics_control(api: ModuleType, item: Mapping[str, Payload], engine: Engine) -> CarlaObject:
    """`api.VehiclePhysicsControl` from a physics record of the world tables."""
    (record,) = maps_to_var(Kind.PHYSICS_CONTROL, [item], engine)
    assert isinstance(record, PhysicsControl)
    control = api.VehiclePhysicsControl()
    head = record.head
    for name in head.dtype.names or ():
        if name == "id":
            continue
        value = head[name]
        if name == "center_of_mass":
            x, y, z = (float(v) for v in value)
            setattr(control, name, api.Vector3D(x, y, z))
        elif name in ("use_gear_autobox", "use_automatic_gears"):
            control.use_gear_autobox = bool(value)
        elif np.ndim(value) == 0:
            setattr(control, name, float(value))
    if engine is Engine.UE4:
        control.gear_switch_time = GEAR_SWITCH_TIME_DEFAULT
    for name in ("torque_curve", "steering_curve"):
        points = [(float(x), float(y)) for x, y in record.array(name).tolist()]
        setattr(control, name, [api.Vector2D(x=x, y=y) for x, y in rich_curve(points)])
    if engine is not Engine.UE4:
        control.wheels = []
        return control
    gears = record.array("forward_gears")
    control.forward_gears = [
        api.GearPhysicsControl(
            ratio=float(g["ratio"]),
            down_ratio=float(g["down_ratio"]),
            up_ratio=float(g["up_ratio"]),
        )
        for g in gears
    ]
    wheels = []
    for wheel in record.array("wheels"):
        x, y, z = (float(v) / 100 for v in wheel["position"])
        wheels.append(
            api.WheelPhysicsControl(
                tire_friction=float(wheel["tire_friction"]),
                damping_rate=float(wheel["damping_rate"]),
                max_steer_angle=float(wheel["max_steer_angle"]),
                radius=float(wheel["radius"]),
                max_brake_torque=float(wheel["max_brake_torque"]),
                max_handbrake_torque=float(wheel["max_handbrake_torque"]),
                position=api.Vector3D(x=x, y=y, z=z),
            )
        )
    control.wheels = wheels
    return control
