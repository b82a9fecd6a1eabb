"""The frames of a generated CARLA recording: the loop that writes frame after frame until
the run (or the target size) is done, and each frame's snapshot packets in CARLA's order —
positions, traffic lights, vehicle and walker animation, lights, doors, wheels, weather and
the per-frame additional data — filled in place into record arrays that are rebuilt only
when actors spawn or go (so a gigabyte takes seconds)."""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from .generate_events import write_events
from .generate_motion import quantize
from .generate_options import CrashMode
from .generate_scene import Scene
from .geometry import wrap_degrees
from .ids import Kind, TrafficLightState
from .records import fixed_dtype
from .rows import bones_dtype, wheels_dtype
from .writer import RecordingWriter

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


class _Layout:
    """Preallocated record arrays for one set of live actors (rebuilt on spawn/destroy)."""

    def __init__(self, scene: Scene, veh: npt.NDArray[np.int64], wlk: npt.NDArray[np.int64]):
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


def write_frames(
    writer: RecordingWriter,
    scene: Scene,
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

        write_events(writer, scene, f)

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
    scene: Scene,
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
    brake_wave = quantize(np.sin(0.5 * t + scene.veh_brake_phase[veh]))
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


def _traffic_lights(writer: RecordingWriter, scene: Scene, layout: _Layout, t: float) -> None:
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
    scene: Scene,
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
    scene: Scene,
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
        swing = quantize(np.sin(2.0 * math.pi * 0.9 * t + scene.walker_phase[wlk]))
        bones = layout.bones
        for i in range(len(_BONES)):
            if _BONE_SWING[i]:
                bones[f"r{i}"][:, 1] = _BONE_SWING[i] * swing
        writer.add_raw(Kind.WALKER_BONES, bones.tobytes(), len(bones))


__all__ = ["write_frames"]
