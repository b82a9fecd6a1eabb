"""Light stand-ins for the `carla` classes scenario_runner's metrics receive.

A metric written for `srunner.metrics.tools.metrics_log.MetricsLog` reads attributes
(`transform.location.x`), subtracts locations, divides vectors by a scalar and tests
`light in lights`. These classes offer the same names and operators so such metrics run
without the CARLA client installed; `carla_api()` hands out the real `carla` module
instead when it imports, so a user who has it gets the genuine classes. `vector`, `location`,
`transform` and `box` build them from recorded values, in either module's classes.
"""

from __future__ import annotations

import enum
import importlib
import math
import sys
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, TypeAlias

import numpy as np
import numpy.typing as npt

#: An object of the carla API: the real `carla` module's when it imports (no types), else
#: one of this module's stand-ins (`carla_api`); scenario_runner's metrics take either.
CarlaObject: TypeAlias = Any


@dataclass(slots=True)
class Vector3D:
    """`carla.Vector3D`: x, y, z with +, -, * and / by a scalar, as the client's."""

    x: float = 0.0
    y: float = 0.0
    z: float = 0.0

    def __add__(self, other: Vector3D) -> Vector3D:
        return type(self)(self.x + other.x, self.y + other.y, self.z + other.z)

    def __sub__(self, other: Vector3D) -> Vector3D:
        return type(self)(self.x - other.x, self.y - other.y, self.z - other.z)

    def __mul__(self, scale: float) -> Vector3D:
        return type(self)(self.x * scale, self.y * scale, self.z * scale)

    __rmul__ = __mul__

    def __truediv__(self, scale: float) -> Vector3D:
        return type(self)(self.x / scale, self.y / scale, self.z / scale)

    def length(self) -> float:
        return math.sqrt(self.x * self.x + self.y * self.y + self.z * self.z)

    def distance(self, other: Vector3D) -> float:
        return (self - other).length()


@dataclass(slots=True)
class Location(Vector3D):
    """`carla.Location`: a Vector3D in metres."""


@dataclass(slots=True)
class Vector2D:
    """`carla.Vector2D`."""

    x: float = 0.0
    y: float = 0.0


@dataclass(slots=True)
class Rotation:
    """`carla.Rotation`: degrees, in the client's argument order (pitch, yaw, roll)."""

    pitch: float = 0.0
    yaw: float = 0.0
    roll: float = 0.0

    def get_forward_vector(self) -> Vector3D:
        """As CARLA's FRotator::Vector: the unit x axis rotated by pitch and yaw."""
        pitch, yaw = math.radians(self.pitch), math.radians(self.yaw)
        return Vector3D(
            math.cos(pitch) * math.cos(yaw), math.cos(pitch) * math.sin(yaw), math.sin(pitch)
        )

    def get_right_vector(self) -> Vector3D:
        """The unit y axis rotated (CARLA's `Rotation.get_right_vector`)."""
        p, y, r = (math.radians(v) for v in (self.pitch, self.yaw, self.roll))
        return Vector3D(
            math.cos(y) * math.sin(p) * math.sin(r) - math.sin(y) * math.cos(r),
            math.sin(y) * math.sin(p) * math.sin(r) + math.cos(y) * math.cos(r),
            -math.cos(p) * math.sin(r),
        )

    def get_up_vector(self) -> Vector3D:
        """The unit z axis rotated (CARLA's `Rotation.get_up_vector`)."""
        p, y, r = (math.radians(v) for v in (self.pitch, self.yaw, self.roll))
        return Vector3D(
            -math.cos(y) * math.sin(p) * math.cos(r) - math.sin(y) * math.sin(r),
            -math.sin(y) * math.sin(p) * math.cos(r) + math.cos(y) * math.sin(r),
            math.cos(p) * math.cos(r),
        )


@dataclass(slots=True)
class Transform:
    """`carla.Transform`: a location (m) and a rotation (degrees)."""

    location: Location = field(default_factory=Location)
    rotation: Rotation = field(default_factory=Rotation)

    def get_forward_vector(self) -> Vector3D:
        return self.rotation.get_forward_vector()

    def get_right_vector(self) -> Vector3D:
        return self.rotation.get_right_vector()

    def get_up_vector(self) -> Vector3D:
        return self.rotation.get_up_vector()


@dataclass(slots=True)
class BoundingBox:
    """`carla.BoundingBox`: centre `location` and half-size `extent`, in metres."""

    location: Location = field(default_factory=Location)
    extent: Vector3D = field(default_factory=Vector3D)


@dataclass(slots=True)
class VehicleControl:
    """`carla.VehicleControl`, with the client's defaults."""

    throttle: float = 0.0
    steer: float = 0.0
    brake: float = 0.0
    hand_brake: bool = False
    reverse: bool = False
    manual_gear_shift: bool = False
    gear: int = 0


@dataclass(slots=True)
class Color:
    """`carla.Color`: 0-255 channels."""

    r: int = 0
    g: int = 0
    b: int = 0
    a: int = 255


class LightGroup(enum.IntEnum):
    """`carla.LightGroup`."""

    NONE = 0
    Vehicle = 1
    Street = 2
    Building = 3
    Other = 4


@dataclass(slots=True)
class LightState:
    """`carla.LightState`: a scene light's intensity, colour, group and on/off."""

    intensity: float = 0.0
    color: Color = field(default_factory=Color)
    group: LightGroup = LightGroup.NONE
    active: bool = False


class VehicleLightState(enum.IntFlag):
    """`carla.VehicleLightState`: the recorded light bits."""

    NONE = 0
    Position = 0x1
    LowBeam = 0x2
    HighBeam = 0x4
    Brake = 0x8
    RightBlinker = 0x10
    LeftBlinker = 0x20
    Reverse = 0x40
    Fog = 0x80
    Interior = 0x100
    Special1 = 0x200
    Special2 = 0x400
    All = 0xFFFFFFFF


class TrafficLightState(enum.IntEnum):
    """`carla.TrafficLightState`: the recorded state byte."""

    Red = 0
    Yellow = 1
    Green = 2
    Off = 3
    Unknown = 4


@dataclass(slots=True)
class GearPhysicsControl:
    """`carla.GearPhysicsControl`."""

    ratio: float = 1.0
    down_ratio: float = 0.5
    up_ratio: float = 0.65


@dataclass(slots=True)
class WheelPhysicsControl:
    """`carla.WheelPhysicsControl` (the fields the recorder keeps; position in metres)."""

    tire_friction: float = 2.0
    damping_rate: float = 0.25
    max_steer_angle: float = 70.0
    radius: float = 30.0
    max_brake_torque: float = 1500.0
    max_handbrake_torque: float = 3000.0
    position: Vector3D = field(default_factory=Vector3D)


class VehiclePhysicsControl:
    """`carla.VehiclePhysicsControl`: a plain attribute bag (the recorded fields are set)."""

    def __init__(self, **values: object) -> None:
        self.__dict__.update(values)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, VehiclePhysicsControl) and vars(self) == vars(other)

    def __repr__(self) -> str:
        return f"VehiclePhysicsControl({', '.join(f'{k}={v!r}' for k, v in vars(self).items())})"


def vector(api: ModuleType, values: npt.ArrayLike, scale: float = 1.0) -> CarlaObject:
    """`api.Vector3D` of three recorded values times `scale`."""
    x, y, z = (float(v) * scale for v in np.asarray(values, np.float64).reshape(3))
    return api.Vector3D(x=x, y=y, z=z)


def location(api: ModuleType, values: npt.ArrayLike) -> CarlaObject:
    """`api.Location` in metres of a recorded location in cm."""
    x, y, z = (float(v) / 100 for v in np.asarray(values, np.float64).reshape(3))
    return api.Location(x=x, y=y, z=z)


def transform(api: ModuleType, row: np.void) -> CarlaObject:
    """`api.Transform` of a Position record (cm; rotation stored roll, pitch, yaw)."""
    roll, pitch, yaw = (float(v) for v in row["rotation"])
    rotation = api.Rotation(pitch=pitch, yaw=yaw, roll=roll)
    return api.Transform(location(api, row["location"]), rotation)


def box(api: ModuleType, row: np.void) -> CarlaObject:
    """`api.BoundingBox` in metres of a recorded box; NaN origins and infinite extents
    (sensors) as zero, as scenario_runner's parser does."""
    origin, extent = row["origin"], row["extent"]
    centre = api.Location() if np.isnan(origin).any() else location(api, origin)
    size = api.Vector3D() if np.isinf(extent).any() else vector(api, extent, 0.01)
    return api.BoundingBox(centre, size)


def carla_api(prefer_real: bool = True) -> ModuleType:
    """The `carla` module when it imports (and `prefer_real`), else this module.

    Either way the result has the class names above (`api.Transform`, `api.Location`...).
    """
    if prefer_real:
        try:
            return importlib.import_module("carla")
        except ImportError:
            pass
    return sys.modules[__name__]
