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

This module is the entry points (`generate`, `generate_to`, `summary`, the command line);
the scene is `generate_scene`, its motion `generate_motion`, the frame loop and snapshot
packets `generate_frames`, the events `generate_events`.
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
from typing import BinaryIO

from nanorec.errors import UsageError
from nanorec.untyped import JsonObject

from .frame_writer import DEFAULT_DATE, WriterStats
from .generate_frames import write_frames
from .generate_options import CrashMode, GeneratorCall, GeneratorOptions
from .generate_scene import Scene
from .ids import ActorType, Family, Kind
from .ids import family as family_named
from .writer import RecordingWriter

__all__ = ["GenerationReport", "generate", "generate_to", "main", "summary"]

_SMALL_TARGET = 16 << 20  # below this, `target_bytes` keeps the small-scene defaults


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


def _family(family: str | Family) -> Family:
    return family_named(family) if isinstance(family, str) else family


def _scene(family: Family, options: GeneratorOptions, frames: int) -> Scene:
    bikes = options.bikes
    if bikes is None:
        bikes = 1 if options.vehicles >= 2 else 0
    return Scene(
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
    write_frames(
        writer, _scene(fam, options, frames), frames=frames, target_bytes=None, crash=crash
    )
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
        write_frames(
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
    write_frames(
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
