"""The actors of one generated CARLA recording, drawn once from the seed: their ids in spawn
order, the frames where things happen (spawns, destroys, collisions, light and weather
changes), where each one drives or walks, and what each one is (blueprint, colour,
attribute list as its release writes it). The frames are written from this by
`generate_frames`; numbers come from PCG64's raw stream so committed samples never change
with numpy."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from .generate_motion import Motion, quantize, quantize_scalar
from .geometry import wrap_degrees
from .ids import ActorType, AttributeType, Engine, Family, Kind
from .writer import ENVIRONMENT_ID

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
GREEN, YELLOW, RED = 6.0, 2.0, 8.0  # traffic-light phase seconds (cycle 16 s)

_NEVER = 1 << 62  # a frame number never reached


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


class Scene:
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
        self.veh_cx = quantize(rng.uniform(-9000.0, 9000.0, n_veh))
        self.veh_cy = quantize(rng.uniform(-9000.0, 9000.0, n_veh))
        self.veh_r = quantize(rng.uniform(1500.0, 5000.0, n_veh))
        self.veh_speed = quantize(rng.uniform(500.0, 1400.0, n_veh))  # cm/s
        direction = np.where(rng.random(n_veh) < 0.5, -1.0, 1.0)
        self.veh_omega = direction * self.veh_speed / self.veh_r  # rad/s, + = left turn
        self.veh_phase = quantize(rng.uniform(0.0, 2 * math.pi, n_veh))
        self.veh_brake_phase = quantize(rng.uniform(0.0, 2 * math.pi, n_veh))
        self.veh_z = quantize(rng.uniform(0.0, 40.0, n_veh))
        self.veh_lights_on = rng.random(n_veh) < 0.5
        self.veh_signals = rng.random(n_veh) < 0.5
        # steering from the bicycle model, as a fraction of a 70° maximum
        wheelbase = np.where(self.veh_bike, 140.0, 280.0)
        self.veh_steer = quantize(
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
        self.walker_cx = quantize(rng.uniform(-9000.0, 9000.0, walkers))
        self.walker_cy = quantize(rng.uniform(-9000.0, 9000.0, walkers))
        self.walker_r = quantize(rng.uniform(300.0, 900.0, walkers))
        self.walker_speed = quantize(rng.uniform(100.0, 160.0, walkers))  # cm/s
        wdir = np.where(rng.random(walkers) < 0.5, -1.0, 1.0)
        self.walker_omega = wdir * self.walker_speed / self.walker_r
        self.walker_phase = quantize(rng.uniform(0.0, 2 * math.pi, walkers))
        self.walker_alive_to = np.full(walkers, _NEVER)
        if walkers >= 2:
            self.walker_alive_to[0] = self.f_destroy

        # ---- traffic lights: groups of four around intersections, opposite phases
        groups = max(1, (traffic_lights + 3) // 4)
        ix = quantize(rng.uniform(-8000.0, 8000.0, groups))
        iy = quantize(rng.uniform(-8000.0, 8000.0, groups))
        arm = np.arange(traffic_lights) % 4
        angle = arm * 90.0
        group = np.arange(traffic_lights) // 4
        unit = np.array([(1.0, 0.0), (0.0, 1.0), (-1.0, 0.0), (0.0, -1.0)])[arm]
        self.tl_loc = np.zeros((traffic_lights, 3))
        self.tl_loc[:, 0] = ix[group] + 1200.0 * unit[:, 0]
        self.tl_loc[:, 1] = iy[group] + 1200.0 * unit[:, 1]
        self.tl_rot = np.zeros((traffic_lights, 3))
        self.tl_rot[:, 2] = wrap_degrees(angle + 180.0)
        self.tl_offset = np.where(arm % 2 == 0, 0.0, GREEN + YELLOW) + group * 1.5
        self.tl_green = np.full(traffic_lights, GREEN)
        self.tl_yellow = np.full(traffic_lights, YELLOW)
        self.tl_red = np.full(traffic_lights, RED)

        # ---- scene lights (street lamps) and the spectator
        self.n_scene_lights = scene_lights if Kind.SCENE_LIGHT in self.kinds else 0
        self.spectator_loc = (quantize_scalar(float(ix[0])) if traffic_lights else 0.0, 0.0, 1500.0)
        self.visual_base = 100.0 + 0.5 * (seed % 16)

        self.collision_counter = 0

    # ------------------------------------------------------------------ attributes

    def vehicle_blueprint(self, i: int) -> tuple[str, int, str, str]:
        """Vehicle `i`'s blueprint id, blueprint uid, base_type and special_type."""
        return _BIKE if self.veh_bike[i] else _CARS[int(self.veh_model[i])]

    def vehicle_attributes(self, i: int) -> list[tuple[int, str, str]]:
        bike = bool(self.veh_bike[i])
        blueprint, _uid, base_type, special = self.vehicle_blueprint(i)
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

    def walker_attributes(self, w: int) -> list[tuple[int, str, str]]:
        return [
            (_B, "is_invincible", "false"),
            (_F, "speed", f"{self.walker_speed[w] / 100.0:.1f}"),
            (_I, "generation", "2"),
            (_S, "age", "adult"),
            (_S, "gender", "female" if w % 2 else "male"),
            (_S, "role_name", "pedestrian"),
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

    def vehicle_motion(self, idx: npt.NDArray[np.int64]) -> Motion:
        return Motion(
            self.veh_cx[idx],
            self.veh_cy[idx],
            self.veh_r[idx],
            self.veh_z[idx],
            self.veh_phase[idx],
            self.veh_omega[idx],
            vehicle=True,
        )

    def walker_motion(self, idx: npt.NDArray[np.int64]) -> Motion:
        return Motion(
            self.walker_cx[idx],
            self.walker_cy[idx],
            self.walker_r[idx],
            np.full(len(idx), 95.0),
            self.walker_phase[idx],
            self.walker_omega[idx],
            vehicle=False,
        )


__all__ = ["GREEN", "RED", "YELLOW", "Scene"]
