"""A CARLA frame's world state as a compact, JSON-ready dict: what `nanorec play` streams,
`cat` prints and `World.to_json()` gives (the view's inspector, any JSON writer)."""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .world import Actor, World

#: Parts of a frame's state `world_dict` can emit.
PARTS = ("actors", "traffic_lights", "scene_lights", "weather", "events")
#: What is emitted unless asked otherwise: scene lights (hundreds in a real town, rarely
#: changing) are left out.
DEFAULT_PARTS = ("actors", "traffic_lights", "weather", "events")


def world_dict(world: World, parts: Collection[str] = DEFAULT_PARTS) -> dict[str, Any]:
    """A compact, JSON-ready dict of a frame's state (file units: cm, degrees, seconds).

    Always `index` (archive frame), `frame` (CARLA frame id), `time` (elapsed s) and the
    recorded `visual_time`/`platform_time`; then the `parts` asked for: `actors` (id,
    type_id, parent_id, location [x, y, z], rotation {pitch, yaw, roll}, then whatever else
    is recorded: control, walker_speed, light_state, velocity (m/s), angular_velocity,
    bounding_box, biker, doors), `traffic_lights`, `scene_lights`, `weather` (when
    recorded) and `events` (only in frames that have some).
    """
    out: dict[str, Any] = {"index": world.index, "frame": world.frame_id, "time": world.elapsed}
    if world.visual_time is not None:
        out["visual_time"] = world.visual_time
    if world.platform_time is not None:
        out["platform_time"] = world.platform_time
    if "actors" in parts:
        out["actors"] = [actor_dict(actor) for actor in world.actors.values()]
    if "traffic_lights" in parts:
        lights = []
        for light in world.traffic_lights.values():
            item: dict[str, Any] = {
                "id": light.id,
                "state": None if light.state is None else light.state.name.lower(),
                "elapsed_time": light.elapsed_time,
                "is_frozen": light.is_frozen,
            }
            if light.green_time is not None:
                item["times"] = [light.green_time, light.yellow_time, light.red_time]
            lights.append(item)
        out["traffic_lights"] = lights
    if "scene_lights" in parts:
        out["scene_lights"] = [
            {
                "id": light.id,
                "intensity": light.intensity,
                "color": list(light.color),
                "is_on": light.is_on,
                "type": light.type,
            }
            for light in world.scene_lights.values()
        ]
    if "weather" in parts and world.weather is not None:
        out["weather"] = dict(world.weather)
    if "events" in parts:
        events = world.events
        found: dict[str, Any] = {}
        if events.spawned:
            found["spawned"] = [
                {"id": desc.id, "type_id": desc.type_id, "attributes": dict(desc.attributes)}
                for desc in events.spawned
            ]
        if events.destroyed:
            found["destroyed"] = list(events.destroyed)
        if events.parented:
            found["parented"] = [list(pair) for pair in events.parented]
        if events.collisions:
            found["collisions"] = [
                {"id": hit.id, "actor1_id": hit.actor1_id, "actor2_id": hit.actor2_id}
                for hit in events.collisions
            ]
        if found:
            out["events"] = found
    return out


def actor_dict(actor: Actor) -> dict[str, Any]:
    """One actor's recorded state as a compact dict (fields absent when not recorded)."""
    item: dict[str, Any] = {"id": actor.id, "type_id": actor.type_id}
    if actor.parent_id is not None:
        item["parent_id"] = actor.parent_id
    item["location"] = list(actor.location)
    item["rotation"] = actor.rotation._asdict()  # {"pitch", "yaw", "roll"}: never a bare triple
    if actor.control is not None:
        item["control"] = actor.control._asdict()
    if actor.walker_speed is not None:
        item["walker_speed"] = actor.walker_speed
    if actor.light_state is not None:
        item["light_state"] = actor.light_state
    if actor.velocity is not None:
        item["velocity"] = list(actor.velocity)
    if actor.angular_velocity is not None:
        item["angular_velocity"] = list(actor.angular_velocity)
    if actor.bounding_box is not None:
        item["bounding_box"] = {
            "location": list(actor.bounding_box.location),
            "extent": list(actor.bounding_box.extent),
        }
    if actor.biker is not None:
        item["biker"] = list(actor.biker)
    if actor.doors:
        item["doors"] = {str(door): is_open for door, is_open in actor.doors.items()}
    return item


__all__ = ["DEFAULT_PARTS", "PARTS", "actor_dict", "world_dict"]
