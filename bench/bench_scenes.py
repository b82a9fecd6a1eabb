"""CPU cost of `view_scene(n)` (what `nanorec view` asks per seek) against the world state
alone, on random frames of the real CARLA logs and the bundled samples, plus the one-off
`view_overview()`; and on the bags and pbstreams of samples/ (A B A B, CPU time).

    python bench/bench_scenes.py
"""

from __future__ import annotations

import datetime
import platform
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from nanorec import registry
from nanorec.converters.carla.world_build import posed_actors

ROOT = Path(__file__).resolve().parents[1]
REAL = ROOT.parent / "shared" / "realdata"


def cpu_us(call: Callable[[int], Any], numbers: list[int]) -> np.ndarray:
    found = []
    for number in numbers:
        start = time.process_time()
        call(number)
        found.append((time.process_time() - start) * 1e6)
    return np.array(found)


def line(name: str, frames: int, overview_ms: float, a: np.ndarray, b: np.ndarray) -> str:
    return (
        f"| {name} | {frames} | {overview_ms:.0f} | {np.median(a):.0f} / "
        f"{np.percentile(a, 95):.0f} | {np.median(b):.0f} / {np.percentile(b, 95):.0f} |"
    )


def carla(path: Path) -> str:
    with registry.open(path) as rec:
        numbers = random.Random(7).choices(range(len(rec)), k=200)
        start = time.process_time()
        rec.view_overview()  # type: ignore[attr-defined]
        overview_ms = (time.process_time() - start) * 1e3
        world: list[np.ndarray] = []
        scene: list[np.ndarray] = []
        for _ in range(2):  # A B A B

            def state(n: int) -> None:
                posed_actors(rec.frame(n))

            rec._cache.clear()  # type: ignore[attr-defined]
            world.append(cpu_us(state, numbers))
            rec._cache.clear()  # type: ignore[attr-defined]
            scene.append(cpu_us(rec.view_scene, numbers))  # type: ignore[attr-defined]
        return line(path.name, len(rec), overview_ms, np.concatenate(world), np.concatenate(scene))


def other(path: Path) -> str:
    with registry.open(path) as rec:
        numbers = random.Random(7).choices(range(len(rec)), k=200)
        start = time.process_time()
        rec.view_overview()  # type: ignore[attr-defined]
        overview_ms = (time.process_time() - start) * 1e3
        message: list[np.ndarray] = []
        scene: list[np.ndarray] = []
        for _ in range(2):
            message.append(cpu_us(rec.message, numbers))
            scene.append(cpu_us(rec.view_scene, numbers))  # type: ignore[attr-defined]
        return line(
            path.name, len(rec), overview_ms, np.concatenate(message), np.concatenate(scene)
        )


START, END = "<!-- scenes:start -->", "<!-- scenes:end -->"


def main() -> int:
    logs = sorted((REAL / "carla").glob("*")) if (REAL / "carla").is_dir() else []
    logs += sorted((ROOT / "samples").glob("carla-*.log"))
    out = [
        "| CARLA recording | frames | overview CPU ms | frame(n) + posed actors median / p95 "
        "µs | view_scene(n) median / p95 µs |",
        "|---|---|---|---|---|",
    ]
    out += [carla(path) for path in logs]
    out += [
        "",
        "| recording | messages | overview CPU ms | message(n) median / p95 µs | "
        "view_scene(n) median / p95 µs |",
        "|---|---|---|---|---|",
    ]
    samples = ROOT / "samples"
    out += [
        other(samples / name)
        for name in ("rosbag-robot.bag", "ros2-robot", "pbstream-small.pbstream")
    ]
    table = "\n".join(out)
    print(table)
    when = datetime.date.today().isoformat()
    text = (
        f"{START}\n## `nanorec view` scenes: CPU per seek (`bench/bench_scenes.py`)\n\n"
        f"Machine: {platform.processor() or platform.machine()}, Python "
        f"{platform.python_version()}. Date: {when}. Command: `python bench/bench_scenes.py`. "
        "200 random frames/messages per file, measured twice alternating (A B A B), "
        "`time.process_time()` per call; the first columns are what a scene must at least "
        "read (the world state with every actor posed; one decoded message).\n\n"
        f"{table}\n{END}"
    )
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from results import write_section

    write_section(START, END, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
