"""scenario_runner's own `MetricsLog` on our `show_recorder_file_info` text, for the oracle.

Their parser (vendored unmodified under `reference/scenario_runner`) imports `carla`. The
real client is used when it imports; otherwise `stub_carla()` is a minimal stand-in written
here, independently of `metrics_types`, with just what their parser constructs.
"""

from __future__ import annotations

import enum
import importlib
import math
import sys
import types
from pathlib import Path
from typing import Any

import pytest

REFERENCE = Path(__file__).resolve().parent / "reference" / "scenario_runner"


class _Bag:
    """A class whose constructor takes the given fields, positionally or by name."""

    fields: tuple[str, ...] = ()
    defaults: tuple[Any, ...] = ()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        values = dict(zip(self.fields, self.defaults, strict=True))
        values.update(zip(self.fields, args, strict=False))
        values.update(kwargs)
        self.__dict__.update(values)

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and vars(self) == vars(other)


class _Vector(_Bag):
    fields = ("x", "y", "z")
    defaults = (0.0, 0.0, 0.0)

    def __sub__(self, other: _Vector) -> _Vector:
        return type(self)(self.x - other.x, self.y - other.y, self.z - other.z)

    def __truediv__(self, scale: float) -> _Vector:
        return type(self)(self.x / scale, self.y / scale, self.z / scale)


def _bag(name: str, fields: str, defaults: tuple[Any, ...], base: type = _Bag) -> type:
    return type(name, (base,), {"fields": tuple(fields.split()), "defaults": defaults})


def stub_carla() -> types.ModuleType:
    """A `carla` module with the classes `metrics_parser.py` builds."""
    module = types.ModuleType("carla")
    module.Vector3D = type("Vector3D", (_Vector,), {})  # type: ignore[attr-defined]
    module.Location = type("Location", (_Vector,), {})  # type: ignore[attr-defined]
    module.Rotation = _bag("Rotation", "pitch yaw roll", (0.0, 0.0, 0.0))  # type: ignore[attr-defined]
    module.Transform = _bag("Transform", "location rotation", (None, None))  # type: ignore[attr-defined]
    module.BoundingBox = _bag("BoundingBox", "location extent", (None, None))  # type: ignore[attr-defined]
    module.Vector2D = _bag("Vector2D", "x y", (0.0, 0.0))  # type: ignore[attr-defined]
    module.VehicleControl = _bag(  # type: ignore[attr-defined]
        "VehicleControl",
        "throttle steer brake hand_brake reverse manual_gear_shift gear",
        (0.0, 0.0, 0.0, False, False, False, 0),
    )
    module.Color = _bag("Color", "r g b a", (0, 0, 0, 255))  # type: ignore[attr-defined]
    module.LightState = _bag(  # type: ignore[attr-defined]
        "LightState", "intensity color group active", (0.0, None, 0, False)
    )
    module.GearPhysicsControl = _bag(  # type: ignore[attr-defined]
        "GearPhysicsControl", "ratio down_ratio up_ratio", (1.0, 0.5, 0.65)
    )
    module.WheelPhysicsControl = _bag(  # type: ignore[attr-defined]
        "WheelPhysicsControl",
        "tire_friction damping_rate max_steer_angle radius max_brake_torque"
        " max_handbrake_torque position",
        (2.0, 0.25, 70.0, 30.0, 1500.0, 3000.0, None),
    )
    module.VehiclePhysicsControl = _bag("VehiclePhysicsControl", "", ())  # type: ignore[attr-defined]
    module.LightGroup = enum.IntEnum("LightGroup", "NONE Vehicle Street Building Other", start=0)  # type: ignore[attr-defined]
    module.TrafficLightState = enum.IntEnum(  # type: ignore[attr-defined]
        "TrafficLightState", "Red Yellow Green Off Unknown", start=0
    )
    names = "Position LowBeam HighBeam Brake RightBlinker LeftBlinker Reverse Fog Interior"
    bits = {"NONE": 0} | {n: 1 << i for i, n in enumerate((names + " Special1 Special2").split())}
    module.VehicleLightState = enum.IntFlag("VehicleLightState", bits)  # type: ignore[attr-defined]
    return module


def load_reference(
    monkeypatch: pytest.MonkeyPatch, prefer_real: bool = True
) -> tuple[type, types.ModuleType]:
    """Their `MetricsLog` class and the `carla` module it was imported with.

    Puts `reference/scenario_runner` on sys.path and, unless the real client imports (and
    `prefer_real`), a stub `carla` in sys.modules, both undone by `monkeypatch`.
    """
    carla: types.ModuleType | None = None
    if prefer_real:
        try:
            carla = importlib.import_module("carla")
        except ImportError:
            carla = None
    if carla is None:
        carla = stub_carla()
    monkeypatch.setitem(sys.modules, "carla", carla)
    monkeypatch.syspath_prepend(str(REFERENCE))
    for name in [n for n in sys.modules if n == "srunner" or n.startswith("srunner.")]:
        monkeypatch.delitem(sys.modules, name)  # their parser binds `carla` at import
    module = importlib.import_module("srunner.metrics.tools.metrics_log")
    return module.MetricsLog, carla


# Sections CARLA added after their parser was written (0.9.15's doors, 0.9.16's walker
# bones, 2026's weather). Their parser reads a frame's sections in a fixed order and stops
# at the first it does not know, so on a 0.9.16 text it sees no positions at all.
UNKNOWN_SECTIONS = (" Vehicle door animations: ", " Walkers Bones: ", " Weathers: ")


def their_text(text: str) -> str:
    """`text` without the sections their parser does not know (header and entry lines)."""
    kept: list[str] = []
    skipping = False
    for line in text.split("\n"):
        if line.startswith(UNKNOWN_SECTIONS):
            skipping = True
            continue
        if skipping and (line.startswith("  ") or line.startswith("wheel #")):
            continue
        skipping = False
        kept.append(line)
    return "\n".join(kept)


# ------------------------------------------------------------------- comparing answers

_ATTRS = [
    "x",
    "y",
    "z",
    "pitch",
    "yaw",
    "roll",
    "location",
    "rotation",
    "extent",
    "throttle",
    "steer",
    "brake",
    "hand_brake",
    "reverse",
    "manual_gear_shift",
    "gear",
    "intensity",
    "color",
    "r",
    "g",
    "b",
    "group",
    "active",
    "ratio",
    "down_ratio",
    "up_ratio",
    "tire_friction",
    "damping_rate",
    "max_steer_angle",
    "radius",
    "max_brake_torque",
    "max_handbrake_torque",
    "position",
]
PHYSICS_ATTRS = [
    "max_rpm",
    "moi",
    "damping_rate_full_throttle",
    "damping_rate_zero_throttle_clutch_engaged",
    "damping_rate_zero_throttle_clutch_disengaged",
    "use_gear_autobox",
    "gear_switch_time",
    "clutch_strength",
    "final_ratio",
    "mass",
    "drag_coefficient",
    "center_of_mass",
    "torque_curve",
    "steering_curve",
    "forward_gears",
    "wheels",
]


def plain(value: Any) -> Any:
    """A value as plain Python (floats, tuples, dicts), whatever classes built it."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, enum.Enum) or type(value).__name__ in (
        "TrafficLightState",
        "VehicleLightState",
        "LightGroup",
    ):
        return int(value)
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, dict):
        return {plain(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if type(value).__name__ == "VehiclePhysicsControl":
        return {name: plain(getattr(value, name)) for name in PHYSICS_ATTRS}
    found = {name: plain(getattr(value, name)) for name in _ATTRS if hasattr(value, name)}
    if not found:
        raise TypeError(f"cannot compare a {type(value).__name__}")
    return found


def close(ours: Any, theirs: Any, rel: float = 2e-5, where: str = "") -> None:
    """Assert `plain` values equal, floats within `rel` (their text has 6 digits)."""
    if isinstance(ours, float) and isinstance(theirs, float):
        if math.isnan(ours) and math.isnan(theirs):
            return
        assert math.isclose(ours, theirs, rel_tol=rel, abs_tol=1e-9), (where, ours, theirs)
    elif isinstance(ours, dict) and isinstance(theirs, dict):
        assert ours.keys() == theirs.keys(), (where, sorted(ours), sorted(theirs))
        for key in ours:
            close(ours[key], theirs[key], rel, f"{where}.{key}")
    elif isinstance(ours, list) and isinstance(theirs, list):
        assert len(ours) == len(theirs), (where, ours, theirs)
        for i, (a, b) in enumerate(zip(ours, theirs, strict=True)):
            close(a, b, rel, f"{where}[{i}]")
    else:
        assert ours == theirs, (where, ours, theirs)
