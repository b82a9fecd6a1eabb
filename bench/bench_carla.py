"""Benchmark CARLA <-> archive: convert, export, open and frame seek, small and large.

Generates (or reuses, in bench/out/) a ~10 MB and a >= 1 GB synthetic CARLA recording,
then in one run measures for each: a plain packet-header walk (the floor any reader
pays; best of 3), convert and export throughput, archive open time, `rec.frame(n)` latency at
random n (median, p99; lazily built actors, and with every actor built), and peak memory
(ru_maxrss of a fresh process per phase). Writes the table into bench/RESULTS.md
between the `carla` markers.

    python bench/bench_carla.py            # 10 MB and 1 GiB
    python bench/bench_carla.py --quick    # 10 MB and 64 MiB
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import random
import resource
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
OUT = HERE / "out"
RESULTS = HERE / "RESULTS.md"
FAMILY = "0.9.16"
START, END = "<!-- carla:start -->", "<!-- carla:end -->"
# The same world in both files, so that only the length differs: a busy town.
SCENE = {"vehicles": 120, "walkers": 60, "traffic_lights": 40}


def walk(path: Path) -> dict[str, float]:
    """The plainest packet-header walk: u8 id, u32 size, skip (the codec's floor)."""
    import mmap

    size_field = struct.Struct("<xI").unpack_from
    with path.open("rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as buf:
        start = time.perf_counter()
        (magic,) = struct.unpack_from("<H", buf, 2)
        (name,) = struct.unpack_from("<H", buf, 4 + magic + 8)
        off = 4 + magic + 8 + 2 + name
        end = len(buf) - 5
        packets = 0
        while off <= end:
            off += 5 + size_field(buf, off)[0]
            packets += 1
        seconds = time.perf_counter() - start
    return {"seconds": seconds, "packets": packets}


def phase_convert(src: Path, archive: Path) -> dict[str, Any]:
    from nanorec.converters.carla.convert import convert

    start = time.perf_counter()
    report = convert(src, archive, overwrite=True)
    return {
        "seconds": time.perf_counter() - start,
        "frames": report.messages,
        "archive_size": report.archive_size,
    }


def phase_export(archive: Path, out: Path) -> dict[str, Any]:
    from nanorec.converters.carla.convert import export

    start = time.perf_counter()
    report = export(archive, out, overwrite=True)
    seconds = time.perf_counter() - start
    out.unlink()
    return {"seconds": seconds, "identical": report.identical}


def phase_seek(archive: Path, samples: int) -> dict[str, Any]:
    from nanorec.converters.carla.recording import CarlaRecording

    start = time.perf_counter()
    rec = CarlaRecording.open(archive)
    open_seconds = time.perf_counter() - start
    rng = random.Random(7)
    lazy: list[float] = []
    full: list[float] = []
    actors = 0
    for _ in range(samples):
        index = rng.randrange(len(rec))
        rec._cache.clear()  # every seek pays for its own message read
        t0 = time.perf_counter()
        rec.frame(index)
        lazy.append(time.perf_counter() - t0)
        index = rng.randrange(len(rec))
        rec._cache.clear()
        t0 = time.perf_counter()
        world = rec.frame(index)
        built = list(world.actors.values())
        full.append(time.perf_counter() - t0)
        actors = max(actors, len(built))
    rec.close()
    lazy.sort()
    full.sort()

    def pct(values: list[float], q: float) -> float:
        return values[min(len(values) - 1, int(q * len(values)))] * 1e6

    return {
        "open_ms": open_seconds * 1e3,
        "lazy_median_us": pct(lazy, 0.5),
        "lazy_p99_us": pct(lazy, 0.99),
        "full_median_us": pct(full, 0.5),
        "full_p99_us": pct(full, 0.99),
        "actors": actors,
    }


def anonymous_mb() -> float:
    """Resident anonymous memory (heap, arrays) now, without the file pages mmap maps in."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("RssAnon:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def in_subprocess(phase: str, *args: str) -> dict[str, Any]:
    """Run a phase in a fresh interpreter; adds its peak RSS in MB."""
    out = subprocess.run(
        [sys.executable, __file__, "--phase", phase, *args],
        check=True,
        capture_output=True,
        text=True,
        cwd=HERE.parent,
    )
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def ensure_recording(size: int, name: str) -> Path:
    from nanorec.converters.carla.generate import generate_to

    path = OUT / name
    if not path.exists() or path.stat().st_size < size:
        OUT.mkdir(exist_ok=True)
        start = time.perf_counter()
        generate_to(path, FAMILY, target_bytes=size, overwrite=True, seed=1, **SCENE)
        print(
            f"generated {path.name}: {path.stat().st_size / 1e6:.0f} MB "
            f"in {time.perf_counter() - start:.1f} s",
            file=sys.stderr,
        )
    return path


def measure(path: Path, samples: int) -> dict[str, Any]:
    archive = path.with_suffix(".nanover.zip")
    size = path.stat().st_size
    floor = min((in_subprocess("walk", str(path)) for _ in range(3)), key=lambda r: r["seconds"])
    conv = in_subprocess("convert", str(path), str(archive))
    exp = in_subprocess("export", str(archive), str(path.with_suffix(".back.log")))
    seek = in_subprocess("seek", str(archive), str(samples))
    archive.unlink()
    mb = size / 1e6
    return {
        "file": path.name,
        "size_mb": mb,
        "frames": conv["frames"],
        "walk_mb_s": mb / floor["seconds"],
        "convert_mb_s": mb / conv["seconds"],
        "convert_vs_walk": floor["seconds"] / conv["seconds"],
        "convert_rss_mb": conv["rss_mb"],
        "convert_anon_mb": conv["anon_mb"],
        "archive_ratio": conv["archive_size"] / size,
        "export_mb_s": mb / exp["seconds"],
        "export_identical": exp["identical"],
        "export_rss_mb": exp["rss_mb"],
        **seek,
        "seek_rss_mb": seek["rss_mb"],
        "seek_anon_mb": seek["anon_mb"],
    }


def table(rows: list[dict[str, Any]], command: str) -> str:
    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        platform.processor(),
    )
    small, large = rows[0], rows[-1]
    ratio = large["lazy_median_us"] / small["lazy_median_us"]
    lines = [
        START,
        "## CARLA convert / export / seek (`bench/bench_carla.py`)",
        "",
        f"Machine: {cpu}, {os.cpu_count()} cores, Python {platform.python_version()}. "
        f"Date: {datetime.date.today()}. Command: `{command}`. Recordings: synthetic, "
        f"family {FAMILY}, from `nanorec.converters.carla.generate` ({SCENE}).",
        "",
        "| recording | MB | frames | walk MB/s | convert MB/s (x walk) "
        "| convert MB peak RSS / anon | archive / source | export MB/s (peak RSS MB) | open ms "
        "| frame(n) median / p99 µs "
        "| frame(n) + all actors median / p99 µs | actors | seek MB peak RSS / anon |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['file']} | {r['size_mb']:.0f} | {r['frames']} | {r['walk_mb_s']:.0f} "
            f"| {r['convert_mb_s']:.0f} ({r['convert_vs_walk']:.2f}) "
            f"| {r['convert_rss_mb']:.0f} / {r['convert_anon_mb']:.0f} "
            f"| {r['archive_ratio']:.3f} | {r['export_mb_s']:.0f} ({r['export_rss_mb']:.0f}) "
            f"| {r['open_ms']:.1f} "
            f"| {r['lazy_median_us']:.0f} / {r['lazy_p99_us']:.0f} "
            f"| {r['full_median_us']:.0f} / {r['full_p99_us']:.0f} | {r['actors']} "
            f"| {r['seek_rss_mb']:.0f} / {r['seek_anon_mb']:.0f} |"
        )
    lines += [
        "",
        f"Seek median large/small: {ratio:.2f} (aim ≤ 1.5). Export byte-identical: "
        f'{all(r["export_identical"] for r in rows)}. "frame(n)" returns the world with '
        "actors built on first access; the next column also builds every actor. Peak RSS "
        "counts the file pages that mmap maps in (the kernel reclaims them at will); anon is "
        "the process's own memory.",
        END,
    ]
    return "\n".join(lines)


def write_results(text: str) -> None:
    old = RESULTS.read_text() if RESULTS.exists() else "# Benchmark results\n"
    if START in old and END in old:
        head, rest = old.split(START, 1)
        new = head + text + rest.split(END, 1)[1]
    else:
        new = old.rstrip("\n") + "\n\n" + text + "\n"
    RESULTS.write_text(new)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="64 MiB instead of 1 GiB")
    parser.add_argument("--samples", type=int, default=500, help="random seeks per file")
    parser.add_argument("--phase", help=argparse.SUPPRESS)
    parser.add_argument("args", nargs="*", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.phase:
        sys.path.insert(0, str(HERE.parent))
        phases = {
            "walk": lambda a: walk(Path(a[0])),
            "convert": lambda a: phase_convert(Path(a[0]), Path(a[1])),
            "export": lambda a: phase_export(Path(a[0]), Path(a[1])),
            "seek": lambda a: phase_seek(Path(a[0]), int(a[1])),
        }
        result = phases[options.phase](options.args)
        result["rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        result["anon_mb"] = anonymous_mb()
        print(json.dumps(result))
        return
    sys.path.insert(0, str(HERE.parent))
    large_size = (64 << 20) if options.quick else (1 << 30)
    rows = [
        measure(ensure_recording(10 << 20, f"carla-{FAMILY}-10MB.log"), options.samples),
        measure(
            ensure_recording(large_size, f"carla-{FAMILY}-{large_size >> 20}MB.log"),
            options.samples,
        ),
    ]
    command = "python bench/bench_carla.py" + (" --quick" if options.quick else "")
    text = table(rows, command)
    print(text)
    write_results(text)


if __name__ == "__main__":
    main()
