"""The ROS1 image bag against `rosbags` reading it, every way it has been measured (issue 33,
item 5): at each size, in-process and as a whole process, wall and CPU, best and median.

Input: our generator's synthetic robot bag (640x480 camera images, IMU, odometry, scans;
~1.95 MB a second), made once per size in `--work` and kept. The peer is `rosbags`' Reader
iterating every message's raw bytes. Ours is `registry.get("rosbag").convert` (the contract,
default compact layout) in-process, and `nanorec convert BAG -o OUT --force` as a process;
the peer as a process is `python -c` importing rosbags and reading the bag. Every round runs
the four measures of every size in turn (A B A B: the machine is shared); the page cache is
warm for both (an untimed pass first). Wall seconds from `time.perf_counter`, CPU seconds
(user + system, every thread) from `time.process_time` in-process and `RUSAGE_CHILDREN` for
a process. ratio = rosbags s / ours s (the issue's aim: >= 1.0). Writes the `rosbag-image`
section of RESULTS.md.

    python bench/bench_rosbag_image.py                    # 100 and 300 MB, 5 rounds
    python bench/bench_rosbag_image.py --mb 100 --runs 3
"""

from __future__ import annotations

import argparse
import compileall
import datetime
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench_rosbag import synthetic
from results import write_section

from nanorec.contract import ConvertRequest

REPO = Path(__file__).resolve().parent.parent
START, END = "<!-- rosbag-image:start -->", "<!-- rosbag-image:end -->"
#: What the peer does as a process: import rosbags, read every message of argv[1].
_ROSBAGS_READ = (
    "import sys\n"
    "from rosbags.rosbag1 import Reader\n"
    "with Reader(sys.argv[1]) as reader:\n"
    "    for _ in reader.messages():\n"
    "        pass\n"
)

#: (wall s, CPU s) of one measure.
Sample = tuple[float, float]


def _in_process(action: Callable[[], object]) -> Sample:
    wall, cpu = time.perf_counter(), time.process_time()
    action()
    return time.perf_counter() - wall, time.process_time() - cpu


def _process(command: Sequence[str]) -> Sample:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = time.perf_counter()
    subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    wall = time.perf_counter() - wall
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def measures(source: Path, work: Path) -> dict[str, Callable[[], Sample]]:
    """The four measures of one bag: ours and the peer's, in-process and as a process."""
    from rosbags.rosbag1 import Reader

    from nanorec import registry

    converter = registry.get("rosbag")
    archive = work / f"{source.stem}.nanover.zip"
    convert = [str(Path(sys.executable).parent / "nanorec"), "convert", str(source)]

    def ours() -> None:
        converter.convert(source, archive, ConvertRequest(overwrite=True))

    def theirs() -> None:
        with Reader(source) as reader:
            for _ in reader.messages():
                pass

    return {
        "ours in-process": lambda: _in_process(ours),
        "rosbags in-process": lambda: _in_process(theirs),
        "ours process": lambda: _process([*convert, "-o", str(archive), "--force"]),
        "rosbags process": lambda: _process([sys.executable, "-c", _ROSBAGS_READ, str(source)]),
    }


def rows(mb: int, size: float, samples: dict[str, list[Sample]]) -> list[dict[str, Any]]:
    out = []
    for way in ("in-process", "process"):
        ours, theirs = samples[f"ours {way}"], samples[f"rosbags {way}"]
        for name, pick in (("best", min), ("median", statistics.median)):
            row: dict[str, Any] = {"bag": f"{mb} MB ({size:.1f} MB)", "how": f"{way}, {name}"}
            for k, clock in ((0, "wall"), (1, "CPU")):
                mine, peer = pick(s[k] for s in ours), pick(s[k] for s in theirs)
                row[f"ours {clock} s"] = round(mine, 3)
                row[f"rosbags {clock} s"] = round(peer, 3)
                row[f"ratio {clock}"] = round(peer / mine, 2)
            out.append(row)
    return out


def _table(table: list[dict[str, Any]]) -> list[str]:
    header = list(table[0])
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(row[key]) for key in header) + " |" for row in table]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, nargs="+", default=[100, 300], help="bag sizes, MB")
    parser.add_argument("--runs", type=int, default=5, help="alternating rounds")
    parser.add_argument("--work", type=Path, default=Path("/tmp/nanorec-bench-image"))
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    # compiled first, as pip leaves an installed package: with PYTHONDONTWRITEBYTECODE set
    # (as on the bench machine) every `nanorec convert` compiled its modules from source,
    # ~0.7 s of CPU that no installed nanorec pays (see the section's notes)
    for folder in ("nanorec", "converters"):
        compileall.compile_dir(REPO / folder, quiet=1)
    bags = {}
    for mb in args.mb:
        source = args.work / f"image{mb}.bag"
        if not source.exists():
            synthetic(source, mb)
        bags[mb] = (source, measures(source, args.work))
    os.sync()  # the generated bags' pages written back before anything is timed
    for _, ways in bags.values():  # untimed: imports, the page cache, the deflating threads
        for measure in ways.values():
            measure()
    samples: dict[int, dict[str, list[Sample]]] = {mb: {} for mb in bags}
    for round_number in range(args.runs):
        for mb, (_, ways) in bags.items():
            for name, measure in ways.items():
                samples[mb].setdefault(name, []).append(measure())
        print(f"round {round_number + 1}: {samples}", file=sys.stderr)
    table = [
        row
        for mb, (source, _) in bags.items()
        for row in rows(mb, source.stat().st_size / 1e6, samples[mb])
    ]
    load = os.getloadavg()[0]
    text = "\n".join(
        [
            START,
            "## ROS1 image bag against `rosbags`, every way (issue 33, item 5)",
            "",
            f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python "
            f"{platform.python_version()}, load average {load:.1f} at the end. Date: "
            f"{datetime.date.today()}. Command: `python bench/bench_rosbag_image.py --mb "
            f"{' '.join(map(str, args.mb))} --runs {args.runs}`. Our generator's bag (640x480 "
            "images); ours: `registry.get('rosbag').convert` in-process, `nanorec convert "
            "BAG -o OUT --force` as a process (compact layout, synced); rosbags: its Reader "
            "iterating every raw message, in-process and as `python -c` (imports included "
            "on both sides, modules compiled first as an installed package's are). CPU = "
            "user + system of every thread. ratio = rosbags s / ours s "
            f"(aim >= 1.0); best and median of {args.runs} alternating rounds, page cache "
            "warm.",
            "",
            *_table(table),
            END,
        ]
    )
    write_section(START, END, text)
    print(text)


if __name__ == "__main__":
    main()
