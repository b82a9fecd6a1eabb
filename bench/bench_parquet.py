"""Benchmark `nanorec export --format parquet` in MB/s of source, every format (issue 39
item 9's aim: >= 25 MB/s, binary payloads as Arrow binary).

Generates (or reuses, in bench/out/) a ROS 2 bag with 640x480 mono8 images (sqlite3), one of
small messages only, a ROS1 bag with 640x480 rgb8 images, one of small messages, a synthetic
CARLA log and a synthetic pbstream, converts each once, then measures `export_parquet` from
the archive, alternating A B A B with an anchor in the same run:
- ROS bags: `rosbags` reading every message of the native bag and
  `pyarrow.parquet.write_table` of (topic, time, raw payload as binary): the least a
  Parquet of the payloads costs, without decoding a field;
- CARLA and pbstream (no peer reader): the archive's raw messages, read by number, written
  the same way.
Best run by CPU time (user+system of this process: the machine is shared). The real
pbstream files of ../shared/realdata are measured too. Writes bench/RESULTS.md's `parquet`
section.

    python bench/bench_parquet.py [--mb 150] [--rounds 2]
"""

from __future__ import annotations

import argparse
import datetime
import platform
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench_bridge import timed
from bench_crossing import size_of
from results import write_section

from nanorec.contract import ConvertRequest

HERE = Path(__file__).resolve().parent
OUT = HERE / "out"
REAL = HERE.parent.parent / "shared" / "realdata" / "pbstream"
START, END = "<!-- parquet:start -->", "<!-- parquet:end -->"
SCENE = {"vehicles": 120, "walkers": 60, "traffic_lights": 40}


def ros2_bag(mb: int) -> Path:
    from nanorec.converters.ros.ros2.generate import generate

    path = OUT / f"parquet-ros2-image-{mb}MB"
    if not path.exists():
        OUT.mkdir(exist_ok=True)
        generate(path, seconds=mb / 3.1, storage="sqlite3", image=640)  # ~3.1 MB a second
    return path


def ros2_small(seconds: int) -> Path:
    """Small messages only (poses at 20 Hz, a status at 1 Hz): the per-message path."""
    from nanorec.converters.ros.ros2.generate import generate

    path = OUT / f"parquet-ros2-small-{seconds}s"
    if not path.exists():
        OUT.mkdir(exist_ok=True)
        generate(path, seconds=seconds, storage="sqlite3")
    return path


def ros1_small(seconds: int) -> Path:
    """The ROS1 generator's robot without large images (Imu at 100 Hz, Odometry, LaserScan,
    32-pixel images, strings): small messages, ~0.13 MB a second."""
    from nanorec.converters.ros.ros1.generate import generate

    path = OUT / f"parquet-ros1-small-{seconds}s.bag"
    if not path.exists():
        OUT.mkdir(exist_ok=True)
        generate(path, seconds=seconds, image=32)
    return path


def ros1_bag(mb: int) -> Path:
    from nanorec.converters.ros.ros1.generate import generate

    path = OUT / f"parquet-ros1-image-{mb}MB.bag"
    if not path.exists():
        OUT.mkdir(exist_ok=True)
        generate(path, seconds=mb / 1.95, image=640)  # ~1.95 MB a second
    return path


def carla_log(mb: int) -> Path:
    from nanorec.converters.carla.generate import generate_to

    path = OUT / f"export-carla-0.9.16-{mb}MB.log"  # bench_export.py's
    if not path.exists():
        OUT.mkdir(exist_ok=True)
        generate_to(path, "0.9.16", target_bytes=mb * 1_000_000, **SCENE)
    return path


def pbstream(nodes: int) -> Path:
    from nanorec.converters.pbstream.generate import Plan, generate

    path = OUT / f"parquet-pbstream-{nodes}-nodes.pbstream"
    if not path.exists():
        OUT.mkdir(exist_ok=True)
        generate(path, Plan(trajectories=2, nodes=nodes, grid_cells=200))
    return path


def write_payloads(out: Path, topics: list[str], times: list[int], data: list[bytes]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table(
        {
            "topic": pa.array(topics, pa.string()),
            "time_ns": pa.array(times, pa.int64()),
            "data": pa.array(data, pa.binary()),
        }
    )
    pq.write_table(table, out)


def rosbags_anchor(source: Path, out: Path) -> None:
    """rosbags reads every raw message; pyarrow writes them (chunks of ~64 MB)."""
    if source.is_dir():
        from rosbags.rosbag2 import Reader as Reader2

        opened: Any = Reader2(source)
    else:
        from rosbags.rosbag1 import Reader as Reader1

        opened = Reader1(source)
    topics: list[str] = []
    times: list[int] = []
    data: list[bytes] = []
    size = part = 0
    with opened as reader:
        for connection, ns, raw in reader.messages():
            topics.append(connection.topic)
            times.append(ns)
            data.append(raw)
            size += len(raw)
            if size >= 64 << 20:
                write_payloads(out / f"{part}.parquet", topics, times, data)
                topics, times, data, size, part = [], [], [], 0, part + 1
    write_payloads(out / f"{part}.parquet", topics, times, data)


def archive_anchor(archive: Path, out: Path) -> None:
    """The archive's raw messages by number, written by pyarrow (chunks of ~64 MB)."""
    from nanorec.archive.reader import ArchiveReader

    with ArchiveReader(archive) as reader:
        stamps = reader.index.timestamp_us.tolist()
        topics: list[str] = []
        times: list[int] = []
        data: list[bytes] = []
        size = part = 0
        for number in range(len(reader)):
            raw = reader.raw(number)
            topics.append("")
            times.append(stamps[number] * 1000)
            data.append(raw)
            size += len(raw)
            if size >= 64 << 20:
                write_payloads(out / f"{part}.parquet", topics, times, data)
                topics, times, data, size, part = [], [], [], 0, part + 1
        write_payloads(out / f"{part}.parquet", topics, times, data)


def ours(archive: Path, out: Path) -> None:
    from nanorec import registry
    from nanorec.outputs.arrow import export_parquet

    with registry.open(archive) as recording:
        export_parquet(recording, out, overwrite=True)


def measure(
    label: str, source: Path, archive: Path, anchor: str, rounds: int, folder: Path
) -> list[str]:
    """A B A B: ours and the anchor, best CPU seconds of each."""
    size = size_of(source) / 1e6
    mine: list[float] = []
    theirs: list[float] = []
    for _ in range(rounds):
        mine.append(timed(lambda: ours(archive, folder / "ours")))
        anchor_out = folder / "anchor"
        shutil.rmtree(anchor_out, ignore_errors=True)
        anchor_out.mkdir()
        if anchor == "rosbags":
            theirs.append(timed(lambda: rosbags_anchor(source, anchor_out)))  # noqa: B023
        else:
            theirs.append(timed(lambda: archive_anchor(archive, anchor_out)))  # noqa: B023
    parquet = sum(p.stat().st_size for p in (folder / "ours").glob("*.parquet")) / 1e6
    a, b = min(mine), min(theirs)
    name = "rosbags read + pyarrow write" if anchor == "rosbags" else "raw archive messages"
    rows = [
        f"| {label}: nanorec export parquet | {size:.1f} | {parquet:.1f} | {a:.2f} | "
        f"**{size / a:.1f}** |",
        f"| {label}: anchor, {name} | {size:.1f} | | {b:.2f} | {size / b:.1f} |",
    ]
    for row in rows:
        print(row, flush=True)
    return rows


def convert(source: Path, archive: Path) -> None:
    from nanorec import registry

    converter = registry.for_native(source)
    converter.convert(source, archive, ConvertRequest(overwrite=True))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=150, help="synthetic source size, MB")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--only", help="formats to run, comma-separated (no RESULTS)")
    args = parser.parse_args()
    import pyarrow.parquet  # noqa: F401  (imports outside the timings)
    import rosbags.rosbag1
    import rosbags.rosbag2  # noqa: F401

    sources: list[tuple[str, Callable[[], Path], str]] = [
        ("ros2", lambda: ros2_bag(args.mb), "rosbags"),
        ("ros2-small", lambda: ros2_small(1500), "rosbags"),
        ("ros1", lambda: ros1_bag(args.mb), "rosbags"),
        ("ros1-small", lambda: ros1_small(600), "rosbags"),
        ("carla", lambda: carla_log(args.mb), "archive"),
        ("pbstream", lambda: pbstream(2000), "archive"),
    ]
    wanted = set(args.only.split(",")) if args.only else None
    rows: list[str] = []
    with tempfile.TemporaryDirectory(prefix="bench-parquet-") as tmp:
        folder = Path(tmp)
        for label, make, anchor in sources:
            if wanted is not None and label not in wanted:
                continue
            source = make()
            archive = folder / "source.nanover.zip"
            convert(source, archive)
            rows += measure(f"{label} {source.name}", source, archive, anchor, args.rounds, folder)
        if wanted is None or "pbstream" in wanted:
            for path in sorted(REAL.glob("*.pbstream")) if REAL.is_dir() else []:
                archive = folder / "real.nanover.zip"
                convert(path, archive)
                rows += measure(f"real {path.name}", path, archive, "archive", args.rounds, folder)
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    command = f"python bench/bench_parquet.py --mb {args.mb} --rounds {args.rounds}"
    text = (
        f"{START}\n## Parquet export, every format, MB/s of source (`{command}`)\n\n"
        f"{stamp}, Python {platform.python_version()}, {platform.machine()}; ours and the "
        f"anchor alternate A B A B, best of {args.rounds} by CPU time (user+system of this "
        "process: the machine is shared). MB/s = source MB / CPU s. Aim (issue 39 item 9): "
        ">= 25 MB/s, `uint8[]` payloads as Arrow binary.\n\n"
        "| run | source MB | parquet MB | CPU s | MB/s (CPU) |\n|---|---|---|---|---|\n"
        + "\n".join(rows)
        + f"\n{END}"
    )
    print(text)
    if wanted is None:
        write_section(START, END, text)


if __name__ == "__main__":
    main()
