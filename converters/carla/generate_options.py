"""The options of one generated CARLA recording, as one typed value (issue #35: options are
typed, not a `dict[str, Any]`): what `generate` and `generate_to` check, build the scene
from, and write back into the report (the call that makes the same bytes again)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TypedDict

from nanorec.errors import UsageError

from .ids import Family

CrashMode = bool | str  # False, True / "boundary", or "mid-packet"


class _Call(TypedDict):
    family: str
    map_name: str
    date: int
    seed: int
    frames: int
    vehicles: int
    walkers: int
    traffic_lights: int
    sensors: int
    additional_data: bool
    dt: float
    crash: CrashMode
    physics_wheel_size: int | None
    bikes: int | None
    scene_lights: int


class GeneratorCall(_Call, total=False):
    """The keyword arguments of the call that wrote a recording (`target_bytes` when it was
    grown to a size), in the order the JSON summary lists them."""

    target_bytes: int


@dataclass(frozen=True)
class GeneratorOptions:
    """Everything of a `generate` call but the family, map and date: the scene's actors,
    its ticks, and how the run ends (the counts already resolved from `target_bytes`)."""

    seed: int
    frames: int
    vehicles: int
    walkers: int
    traffic_lights: int
    sensors: int
    additional_data: bool
    dt: float
    crash: CrashMode
    physics_wheel_size: int | None
    bikes: int | None
    scene_lights: int

    def check(self, family: Family) -> None:
        """Raise `UsageError` for a negative count (or no frames), a tick that is not a
        positive number, an unknown crash mode, or a wheel size the family does not have."""
        counts = (
            ("frames", self.frames),
            ("vehicles", self.vehicles),
            ("walkers", self.walkers),
            ("traffic_lights", self.traffic_lights),
            ("sensors", self.sensors),
            ("scene_lights", self.scene_lights),
        )
        for name, count in counts:
            if count < 0 or (name == "frames" and count < 1):
                raise UsageError(f"{name} must be {'positive' if name == 'frames' else '>= 0'}")
        if not (self.dt > 0 and math.isfinite(self.dt)):
            raise UsageError(f"dt must be a positive number of seconds, not {self.dt}")
        if self.crash not in (False, True, "boundary", "mid-packet"):
            raise UsageError(
                f"crash must be False, True, 'boundary' or 'mid-packet', not {self.crash!r}"
            )
        wheel = self.physics_wheel_size
        if wheel is not None and (family.name != "0.9.10-0.9.13" or wheel not in (36, 48)):
            raise UsageError(
                "physics_wheel_size (36 or 48) only applies to the '0.9.10-0.9.13' family"
            )

    def call(self, family: str, map_name: str, date: int) -> GeneratorCall:
        """The keyword arguments that make these options' recording again."""
        return {
            "family": family,
            "map_name": map_name,
            "date": date,
            "seed": self.seed,
            "frames": self.frames,
            "vehicles": self.vehicles,
            "walkers": self.walkers,
            "traffic_lights": self.traffic_lights,
            "sensors": self.sensors,
            "additional_data": self.additional_data,
            "dt": self.dt,
            "crash": self.crash,
            "physics_wheel_size": self.physics_wheel_size,
            "bikes": self.bikes,
            "scene_lights": self.scene_lights,
        }


__all__ = ["CrashMode", "GeneratorCall", "GeneratorOptions"]
