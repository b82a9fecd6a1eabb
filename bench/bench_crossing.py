"""Benchmark crossing between ROS1 and ROS 2 bags: `nanorec export` against `rosbags-convert`.

Inputs: a synthetic ROS1 bag of our generator with 640x480 camera images (few large messages,
~`--mb-large` MB), one with an empty camera image (`image=0`: IMU, odometry, scans, small
point clouds, logs: many small messages, ~`--mb-small` MB), and the real rosbag.js example bag
when present (0.87 MB: start-up dominates). For each, every command runs in its own process
(wall time and peak RSS from `/usr/bin/time`), the commands of one row alternating A B A B
for `--rounds` rounds, page cache warm:

- ROS1 -> ROS 2, sqlite3: `rosbags-convert --src X.bag --dst OUT` (sqlite3, its default)
  against `nanorec export X.bag --format ros2 -o OUT` (the native bag: includes converting it
  to a temporary archive) and `nanorec export X.nanover.zip --format ros2 -o OUT` (an archive
  made beforehand by `nanorec convert`);
- ROS1 -> ROS 2, MCAP: the same with `--storage mcap`, against
  `rosbags-convert --dst-storage mcap --compress zstd --compress-mode storage` (zstd chunks,
  as nanorec writes them; without it rosbags writes an uncompressed MCAP);
- ROS 2 -> ROS1: the sqlite3 ROS 2 bag nanorec wrote above, `rosbags-convert --src DIR --dst
  Y.bag` against `nanorec export DIR --format ros1 -o Y.bag`.

MB/s is of the source bag (the ROS1 bag's size for the forward rows, also those reading the
archive; the ROS 2 bag folder's for the reverse); ratio = rosbags s / nanorec s (median of the
rounds; > 1: nanorec faster). Writes bench/RESULTS.md's crossing section.

    python bench/bench_crossing.py                             # ~200 MB and ~50 MB inputs
    python bench/bench_crossing.py --mb-large 20 --mb-small 5  # quicker
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from results import write_section

HERE = Path(__file__).resolve().parent
REAL = HERE.parent.parent / "shared" / "realdata" / "rosbag" / "rosbagjs_example.bag"
START, END = "<!-- crossing:start -->", "<!-- crossing:end -->"
BIN = Path(sys.executable).parent
NANOREC = str(BIN / "nanorec")


def rosbags_convert() -> str:
    """The `rosbags-convert` beside this Python, else the main checkout's, else on PATH."""
    for candidate in (BIN / "rosbags-convert", HERE.parents[2] / "main/.venv/bin/rosbags-convert"):
        if candidate.exists():
            return str(candidate)
    found = shutil.which("rosbags-convert")
    if not found:
        sys.exit("rosbags-convert not found")
    return found


def rosbags_version(exe: str) -> str:
    python = Path(exe).parent / "python"
    code = "from importlib.metadata import version; print(version('rosbags'))"
    out = subprocess.run([str(python), "-c", code], capture_output=True, text=True)
    return out.stdout.strip() or "?"


def size_of(path: Path) -> int:
    if path.is_dir():
        return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
    return path.stat().st_size


def remove(path: Path) -> None:
    if path.is_dir():
        shutil.rmtree(path)
    elif path.exists():
        path.unlink()


def run(command: list[str], output: Path, work: Path) -> tuple[float, float, int]:
    """Run `command` (after removing `output`) under /usr/bin/time: (wall s, peak RSS MB,
    output bytes)."""
    remove(output)
    stats = work / "time.txt"
    start = time.perf_counter()
    done = subprocess.run(
        ["/usr/bin/time", "-f", "%M", "-o", str(stats), *command],
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{done.stderr[-2000:]}")
    rss = int(stats.read_text().split()[-1]) / 1024
    return wall, rss, size_of(output)


def alternate(
    commands: dict[str, tuple[list[str], Path]], rounds: int, work: Path
) -> dict[str, dict[str, float]]:
    """Run the commands in turn, A B C A B C..., `rounds` times: per command the median wall
    time, the largest peak RSS and the output's size."""
    samples: dict[str, list[tuple[float, float, int]]] = {name: [] for name in commands}
    for _ in range(rounds):
        for name, (command, output) in commands.items():
            samples[name].append(run(command, output, work))
    for _, output in commands.values():
        remove(output)
    return {
        name: {
            "s": statistics.median(s[0] for s in got),
            "rss": max(s[1] for s in got),
            "out_mb": got[-1][2] / 1e6,
        }
        for name, got in samples.items()
    }


def measure(name: str, bag: Path, work: Path, rounds: int, rosbags: str) -> list[dict[str, Any]]:
    archive = work / "in.nanover.zip"
    subprocess.run(
        [NANOREC, "convert", str(bag), "-o", str(archive), "--force"],
        check=True,
        capture_output=True,
    )
    ros2 = work / "ros2"  # the sqlite3 ROS 2 bag of the reverse rows
    subprocess.run(
        [NANOREC, "export", str(archive), "--format", "ros2", "-o", str(ros2), "--force"],
        check=True,
        capture_output=True,
    )
    bag_mb, ros2_mb = size_of(bag) / 1e6, size_of(ros2) / 1e6
    out = work / "out"
    out_bag = work / "out.bag"
    rows = []

    def row(label: str, mb: float, theirs: dict[str, float], ours: dict[str, float]) -> None:
        rows.append({"input": name, "row": label, "mb": mb, "theirs": theirs, "ours": ours})
        print(rows[-1], flush=True)

    for storage, extra_theirs in (
        ("sqlite3", []),
        ("mcap", ["--dst-storage", "mcap", "--compress", "zstd", "--compress-mode", "storage"]),
    ):
        extra_ours = ["--storage", storage] if storage == "mcap" else []
        got = alternate(
            {
                "rosbags": ([rosbags, "--src", str(bag), "--dst", str(out), *extra_theirs], out),
                "bag": (
                    [NANOREC, "export", str(bag), "--format", "ros2", "-o", str(out), *extra_ours],
                    out,
                ),
                "archive": (
                    [
                        NANOREC,
                        "export",
                        str(archive),
                        "--format",
                        "ros2",
                        "-o",
                        str(out),
                        *extra_ours,
                    ],
                    out,
                ),
            },
            rounds,
            work,
        )
        row(f"ROS1 -> ROS 2 {storage}, nanorec from the .bag", bag_mb, got["rosbags"], got["bag"])
        row(
            f"ROS1 -> ROS 2 {storage}, nanorec from the archive",
            bag_mb,
            got["rosbags"],
            got["archive"],
        )
    got = alternate(
        {
            "rosbags": ([rosbags, "--src", str(ros2), "--dst", str(out_bag)], out_bag),
            "ours": (
                [NANOREC, "export", str(ros2), "--format", "ros1", "-o", str(out_bag)],
                out_bag,
            ),
        },
        rounds,
        work,
    )
    row("ROS 2 sqlite3 -> ROS1", ros2_mb, got["rosbags"], got["ours"])
    remove(archive)
    remove(ros2)
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| input | direction | source MB | rosbags s | rosbags MB/s | rosbags RSS MB | "
        "nanorec s | nanorec MB/s | nanorec RSS MB | ratio (rosbags s / nanorec s) | "
        "output MB: rosbags / nanorec |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        t, o = r["theirs"], r["ours"]
        lines.append(
            f"| {r['input']} | {r['row']} | {r['mb']:.1f} | {t['s']:.2f} | "
            f"{r['mb'] / t['s']:.1f} | {t['rss']:.0f} | {o['s']:.2f} | {r['mb'] / o['s']:.1f} | "
            f"{o['rss']:.0f} | {t['s'] / o['s']:.2f} | {t['out_mb']:.1f} / {o['out_mb']:.1f} |"
        )
    return "\n".join(lines)


def main() -> None:
    from nanorec.converters.ros.ros1.generate import generate

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb-large", type=float, default=200, help="MB of the image bag")
    parser.add_argument("--mb-small", type=float, default=50, help="MB of the small bag")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    rosbags = rosbags_convert()
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench-crossing-", dir=HERE) as tmp:
        work = Path(tmp)
        bag = work / "in.bag"
        # ~1.95 MB/s with 640x480 images at 2 Hz; ~0.11 MB/s without (image=0)
        inputs: list[tuple[str, Any]] = [
            ("640x480 images", lambda: generate(bag, seconds=args.mb_large / 1.95, image=640)),
            ("small messages", lambda: generate(bag, seconds=args.mb_small / 0.11, image=0)),
        ]
        if REAL.exists():
            inputs.append(("rosbagjs_example.bag (real)", lambda: shutil.copy(REAL, bag)))
        for name, make in inputs:
            make()
            count = subprocess.run(
                [NANOREC, "info", str(bag)], capture_output=True, text=True
            ).stdout
            print(name, size_of(bag) / 1e6, "MB", flush=True)
            print(count[:400], flush=True)
            rows.extend(measure(name, bag, work, args.rounds, rosbags))
            remove(bag)
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    text = (
        f"{START}\n## ROS1 <-> ROS 2 crossing (`python bench/bench_crossing.py --mb-large "
        f"{args.mb_large:g} --mb-small {args.mb_small:g}`)\n\n"
        f"{stamp}, Python {platform.python_version()}, {platform.machine()}, "
        f"{os.cpu_count()} cores, rosbags {rosbags_version(rosbags)}. Every command is a "
        "process (start-up included), wall time the median of "
        f"{args.rounds} rounds run alternately, peak RSS from /usr/bin/time. rosbags-convert "
        "writes sqlite3 by default; its MCAP rows use `--dst-storage mcap --compress zstd "
        "--compress-mode storage` (zstd chunks, as nanorec writes MCAP). rosbags-convert "
        "copies the ROS1 definitions as they are (header.seq stays, types keep their ROS1 "
        "fields), nanorec maps them to the ROS 2 types. 'from the .bag' includes nanorec "
        "converting the bag to a temporary archive; 'from the archive' starts from one made "
        "beforehand. The reverse rows read the sqlite3 ROS 2 bag nanorec wrote. MB/s of the "
        "source bag; ratio > 1: nanorec faster.\n\n"
        f"{table(rows)}\n{END}"
    )
    write_section(START, END, text)
    print(text)


if __name__ == "__main__":
    main()
