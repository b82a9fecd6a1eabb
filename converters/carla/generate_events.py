"""The event packets of a generated CARLA recording's frame: spawns (with each actor's
attributes), parenting, destroys and collisions, and the additional data that comes with
them (bounding boxes, trigger volumes, physics control, traffic-light times), on the frames
the scene (`generate_scene`) scheduled them."""

from __future__ import annotations

import numpy as np

from .generate_scene import GREEN, RED, YELLOW, Scene
from .ids import ActorType, Family, Kind
from .records import PhysicsControl
from .rows import default_physics_control
from .writer import RecordingWriter


def write_events(writer: RecordingWriter, scene: Scene, f: int) -> None:
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
        blueprint, uid, _, _ = scene.vehicle_blueprint(i)
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
                attributes=scene.walker_attributes(w),
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
            writer.traffic_light_times(scene.tl_ids[:1], [GREEN + 2.0], [YELLOW], [RED])


def _physics(scene: Scene, i: int, family: Family, *, mass: float | None = None) -> PhysicsControl:
    bike = bool(scene.veh_bike[i])
    return default_physics_control(
        family,
        int(scene.veh_ids[i]),
        wheels=2 if bike else 4,
        wheel_size=scene.physics_wheel_size,
        mass=mass if mass is not None else (200.0 if bike else 1500.0 + 50.0 * (i % 8)),
        seed=scene.seed,
    )


__all__ = ["write_events"]
