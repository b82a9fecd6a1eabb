"""Synthetic CARLA recordings for any release family: our own test data and benchmark load.

Real recorder files are few, small, and cover only some releases (none from UE5 or from
2026 builds). This generator drives `RecordingWriter` through a plausible street scene —
the spectator, traffic lights cycling red/green/yellow, vehicles driving smooth circles
with brakes and blinkers, walkers, sensors attached to vehicles, spawns and destroys
mid-run, collisions, scene-light, door and weather changes, and every additional-data
packet the family has — so each reader path sees every packet kind its release writes.

Everything is a function of the arguments: the same call gives the same bytes on every
machine (the file date is a parameter; trigonometric results are rounded to 2^-20 before
use so that last-bit differences between maths libraries cannot leak into the file).
Frames are computed with numpy over all actors at once, which is what makes gigabyte
benchmark files take seconds (`generate_to(..., target_bytes=...)`).

Units as in the files: cm, degrees (roll, pitch, yaw), seconds, m/s for kinematics.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import math
import os
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, BinaryIO

import numpy as np
import numpy.typing as npt

from nanorec.errors import UsageError
from nanorec.untyped import JsonObject

from .frame_writer import DEFAULT_DATE, WriterStats
from .generate_options import CrashMode, GeneratorCall, GeneratorOptions
from .geometry import wrap_degrees
from .ids import (
    ActorType,
    AttributeType,
    Engine,
    Family,
    Kind,
    TrafficLightState,
)
from .ids import (
    family as family_named,
)
from .records import PhysicsControl, fixed_dtype
from .rows import bones_dtype, default_physics_control, wheels_dtype
from .writer import ENVIRONMENT_ID, RecordingWriter

__all__ = ["GenerationReport", "generate", "generate_to", "main", "summary"]

_B, _I, _F, _S, _RGB = (
    int(AttributeType.BOOL),
    int(AttributeType.INT),
    int(AttributeType.FLOAT),
    int(AttributeType.STRING),
    int(AttributeType.RGB_COLOR),
)
# (blueprint id, blueprint uid, base_type, special_type)
_CARS = (
    ("vehicle.tesla.model3", 24, "car", "electric"),
    ("vehicle.toyota.prius", 15, "car", "electric"),
    ("vehicle.audi.tt", 2, "car", ""),
    ("vehicle.lincoln.mkz_2020", 19, "car", ""),
    ("vehicle.nissan.patrol", 14, "car", ""),
    ("vehicle.mini.cooper_s", 11, "car", ""),
    ("vehicle.dodge.charger_police", 7, "car", "emergency"),
    ("vehicle.mercedes.coupe", 12, "car", ""),
)
_BIKE = ("vehicle.yamaha.yzf", 33, "motorcycle", "")
_COLORS = ("255,0,0", "17,37,103", "183,187,162", "255,241,0", "0,0,0", "140,0,0")
_BONES = (
    "crl_root",
    "crl_hips__C",
    "crl_spine__C",
    "crl_neck__C",
    "crl_Head__C",
    "crl_arm__L",
    "crl_arm__R",
    "crl_thigh__L",
    "crl_thigh__R",
    "crl_leg__L",
    "crl_leg__R",
    "crl_foot__L",
)
# Bone rest offsets (cm) and swing amplitudes (degrees of pitch) for a walking cycle.
_BONE_REST = np.array(
    [
        (0, 0, 0),
        (0, 0, 95),
        (0, 0, 20),
        (0, 0, 40),
        (0, 0, 10),
        (0, -18, -5),
        (0, 18, -5),
        (0, -9, -5),
        (0, 9, -5),
        (0, 0, -45),
        (0, 0, -45),
        (0, 0, -42),
    ],
    dtype=np.float64,
)
_BONE_SWING = np.array([0, 0, 2, 1, 1, -25, 25, 25, -25, 15, -15, 5], dtype=np.float64)
_GREEN, _YELLOW, _RED = 6.0, 2.0, 8.0  # traffic-light phase seconds (cycle 16 s)
_Q = float(2**20)

_NEVER = 1 << 62  # a frame number never reached
_SMALL_TARGET = 16 << 20  # below this, `target_bytes` keeps the small-scene defaults


def _q(values: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """Round to a multiple of 2^-20 so libm/SIMD last-bit differences cannot change bytes."""
    return np.round(values * _Q) / _Q


def _qs(value: float) -> float:
    return round(value * _Q) / _Q


class _Random:
    """Uniform numbers straight from PCG64's raw stream.

    numpy promises stable raw bit-generator streams across versions, not stable
    `Generator` distributions; committed samples must not change with numpy.
    """

    def __init__(self, seed: int | Sequence[int]) -> None:
        self._bits = np.random.PCG64(seed)

    def random(self, n: int) -> npt.NDArray[np.float64]:
        """n floats in [0, 1) with 53 random bits each."""
        raw = np.asarray(self._bits.random_raw(n), dtype=np.uint64)
        values: npt.NDArray[np.float64] = (raw >> np.uint64(11)).astype(np.float64)
        return values * (1.0 / (1 << 53))

    def uniform(self, low: float, high: float, n: int) -> npt.NDArray[np.float64]:
        return low + (high - low) * self.random(n)

    def integers(self, high: int, n: int) -> npt.NDArray[np.int64]:
        """n integers in [0, high) (modulo bias is irrelevant here)."""
        raw = np.asarray(self._bits.random_raw(n), dtype=np.uint64)
        values: npt.NDArray[np.int64] = (raw % np.uint64(high)).astype(np.int64)
        return values


@dataclass(frozen=True)
class _Era:
    """Behaviour that changed between releases inside what the generator writes."""

    sensor_type: int  # 0 before the 0.9.12 actor registry, 5 after
    environment_id: int  # 0 before ~0.9.13, 0xFFFFFFFF after
    spectator_positions: bool  # Position for type "Other" actors since ~0.9.10
    attribute_style: str  # "0.9.6", "0.9.13" or "0.9.15" attribute lists
    animate_wheels: bool  # AnimVehicleWheels / AnimBiker carry records (UE4 0.9.15+)


def _era(family: Family, physics_wheel_size: int | None) -> _Era:
    old = family.name == "0.9.4-0.9.9"
    legacy_0910 = family.name == "0.9.10-0.9.13" and physics_wheel_size == 36
    style = "0.9.6" if old else "0.9.15" if Kind.VISUAL_TIME in family.kinds else "0.9.13"
    return _Era(
        sensor_type=int(ActorType.OTHER if old or legacy_0910 else ActorType.SENSOR),
        environment_id=0 if old or legacy_0910 else ENVIRONMENT_ID,
        spectator_positions=not old,
        attribute_style=style,
        animate_wheels=family.engine is Engine.UE4 and Kind.ANIM_BIKER in family.kinds,
    )


@dataclass
class GenerationReport:
    """What `generate_to` wrote: the writer's statistics and the call that made it."""

    family: str
    map_name: str
    date: int
    options: GeneratorCall
    stats: WriterStats
    seconds: float  # wall-clock generation time

    @property
    def frames(self) -> int:
        return self.stats.frames

    @property
    def size(self) -> int:
        return self.stats.size


class _Scene:
    """All actors of one generated recording and their motion, as numpy arrays."""

    def __init__(
        self,
        family: Family,
        *,
        seed: int,
        frames: int,
        vehicles: int,
        walkers: int,
        traffic_lights: int,
        sensors: int,
        bikes: int,
        scene_lights: int,
        additional_data: bool,
        dt: float,
        physics_wheel_size: int | None,
    ) -> None:
        self.family = family
        self.era = _era(family, physics_wheel_size)
        self.kinds = frozenset(family.kinds)
        self.additional = additional_data
        self.physics_wheel_size = physics_wheel_size
        self.seed = seed
        self.dt = dt
        rng = _Random(seed)
        sensors = sensors if vehicles else 0  # sensors ride on vehicles

        # ---- ids, in spawn order: spectator, lights, vehicles, sensors, walkers, late ones
        self.spectator_id = 1
        next_id = 2
        self.tl_ids = np.arange(next_id, next_id + traffic_lights, dtype=np.int64)
        next_id += traffic_lights
        late = 1 if vehicles >= 1 else 0
        n_veh = vehicles + late
        self.veh_ids = np.zeros(n_veh, dtype=np.int64)
        self.veh_ids[:vehicles] = np.arange(next_id, next_id + vehicles)
        next_id += vehicles
        self.sensor_ids = np.arange(next_id, next_id + sensors, dtype=np.int64)
        next_id += sensors
        self.walker_ids = np.arange(next_id, next_id + walkers, dtype=np.int64)
        next_id += walkers
        late_sensor = late and sensors > 0
        if late:
            self.veh_ids[vehicles] = next_id
            next_id += 1
        self.late_sensor_id = next_id if late_sensor else None

        # ---- schedule (frame numbers; beyond `frames` means "never")
        def at(fraction: float) -> int:
            return max(2, int(frames * fraction))

        self.f_spawn = at(0.3)
        self.f_destroy = at(0.7)
        self.f_collide = at(0.45)
        self.f_env_hit = at(0.55)
        self.f_lights = at(0.4)
        self.f_physics = at(0.5)
        self.f_weather = at(0.5)
        self.f_tl_times = at(0.6)
        self.f_door_open = at(0.25)
        self.f_door_close = self.f_door_open + max(1, round(1.0 / dt))

        # ---- vehicles: circles (centre, radius, signed angular speed, phase)
        self.n_initial = vehicles
        self.veh_bike = np.zeros(n_veh, dtype=bool)
        if self.era.animate_wheels and bikes:
            self.veh_bike[max(1, vehicles - bikes) : vehicles] = True
        self.veh_cx = _q(rng.uniform(-9000.0, 9000.0, n_veh))
        self.veh_cy = _q(rng.uniform(-9000.0, 9000.0, n_veh))
        self.veh_r = _q(rng.uniform(1500.0, 5000.0, n_veh))
        self.veh_speed = _q(rng.uniform(500.0, 1400.0, n_veh))  # cm/s
        direction = np.where(rng.random(n_veh) < 0.5, -1.0, 1.0)
        self.veh_omega = direction * self.veh_speed / self.veh_r  # rad/s, + = left turn
        self.veh_phase = _q(rng.uniform(0.0, 2 * math.pi, n_veh))
        self.veh_brake_phase = _q(rng.uniform(0.0, 2 * math.pi, n_veh))
        self.veh_z = _q(rng.uniform(0.0, 40.0, n_veh))
        self.veh_lights_on = rng.random(n_veh) < 0.5
        self.veh_signals = rng.random(n_veh) < 0.5
        # steering from the bicycle model, as a fraction of a 70° maximum
        wheelbase = np.where(self.veh_bike, 140.0, 280.0)
        self.veh_steer = _q(
            np.array([math.atan(b / r) for b, r in zip(wheelbase, self.veh_r, strict=True)])
            * direction
            / math.radians(70.0)
        )
        self.veh_gear = 1 + (self.veh_speed > 700).astype(np.int32) + (self.veh_speed > 1100)
        self.veh_model = rng.integers(len(_CARS), n_veh)
        self.veh_color = rng.integers(len(_COLORS), n_veh)
        self.veh_alive_from = np.full(n_veh, 1)
        if late:
            self.veh_alive_from[vehicles] = self.f_spawn
        self.veh_alive_to = np.full(n_veh, _NEVER)  # first frame without it
        non_hero_cars = [i for i in range(1, vehicles) if not self.veh_bike[i]]
        self.victim = non_hero_cars[-1] if non_hero_cars else None
        if self.victim is not None:
            self.veh_alive_to[self.victim] = self.f_destroy

        # ---- sensors: alternately a collision sensor and an RGB camera, on vehicles
        self.sensor_kind = ["collision" if k % 2 == 0 else "camera" for k in range(sensors)]
        self.sensor_parent = np.array(
            [self.veh_ids[(k // 2) % vehicles] if vehicles else 0 for k in range(sensors)],
            dtype=np.int64,
        )

        # ---- walkers: small circles at walking speed
        self.walker_cx = _q(rng.uniform(-9000.0, 9000.0, walkers))
        self.walker_cy = _q(rng.uniform(-9000.0, 9000.0, walkers))
        self.walker_r = _q(rng.uniform(300.0, 900.0, walkers))
        self.walker_speed = _q(rng.uniform(100.0, 160.0, walkers))  # cm/s
        wdir = np.where(rng.random(walkers) < 0.5, -1.0, 1.0)
        self.walker_omega = wdir * self.walker_speed / self.walker_r
        self.walker_phase = _q(rng.uniform(0.0, 2 * math.pi, walkers))
        self.walker_alive_to = np.full(walkers, _NEVER)
        if walkers >= 2:
            self.walker_alive_to[0] = self.f_destroy

        # ---- traffic lights: groups of four around intersections, opposite phases
        groups = max(1, (traffic_lights + 3) // 4)
        ix = _q(rng.uniform(-8000.0, 8000.0, groups))
        iy = _q(rng.uniform(-8000.0, 8000.0, groups))
        arm = np.arange(traffic_lights) % 4
        angle = arm * 90.0
        group = np.arange(traffic_lights) // 4
        unit = np.array([(1.0, 0.0), (0.0, 1.0), (-1.0, 0.0), (0.0, -1.0)])[arm]
        self.tl_loc = np.zeros((traffic_lights, 3))
        self.tl_loc[:, 0] = ix[group] + 1200.0 * unit[:, 0]
        self.tl_loc[:, 1] = iy[group] + 1200.0 * unit[:, 1]
        self.tl_rot = np.zeros((traffic_lights, 3))
        self.tl_rot[:, 2] = wrap_degrees(angle + 180.0)
        self.tl_offset = np.where(arm % 2 == 0, 0.0, _GREEN + _YELLOW) + group * 1.5
        self.tl_green = np.full(traffic_lights, _GREEN)
        self.tl_yellow = np.full(traffic_lights, _YELLOW)
        self.tl_red = np.full(traffic_lights, _RED)

        # ---- scene lights (street lamps) and the spectator
        self.n_scene_lights = scene_lights if Kind.SCENE_LIGHT in self.kinds else 0
        self.spectator_loc = (_qs(float(ix[0])) if traffic_lights else 0.0, 0.0, 1500.0)
        self.visual_base = 100.0 + 0.5 * (seed % 16)

        self.collision_counter = 0

    # ------------------------------------------------------------------ attributes

    def vehicle_attributes(self, i: int) -> list[tuple[int, str, str]]:
        bike = bool(self.veh_bike[i])
        blueprint, _uid, base_type, special = _BIKE if bike else _CARS[int(self.veh_model[i])]
        role = "hero" if i == 0 else "autopilot"
        color = _COLORS[int(self.veh_color[i])]
        wheels = "2" if bike else "4"
        style = self.era.attribute_style
        if style == "0.9.6":
            return [
                (_I, "number_of_wheels", wheels),
                (_B, "sticky_control", "true"),
                (_S, "object_type", ""),
                (_RGB, "color", color),
                (_S, "role_name", role),
            ]
        if style == "0.9.13":
            return [
                (_S, "role_name", role),
                (_B, "sticky_control", "true"),
                (_RGB, "color", color),
                (_I, "generation", "2"),
                (_S, "object_type", ""),
                (_I, "number_of_wheels", wheels),
            ]
        return [
            (_B, "has_lights", "true"),
            (_I, "generation", "2"),
            (_B, "has_dynamic_doors", "false" if bike else "true"),
            (_I, "number_of_wheels", wheels),
            (_S, "base_type", base_type),
            (_S, "special_type", special),
            (_S, "object_type", ""),
            (_B, "terramechanics", "false"),
            (_B, "sticky_control", "true"),
            (_RGB, "color", color),
            (_S, "ros_name", blueprint),
            (_S, "role_name", role),
        ]

    def sensor_spec(
        self, kind: str
    ) -> tuple[
        str,
        int,
        list[tuple[int, str, str]],
        tuple[tuple[float, float, float], tuple[float, float, float]],
    ]:
        ros = self.era.attribute_style == "0.9.15"
        if kind == "collision":
            attrs = [(_S, "role_name", "front")]
            if ros:
                attrs.insert(0, (_S, "ros_name", "sensor.other.collision"))
            return "sensor.other.collision", 31, attrs, ((0.0, 0.0, 0.0), (0.0, 0.0, 0.0))
        attrs = [
            (_F, "fov", "90.0"),
            (_I, "image_size_x", "800"),
            (_I, "image_size_y", "600"),
            (_F, "sensor_tick", "0.0"),
            (_B, "enable_postprocess_effects", "true"),
            (_F, "gamma", "2.2"),
        ]
        if ros:
            attrs.append((_S, "ros_name", "sensor.camera.rgb"))
        attrs.append((_S, "role_name", "front"))
        return "sensor.camera.rgb", 55, attrs, ((-550.0, 0.0, 280.0), (0.0, -15.0, 0.0))

    # -------------------------------------------------------------------- motion

    def vehicle_motion(self, idx: npt.NDArray[np.int64]) -> _Motion:
        return _Motion(
            self.veh_cx[idx],
            self.veh_cy[idx],
            self.veh_r[idx],
            self.veh_z[idx],
            self.veh_phase[idx],
            self.veh_omega[idx],
            vehicle=True,
        )

    def walker_motion(self, idx: npt.NDArray[np.int64]) -> _Motion:
        return _Motion(
            self.walker_cx[idx],
            self.walker_cy[idx],
            self.walker_r[idx],
            np.full(len(idx), 95.0),
            self.walker_phase[idx],
            self.walker_omega[idx],
            vehicle=False,
        )


class _Motion:
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
        c = self.c = _q(np.cos(theta))
        s = self.s = _q(np.sin(theta))
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


class _Layout:
    """Preallocated record arrays for one set of live actors (rebuilt on spawn/destroy)."""

    def __init__(self, scene: _Scene, veh: npt.NDArray[np.int64], wlk: npt.NDArray[np.int64]):
        engine = scene.family.engine
        kinds = scene.kinds
        self.veh = veh
        self.wlk = wlk
        self.cars = veh[~scene.veh_bike[veh]]
        self.bikes = veh[scene.veh_bike[veh]]
        spectator = 1 if scene.era.spectator_positions else 0
        self.spectator = spectator
        n_pos = spectator + len(veh) + len(wlk)
        self.pos = np.zeros(n_pos, dtype=fixed_dtype(Kind.POSITION, engine))
        ids = [scene.spectator_id] if spectator else []
        self.pos["id"] = np.concatenate([ids, scene.veh_ids[veh], scene.walker_ids[wlk]])
        if spectator:
            self.pos["location"][0] = scene.spectator_loc
            self.pos["rotation"][0] = (0.0, -30.0, 45.0)
        k, nv = spectator, len(veh)
        self.vloc = self.pos["location"][k : k + nv]
        self.vrot = self.pos["rotation"][k : k + nv]
        self.wloc = self.pos["location"][k + nv :]
        self.wrot = self.pos["rotation"][k + nv :]
        self.vmotion = scene.vehicle_motion(veh)
        self.wmotion = scene.walker_motion(wlk)
        self.anim = np.zeros(len(veh), dtype=fixed_dtype(Kind.ANIM_VEHICLE, engine))
        self.anim["id"] = scene.veh_ids[veh]
        self.anim["gear"] = scene.veh_gear[veh]
        self.walk = np.zeros(len(wlk), dtype=fixed_dtype(Kind.ANIM_WALKER, engine))
        self.walk["id"] = scene.walker_ids[wlk]
        self.walk["speed"] = scene.walker_speed[wlk]
        self.state = np.zeros(len(scene.tl_ids), dtype=fixed_dtype(Kind.STATE, engine))
        self.state["id"] = scene.tl_ids
        if Kind.VEHICLE_LIGHT in kinds:
            self.lights = np.zeros(len(veh), dtype=fixed_dtype(Kind.VEHICLE_LIGHT, engine))
            self.lights["id"] = scene.veh_ids[veh]
        if scene.era.animate_wheels:
            self.car_wheels = np.zeros(len(self.cars), dtype=wheels_dtype(4))
            self.car_wheels["id"] = scene.veh_ids[self.cars]
            self.car_wheels["count"] = 4
            self.car_wheels["wheels"]["location"] = (0, 1, 2, 3)
            self.bike_wheels = np.zeros(len(self.bikes), dtype=wheels_dtype(2))
            self.bike_wheels["id"] = scene.veh_ids[self.bikes]
            self.bike_wheels["count"] = 2
            self.bike_wheels["wheels"]["location"] = (0, 1)
            self.biker = np.zeros(len(self.bikes), dtype=fixed_dtype(Kind.ANIM_BIKER, engine))
            self.biker["id"] = scene.veh_ids[self.bikes]
            self.biker["forward_speed"] = scene.veh_speed[self.bikes]
        if scene.additional and Kind.KINEMATICS in kinds:
            self.kin = np.zeros(len(veh) + len(wlk), dtype=fixed_dtype(Kind.KINEMATICS, engine))
            self.kin["id"] = np.concatenate([scene.veh_ids[veh], scene.walker_ids[wlk]])
            self.kin["angular_velocity"][:, 2] = np.degrees(
                np.concatenate([scene.veh_omega[veh], scene.walker_omega[wlk]])
            )
        if scene.additional and Kind.WALKER_BONES in kinds:
            self.bones = np.zeros(len(wlk), dtype=bones_dtype(_BONES, engine))
            self.bones["id"] = scene.walker_ids[wlk]
            self.bones["count"] = len(_BONES)
            for i, name in enumerate(_BONES):
                self.bones[f"n{i}"] = len(name)
                self.bones[f"s{i}"] = name.encode("ascii")
                self.bones[f"l{i}"] = _BONE_REST[i]


def _run(
    writer: RecordingWriter,
    scene: _Scene,
    *,
    frames: int,
    target_bytes: int | None,
    crash: CrashMode,
    frame_sizes: list[int] | None = None,
) -> None:
    """Write frames 1.. until `frames` are done and the file holds `target_bytes`."""
    kinds = scene.kinds
    changes = {1, scene.f_spawn, scene.f_destroy}
    layout: _Layout | None = None
    veh = wlk = np.zeros(0, dtype=np.int64)
    frame_bytes = 0
    f = 0
    while True:
        f += 1
        size_before = writer.stats.size
        last = f >= frames and (target_bytes is None or size_before + frame_bytes >= target_bytes)
        writer.begin_frame(delta=scene.dt)
        t = writer.elapsed
        if Kind.VISUAL_TIME in kinds:
            writer.visual_time(scene.visual_base + t)
        if layout is None or f in changes:
            veh = np.flatnonzero((scene.veh_alive_from <= f) & (f < scene.veh_alive_to))
            wlk = np.flatnonzero(f < scene.walker_alive_to)
            layout = _Layout(scene, veh, wlk)

        _events(writer, scene, f)

        _snapshot_packets(writer, scene, layout, veh, wlk, f, t)

        if last:
            if crash:
                writer.simulate_crash(mid_packet=crash == "mid-packet")
            else:
                writer.end_frame()
            return
        writer.end_frame()
        frame_bytes = writer.stats.size - size_before
        if frame_sizes is not None:
            frame_sizes.append(frame_bytes)


def _snapshot_packets(
    writer: RecordingWriter,
    scene: _Scene,
    layout: _Layout,
    veh: npt.NDArray[np.int64],
    wlk: npt.NDArray[np.int64],
    f: int,
    t: float,
) -> None:
    """Frame `f`'s per-frame packets at time `t`, in CARLA's order."""
    kinds = scene.kinds
    layout.vmotion.pose(t, layout.vloc, layout.vrot)
    layout.wmotion.pose(t, layout.wloc, layout.wrot)
    writer.add_records(Kind.POSITION, layout.pos)
    if len(scene.tl_ids):
        _traffic_lights(writer, scene, layout, t)
    brake_wave = _q(np.sin(0.5 * t + scene.veh_brake_phase[veh]))
    braking = brake_wave > 0.85
    anim = layout.anim
    anim["steering"] = scene.veh_steer[veh]
    anim["throttle"] = np.where(braking, 0.0, 0.45 + 0.1 * brake_wave)
    anim["brake"] = np.where(braking, 0.6, 0.0)
    writer.add_records(Kind.ANIM_VEHICLE, anim)
    writer.add_records(Kind.ANIM_WALKER, layout.walk)
    if Kind.VEHICLE_LIGHT in kinds:
        lights = np.where(scene.veh_lights_on[veh], 0x3, 0x0) | np.where(braking, 0x8, 0)
        blink = int(t / 0.4) % 2 == 0
        signalling = scene.veh_signals[veh] & (brake_wave < -0.3) & blink
        side = np.where(scene.veh_omega[veh] > 0, 0x20, 0x10)
        layout.lights["state"] = lights | np.where(signalling, side, 0)
        writer.add_records(Kind.VEHICLE_LIGHT, layout.lights)
    if scene.n_scene_lights and (f == 1 or f == scene.f_lights):
        n = scene.n_scene_lights if f == 1 else (scene.n_scene_lights + 1) // 2
        on = f == 1
        writer.scene_lights(
            np.arange(n),
            intensities=np.full(n, 1500.0 if on else 0.0),
            colors=np.tile((1.0, 0.85, 0.6, 1.0), (n, 1)),
            on=np.full(n, on),
            types=2,
        )
    if Kind.VEHICLE_DOOR in kinds and scene.n_initial >= 2:
        door_car = scene.veh_ids[1]
        if f == scene.f_door_open:
            writer.vehicle_doors([door_car], [0], [True])
        elif f == scene.f_door_close:
            writer.vehicle_doors([door_car], [6], [False])
    if scene.era.animate_wheels:
        _wheels(writer, scene, layout, veh, t, braking, brake_wave)
    if Kind.WEATHER in kinds and (f == 1 or f == scene.f_weather):
        _weather(writer, rain=f != 1)
    if scene.additional:
        _additional_data(writer, scene, layout, veh, wlk, f, t)


def _traffic_lights(writer: RecordingWriter, scene: _Scene, layout: _Layout, t: float) -> None:
    """Each light's state and time in it, from its cycle and offset."""
    cycle_red = scene.tl_green + scene.tl_yellow
    phase_t = np.mod(t + scene.tl_offset, cycle_red + scene.tl_red)
    green = phase_t < scene.tl_green
    yellow = ~green & (phase_t < scene.tl_green + scene.tl_yellow)
    layout.state["state"] = np.where(
        green,
        int(TrafficLightState.GREEN),
        np.where(yellow, int(TrafficLightState.YELLOW), int(TrafficLightState.RED)),
    )
    layout.state["elapsed_time"] = np.where(
        green,
        phase_t,
        np.where(yellow, phase_t - scene.tl_green, phase_t - scene.tl_green - scene.tl_yellow),
    )
    writer.add_records(Kind.STATE, layout.state)


def _wheels(
    writer: RecordingWriter,
    scene: _Scene,
    layout: _Layout,
    veh: npt.NDArray[np.int64],
    t: float,
    braking: npt.NDArray[np.bool_],
    brake_wave: npt.NDArray[np.float64],
) -> None:
    """Cars' and bikes' wheel animation, and the bikers' engine."""
    speed = scene.veh_speed[veh]
    spin = wrap_degrees(np.degrees(speed * t / 37.0))
    steer_deg = scene.veh_steer[veh] * 70.0
    is_bike = scene.veh_bike[veh]
    cw = layout.car_wheels
    if len(cw):
        cw["wheels"]["steering_angle"][:, :2] = steer_deg[~is_bike][:, None]
        cw["wheels"]["tire_rotation"] = spin[~is_bike][:, None]
        writer.add_raw(Kind.ANIM_VEHICLE_WHEELS, cw.tobytes(), len(cw))
    bw = layout.bike_wheels
    if len(bw):
        bw["wheels"]["steering_angle"][:, 0] = steer_deg[is_bike]
        bw["wheels"]["tire_rotation"] = spin[is_bike][:, None]
        writer.add_raw(Kind.ANIM_VEHICLE_WHEELS, bw.tobytes(), len(bw))
        layout.biker["engine_rotation"] = np.where(
            braking[is_bike], 0.15, 0.35 + 0.3 * brake_wave[is_bike] ** 2
        )
        writer.add_records(Kind.ANIM_BIKER, layout.biker)


def _weather(writer: RecordingWriter, *, rain: bool) -> None:
    writer.weather(
        {
            "cloudiness": 80.0 if rain else 10.0,
            "precipitation": 40.0 if rain else 0.0,
            "precipitation_deposits": 20.0 if rain else 0.0,
            "wind_intensity": 35.0 if rain else 10.0,
            "sun_azimuth_angle": 45.0,
            "sun_altitude_angle": 30.0 if rain else 60.0,
            "fog_distance": 0.75,
            "fog_falloff": 0.1,
            "wetness": 30.0 if rain else 0.0,
            "scattering_intensity": 1.0,
            "mie_scattering_scale": 0.03,
            "rayleigh_scattering_scale": 0.0331,
        }
    )


def _additional_data(
    writer: RecordingWriter,
    scene: _Scene,
    layout: _Layout,
    veh: npt.NDArray[np.int64],
    wlk: npt.NDArray[np.int64],
    f: int,
    t: float,
) -> None:
    """The packets of a recording made with additional data (kinematics, platform time,
    walker bones)."""
    kinds = scene.kinds
    if Kind.KINEMATICS in kinds and len(layout.kin):
        lin = layout.kin["linear_velocity"]
        layout.vmotion.velocity(lin[: len(veh)])
        layout.wmotion.velocity(lin[len(veh) :])
        writer.add_records(Kind.KINEMATICS, layout.kin)
    if Kind.PLATFORM_TIME in kinds:
        micros = int(t * 1.25e6) + 1500 * f  # a server slower than real time
        writer.platform_time(micros / 1e6)
    if Kind.WALKER_BONES in kinds and len(layout.bones):
        swing = _q(np.sin(2.0 * math.pi * 0.9 * t + scene.walker_phase[wlk]))
        bones = layout.bones
        for i in range(len(_BONES)):
            if _BONE_SWING[i]:
                bones[f"r{i}"][:, 1] = _BONE_SWING[i] * swing
        writer.add_raw(Kind.WALKER_BONES, bones.tobytes(), len(bones))


def _events(writer: RecordingWriter, scene: _Scene, f: int) -> None:
    """Spawns, destroys, parenting, collisions and the event-like additional data."""
    kinds = scene.kinds
    additional = scene.additional
    family = scene.family
    n_init = scene.n_initial
    spawned_vehicles: list[int] = []
    boxes: list[tuple[int, tuple[float, float, float], tuple[float, float, float]]] = []
    if f == 1:
        writer.spawn(
            scene.spectator_id,
            ActorType.OTHER,
            "spectator",
            location=scene.spectator_loc,
            rotation=(0.0, -30.0, 45.0),
        )
        boxes.append((scene.spectator_id, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0)))
        for j, tl in enumerate(scene.tl_ids):
            writer.spawn(
                int(tl),
                ActorType.TRAFFIC_LIGHT,
                "traffic.traffic_light",
                location=scene.tl_loc[j],
                rotation=scene.tl_rot[j],
            )
            boxes.append((int(tl), (0.0, 0.0, 250.0), (40.0, 40.0, 250.0)))
        spawned_vehicles = list(range(n_init))
    elif f == scene.f_spawn and len(scene.veh_ids) > n_init:
        spawned_vehicles = [n_init]

    for i in spawned_vehicles:
        loc, rot = np.zeros((1, 3)), np.zeros((1, 3))
        scene.vehicle_motion(np.array([i])).pose(writer.elapsed, loc, rot)
        bike = bool(scene.veh_bike[i])
        blueprint, uid, _, _ = _BIKE if bike else _CARS[int(scene.veh_model[i])]
        writer.spawn(
            int(scene.veh_ids[i]),
            ActorType.VEHICLE,
            blueprint,
            location=loc[0],
            rotation=rot[0],
            uid=uid,
            attributes=scene.vehicle_attributes(i),
        )
        extent = (110.0, 40.0, 75.0) if bike else (240.0, 95.0, 75.0)
        boxes.append((int(scene.veh_ids[i]), (0.0, 0.0, 75.0), extent))

    new_sensors: list[tuple[int, str, int]] = []
    if f == 1:
        new_sensors = [
            (int(sid), kind, int(parent))
            for sid, kind, parent in zip(
                scene.sensor_ids, scene.sensor_kind, scene.sensor_parent, strict=True
            )
        ]
    elif spawned_vehicles and scene.late_sensor_id is not None:
        new_sensors = [(scene.late_sensor_id, "collision", int(scene.veh_ids[n_init]))]
    for sid, kind, _parent in new_sensors:
        blueprint, uid, attrs, (loc3, rot3) = scene.sensor_spec(kind)
        writer.spawn(
            sid,
            scene.era.sensor_type,
            blueprint,
            location=loc3,
            rotation=rot3,
            uid=uid,
            attributes=attrs,
        )
        boxes.append((sid, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0)))

    if f == 1:
        for w, wid in enumerate(scene.walker_ids):
            loc, rot = np.zeros((1, 3)), np.zeros((1, 3))
            scene.walker_motion(np.array([w])).pose(0.0, loc, rot)
            writer.spawn(
                int(wid),
                ActorType.WALKER,
                f"walker.pedestrian.{w % 48 + 1:04d}",
                location=loc[0],
                rotation=rot[0],
                uid=60 + w % 48,
                attributes=[
                    (_B, "is_invincible", "false"),
                    (_F, "speed", f"{scene.walker_speed[w] / 100.0:.1f}"),
                    (_I, "generation", "2"),
                    (_S, "age", "adult"),
                    (_S, "gender", "female" if w % 2 else "male"),
                    (_S, "role_name", "pedestrian"),
                ],
            )
            boxes.append((int(wid), (0.0, 0.0, 0.0), (18.75, 18.75, 93.0)))
    if new_sensors:
        writer.parent([s[0] for s in new_sensors], [s[2] for s in new_sensors])

    if f == scene.f_destroy:
        doomed: list[int] = []
        if scene.victim is not None:
            victim_id = int(scene.veh_ids[scene.victim])
            attached = zip(scene.sensor_ids, scene.sensor_parent, strict=True)
            doomed += [int(s) for s, p in attached if p == victim_id]
            doomed.append(victim_id)
        if len(scene.walker_ids) >= 2:
            doomed.append(int(scene.walker_ids[0]))
        if doomed:
            writer.destroy(doomed)

    if n_init >= 1:
        hero = int(scene.veh_ids[0])
        if n_init >= 2 and scene.f_collide <= f < scene.f_collide + 3:
            writer.collision(scene.collision_counter, hero, int(scene.veh_ids[1]), actor1_hero=True)
            scene.collision_counter += 2  # the other car's report of the same hit is dropped
        if scene.f_env_hit <= f < scene.f_env_hit + 2:
            writer.collision(
                scene.collision_counter, hero, scene.era.environment_id, actor1_hero=True
            )
            scene.collision_counter += 1

    if not additional:
        return
    if Kind.BOUNDING_BOX in kinds and boxes:
        writer.bounding_boxes([b[0] for b in boxes], [b[1] for b in boxes], [b[2] for b in boxes])
    if f == 1 and Kind.TRIGGER_VOLUME in kinds and len(scene.tl_ids):
        origins = scene.tl_loc + np.array([300.0, 0.0, 100.0])
        writer.trigger_volumes(
            scene.tl_ids, origins, np.tile((150.0, 300.0, 100.0), (len(origins), 1))
        )
    if Kind.PHYSICS_CONTROL in kinds:
        for i in spawned_vehicles:
            writer.physics_control(_physics(scene, i, family))
        if f == scene.f_physics and n_init >= 1:
            writer.physics_control(_physics(scene, 0, family, mass=2100.0))
    if Kind.TRAFFIC_LIGHT_TIME in kinds and len(scene.tl_ids):
        if f == 1:
            writer.traffic_light_times(scene.tl_ids, scene.tl_green, scene.tl_yellow, scene.tl_red)
        elif f == scene.f_tl_times:
            writer.traffic_light_times(scene.tl_ids[:1], [_GREEN + 2.0], [_YELLOW], [_RED])


def _physics(scene: _Scene, i: int, family: Family, *, mass: float | None = None) -> PhysicsControl:
    bike = bool(scene.veh_bike[i])
    return default_physics_control(
        family,
        int(scene.veh_ids[i]),
        wheels=2 if bike else 4,
        wheel_size=scene.physics_wheel_size,
        mass=mass if mass is not None else (200.0 if bike else 1500.0 + 50.0 * (i % 8)),
        seed=scene.seed,
    )


def _family(family: str | Family) -> Family:
    return family_named(family) if isinstance(family, str) else family


def _scene(family: Family, options: GeneratorOptions, frames: int) -> _Scene:
    bikes = options.bikes
    if bikes is None:
        bikes = 1 if options.vehicles >= 2 else 0
    return _Scene(
        family,
        seed=options.seed,
        frames=frames,
        vehicles=options.vehicles,
        walkers=options.walkers,
        traffic_lights=options.traffic_lights,
        sensors=options.sensors,
        bikes=bikes,
        scene_lights=options.scene_lights,
        additional_data=options.additional_data,
        dt=options.dt,
        physics_wheel_size=options.physics_wheel_size,
    )


def generate(
    family: str | Family,
    *,
    seed: int = 0,
    frames: int = 300,
    vehicles: int = 8,
    walkers: int = 4,
    traffic_lights: int = 4,
    sensors: int = 2,
    additional_data: bool = False,
    dt: float = 0.05,
    map_name: str = "Town03",
    crash: CrashMode = False,
    date: int = DEFAULT_DATE,
    physics_wheel_size: int | None = None,
    bikes: int | None = None,
    scene_lights: int = 6,
) -> bytes:
    """A synthetic CARLA recording of `family` as bytes (see the module docstring).

    `frames` ticks of `dt` seconds; `vehicles`, `walkers`, `traffic_lights` and `sensors`
    actors at the start (one more vehicle, with a collision sensor, spawns at 30 % of the
    run; one vehicle with its sensors and one walker are destroyed at 70 %). `bikes` of
    the vehicles are motorbikes (default 1 where the family animates bikes). `date` is the
    header's Unix time. `physics_wheel_size=36` makes a "0.9.10-0.9.13" recording look
    like 0.9.10/0.9.11 (36-byte wheels, sensors of type 0, environment id 0); the default
    48 looks like 0.9.13. `crash=True` (or "boundary") cuts the last frame where a crashed
    server's file ends; "mid-packet" cuts half a packet later.

    Raises ValueError for bad counts or options, KeyError for an unknown family name and
    UnsupportedError for `additional_data` on a family without it.
    """
    fam = _family(family)
    options = GeneratorOptions(
        seed=seed,
        frames=frames,
        vehicles=vehicles,
        walkers=walkers,
        traffic_lights=traffic_lights,
        sensors=sensors,
        additional_data=additional_data,
        dt=dt,
        crash=crash,
        physics_wheel_size=physics_wheel_size,
        bikes=bikes,
        scene_lights=scene_lights,
    )
    options.check(fam)
    buffer = io.BytesIO()
    writer = RecordingWriter(
        buffer,
        fam,
        map_name=map_name,
        date=date,
        additional_data=additional_data,
        physics_wheel_size=physics_wheel_size,
    )
    _run(writer, _scene(fam, options, frames), frames=frames, target_bytes=None, crash=crash)
    writer.close()
    return buffer.getvalue()


def generate_to(
    target: str | os.PathLike[str] | BinaryIO,
    family: str | Family,
    *,
    target_bytes: int | None = None,
    overwrite: bool = False,
    seed: int = 0,
    frames: int = 300,
    vehicles: int | None = None,
    walkers: int | None = None,
    traffic_lights: int | None = None,
    sensors: int = 2,
    additional_data: bool = False,
    dt: float = 0.05,
    map_name: str = "Town03",
    crash: CrashMode = False,
    date: int = DEFAULT_DATE,
    physics_wheel_size: int | None = None,
    bikes: int | None = None,
    scene_lights: int = 6,
) -> GenerationReport:
    """Stream a synthetic recording to a path or binary stream; returns what was written.

    Same scene as `generate`. With `target_bytes`, frames are added until the file holds
    at least that many bytes (`frames` is then a minimum), and — unless given — the scene
    is a dense one (512 vehicles, 256 walkers, 64 traffic lights) when the target is
    16 MiB or more, so that a gigabyte takes seconds rather than minutes. A path is
    written atomically and never overwritten unless `overwrite=True`
    (OutputExistsError). Raises as `generate` does.
    """
    fam = _family(family)
    dense = target_bytes is not None and target_bytes >= _SMALL_TARGET
    options = GeneratorOptions(
        seed=seed,
        frames=frames,
        vehicles=vehicles if vehicles is not None else (512 if dense else 8),
        walkers=walkers if walkers is not None else (256 if dense else 4),
        traffic_lights=traffic_lights if traffic_lights is not None else (64 if dense else 4),
        sensors=sensors,
        additional_data=additional_data,
        dt=dt,
        crash=crash,
        physics_wheel_size=physics_wheel_size,
        bikes=bikes,
        scene_lights=scene_lights,
    )
    options.check(fam)
    if target_bytes is not None and target_bytes < 0:
        raise UsageError(f"target_bytes must be >= 0, not {target_bytes}")
    run_frames = frames
    if target_bytes is not None:
        run_frames = max(frames, _estimate_frames(fam, options, map_name, target_bytes))
    started = time.perf_counter()
    writer = RecordingWriter(
        target,
        fam,
        map_name=map_name,
        date=date,
        additional_data=additional_data,
        overwrite=overwrite,
        physics_wheel_size=physics_wheel_size,
        flush_bytes=8 << 20,
    )
    try:
        _run(
            writer,
            _scene(fam, options, run_frames),
            frames=frames if target_bytes is not None else run_frames,
            target_bytes=target_bytes,
            crash=crash,
        )
        writer.close()
    except BaseException:
        writer.abort()
        raise
    call = options.call(fam.name, map_name, date)
    if target_bytes is not None:
        call["target_bytes"] = target_bytes
    return GenerationReport(
        fam.name, map_name, date, call, writer.stats, time.perf_counter() - started
    )


def _estimate_frames(family: Family, options: GeneratorOptions, map_name: str, target: int) -> int:
    """Frames a target size needs, from the sizes of a few steady frames of the same scene."""
    probe = replace(options, crash=False)
    writer = RecordingWriter(
        io.BytesIO(),
        family,
        map_name=map_name,
        additional_data=options.additional_data,
        physics_wheel_size=options.physics_wheel_size,
    )
    sizes: list[int] = []
    _run(
        writer,
        _scene(family, probe, 1 << 30),
        frames=4,
        target_bytes=None,
        crash=False,
        frame_sizes=sizes,
    )
    header_and_first = writer.stats.size - sum(sizes[1:])
    steady = max(1, min(sizes[1:]))
    return max(1, 1 + math.ceil((target - header_and_first) / steady))


def summary(data: bytes, report: GenerationReport) -> JsonObject:
    """The JSON summary twin of a generated file (sizes in bytes, duration in seconds).

    `generator` holds the keyword arguments that make `generate()` return `data` again.
    """
    stats = report.stats
    type_names = {int(t): t.name.lower() for t in ActorType}

    def by_type(counts: Counter[int]) -> dict[str, int]:
        return {type_names.get(k, str(k)): v for k, v in sorted(counts.items())}

    return {
        "family": report.family,
        "map": report.map_name,
        "date": report.date,
        "frames": stats.frames,
        "duration": stats.last_elapsed,
        "actors_spawned": by_type(stats.spawned),
        "actors_destroyed": by_type(stats.destroyed),
        "packets": {kind.value: stats.packets[kind] for kind in Kind if stats.packets[kind]},
        "size": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
        "generator": {"function": "nanorec.converters.carla.generate.generate", **report.options},
    }


def _parse_size(text: str) -> int:
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    text = text.strip().lower().removesuffix("b").removesuffix("i")
    if text and text[-1] in units:
        return int(float(text[:-1]) * units[text[-1]])
    return int(text)


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m nanorec.converters.carla.generate FAMILY OUTPUT [options]`; returns exit code."""
    parser = argparse.ArgumentParser(
        prog="python -m nanorec.converters.carla.generate",
        description="Write a synthetic CARLA recorder file.",
    )
    parser.add_argument("family", help="release family, e.g. 0.9.15, ue5-0.10")
    parser.add_argument("output", help="output path ('-' for stdout)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--frames", type=int, default=300)
    parser.add_argument("--vehicles", type=int)
    parser.add_argument("--walkers", type=int)
    parser.add_argument("--traffic-lights", type=int)
    parser.add_argument("--sensors", type=int, default=2)
    parser.add_argument("--bikes", type=int)
    parser.add_argument("--additional-data", action="store_true")
    parser.add_argument("--dt", type=float, default=0.05, help="tick seconds")
    parser.add_argument("--map", dest="map_name", default="Town03")
    parser.add_argument("--date", type=int, default=DEFAULT_DATE, help="Unix seconds")
    parser.add_argument("--crash", choices=["boundary", "mid-packet"])
    parser.add_argument("--physics-wheel-size", type=int, choices=[36, 48])
    parser.add_argument("--target-bytes", type=_parse_size, help="e.g. 1G, 200M")
    parser.add_argument("--overwrite", action="store_true")
    args = parser.parse_args(argv)
    target: str | BinaryIO = args.output
    if args.output == "-":
        target = sys.stdout.buffer
    report = generate_to(
        target,
        args.family,
        target_bytes=args.target_bytes,
        overwrite=args.overwrite,
        seed=args.seed,
        frames=args.frames,
        vehicles=args.vehicles,
        walkers=args.walkers,
        traffic_lights=args.traffic_lights,
        sensors=args.sensors,
        additional_data=args.additional_data,
        dt=args.dt,
        map_name=args.map_name,
        crash=args.crash or False,
        date=args.date,
        physics_wheel_size=args.physics_wheel_size,
        bikes=args.bikes,
    )
    rate = report.size / max(report.seconds, 1e-9) / 1e6
    print(
        f"{args.output}: {report.family}, {report.frames} frames, {report.size} bytes "
        f"in {report.seconds:.2f} s ({rate:.0f} MB/s)",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
