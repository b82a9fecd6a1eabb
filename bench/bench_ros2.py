"""Benchmark the ROS 2 bag converter against `rosbags`, side by side in one run.

Inputs, scaled to `--mb` (default ~1 GB), each a bag folder written by our generator as
rosbag2 writes them: sqlite3 storage and MCAP storage (the `mcap` package's writer, zstd
chunks), a robot with 640x480 camera images, odometry and status (few large messages), and
one of small messages only (odometry). For each:
- convert: MB/s and peak RSS (in a child process) vs `rosbags` reading every message (raw);
- random message read: median µs of `raw(n)` from the archive vs `rosbags` seeking one
  message by time (it has no read-by-number);
- info: `nanorec info` on the bag folder (its metadata.yaml, as `ros2 bag info`) vs
  `rosbags` opening the bag;
- export back byte for byte: MB/s.
Writes bench/RESULTS.md's ros2 section.

    python bench/bench_ros2.py            # ~1 GB inputs
    python bench/bench_ros2.py --mb 100   # quicker
    python bench/bench_ros2.py --mb 100 --only small --repeat 3   # small-message rows
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from results import write_section

from nanorec.contract import ExportRequest

HERE = Path(__file__).resolve().parent
START, END = "<!-- ros2:start -->", "<!-- ros2:end -->"


def make(folder: Path, mb: int, storage: str, image: int) -> None:
    from nanorec.converters.ros.ros2.generate import generate

    per_second = 0.0025 + (10 * (image * image * 3 // 4 + 120) / 1e6 if image else 0.0)  # MB
    generate(folder, seconds=mb / per_second, storage=storage, image=image)


def timed(action: Any) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def child_convert(source: Path, archive: Path) -> tuple[float, float, float]:
    """Convert in a child process: (seconds, CPU seconds of all its threads, peak RSS MB) of
    that process alone."""
    code = (
        "import sys, time\n"
        "from pathlib import Path\n"
        "from nanorec import registry\n"
        "from nanorec.contract import ConvertRequest\n"
        "t, c = time.perf_counter(), time.process_time()\n"
        "wanted = ConvertRequest(overwrite=True)\n"
        "registry.get('ros2').convert(Path(sys.argv[1]), Path(sys.argv[2]), wanted)\n"
        "peak = [l for l in open('/proc/self/status') if l.startswith('VmHWM')][0].split()[1]\n"
        "print(time.perf_counter() - t, time.process_time() - c, peak)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(source), str(archive)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    return float(out[0]), float(out[1]), float(out[2]) / 1024


def cpu_timed(action: Any) -> float:
    start = time.process_time()
    action()
    return time.process_time() - start


def measure(name: str, source: Path, work: Path, repeat: int = 1) -> dict[str, Any]:
    from rosbags.rosbag2 import Reader

    from nanorec import registry
    from nanorec.archive.reader import ArchiveReader

    size = sum(p.stat().st_size for p in source.iterdir())
    archive = work / "bag.nanover.zip"
    os.sync()

    def rosbags_read() -> int:
        with Reader(source) as reader:
            return sum(1 for _ in reader.messages())

    count = rosbags_read()
    # each side best of `repeat` (CPU: of 2 at least), the two alternating (A B A B)
    converts: list[tuple[float, float, float]] = []
    reads: list[float] = []
    read_cpus: list[float] = []
    for _ in range(max(2, repeat)):
        if len(converts) < repeat:
            converts.append(child_convert(source, archive))
        reads.append(timed(rosbags_read))
        read_cpus.append(cpu_timed(rosbags_read))
    convert_s = min(c[0] for c in converts)
    convert_cpu = min(c[1] for c in converts)
    rss = max(c[2] for c in converts)
    read_s, read_cpu = min(reads), min(read_cpus)
    with registry.open(archive) as rec:
        rng = random.Random(1)
        picks = [rng.randrange(len(rec)) for _ in range(2000)]
        samples = []
        for n in picks:
            start = time.perf_counter()
            rec.reader.raw(n)
            samples.append(time.perf_counter() - start)
        ours_random_us = statistics.median(samples) * 1e6
        stamps = [int(rec.meta.time[n]) for n in picks[:200]]  # type: ignore[attr-defined]
    theirs = []
    with Reader(source) as reader:
        for stamp in stamps:
            start = time.perf_counter()
            next(reader.messages(start=stamp))
            theirs.append(time.perf_counter() - start)
    rosbags_random_us = statistics.median(theirs) * 1e6
    info = [sys.executable, "-c", "from nanorec.cli import main; main()", "info", str(source)]
    info_s = min(
        timed(lambda: subprocess.run(info, check=True, capture_output=True)) for _ in range(3)
    )
    noop = [sys.executable, "-c", "import nanorec.cli, nanorec.converters.ros.ros2.cli"]
    start_s = min(timed(lambda: subprocess.run(noop, check=True)) for _ in range(3))

    def rosbags_open() -> None:
        with Reader(source):
            pass

    rosbags_open_s = min(timed(rosbags_open) for _ in range(3))
    back = work / "back"
    converter = registry.get("ros2")
    with ArchiveReader(archive) as archived:
        export_s = timed(lambda: converter.export(archived, back, ExportRequest(overwrite=True)))
        identical = converter.export(archived, back, ExportRequest(overwrite=True)).identical
    shutil.rmtree(back)
    return {
        "name": name,
        "mb": size / 1e6,
        "messages": count,
        "convert_s": convert_s,
        "convert_cpu": convert_cpu,
        "rss": rss,
        "read_s": read_s,
        "read_cpu": read_cpu,
        "ours_random_us": ours_random_us,
        "rosbags_random_us": rosbags_random_us,
        "info_ms": (info_s - start_s) * 1e3,
        "rosbags_open_ms": rosbags_open_s * 1e3,
        "export_s": export_s,
        "identical": identical,
        "archive_mb": archive.stat().st_size / 1e6,
    }


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| input | MB | messages | convert MB/s | peak RSS MB | rosbags read MB/s | ratio "
        "(rosbags read s / convert s) | CPU s: convert | rosbags read | ratio by CPU | "
        "archive / bag | random read µs: ours | rosbags (by "
        "time) | info ms | rosbags open ms | export MB/s | identical |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['name']} | {r['mb']:.0f} | {r['messages']} | "
            f"{r['mb'] / r['convert_s']:.0f} | {r['rss']:.0f} | {r['mb'] / r['read_s']:.0f} | "
            f"{r['read_s'] / r['convert_s']:.2f} | {r['convert_cpu']:.2f} | "
            f"{r['read_cpu']:.2f} | {r['read_cpu'] / r['convert_cpu']:.2f} | "
            f"{r['archive_mb'] / r['mb']:.2f} | "
            f"{r['ours_random_us']:.1f} | {r['rosbags_random_us']:.0f} | {r['info_ms']:.0f} | "
            f"{r['rosbags_open_ms']:.1f} | {r['mb'] / r['export_s']:.0f} | {r['identical']} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=1000, help="size of each input in MB")
    parser.add_argument(
        "--only",
        choices=("images", "small"),
        help="only these rows (printed; RESULTS.md is written by a run of every row)",
    )
    parser.add_argument(
        "--repeat", type=int, default=1, help="convert (and read) best of N, alternating"
    )
    args = parser.parse_args()
    rows = []
    inputs = [
        ("sqlite3, 640x480 images", "sqlite3", 640),
        ("MCAP (zstd chunks), 640x480 images", "mcap", 640),
        ("sqlite3, small messages", "sqlite3", 0),
        ("MCAP (zstd chunks), small messages", "mcap", 0),
    ]
    if args.only:
        inputs = [row for row in inputs if bool(row[2]) == (args.only == "images")]
    with tempfile.TemporaryDirectory(prefix="bench-ros2-", dir=HERE) as tmp:
        work = Path(tmp)
        for name, storage, image in inputs:
            source = work / "bag"
            make(source, args.mb if image else max(1, args.mb // 4), storage, image)
            rows.append(measure(name, source, work, args.repeat))
            print(rows[-1], flush=True)
            shutil.rmtree(source)
    if args.only:
        print(table(rows))
        return
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    text = (
        f"{START}\n## ROS 2 bags (`python bench/bench_ros2.py --mb {args.mb}`)\n\n"
        f"{stamp}, Python {platform.python_version()}, {platform.machine()}, "
        f"{os.cpu_count()} cores. Bag folders from our generator (small-message inputs are a "
        "quarter of --mb). Convert runs in a child process (its peak RSS); `rosbags` read = "
        "its Reader iterating every message's raw bytes (page cache warm for both); random "
        "read = median of `reader.raw(n)` for 2,000 random n, against rosbags' "
        "`messages(start=t)` for one message; info = `nanorec info BAG` (a process, its "
        "start-up subtracted) against rosbags opening the bag. CPU s: the convert's child "
        "process, every thread (`time.process_time()`), against rosbags reading in this "
        f"process; best of {max(2, args.repeat)} reads and {args.repeat} converts, "
        "alternating.\n\n"
        f"{table(rows)}\n{END}"
    )
    write_section(START, END, text)
    print(text)


if __name__ == "__main__":
    main()
