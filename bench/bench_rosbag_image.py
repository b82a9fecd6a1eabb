"""Quick A/B timing of the large-message ROS1 convert against `rosbags` reading the same bag.

    python bench/bench_rosbag_image.py --mb 300 --runs 3

Generates the synthetic image bag once (kept in --work), then alternates: our convert (child
process) and rosbags reading every message; prints each run and the best of each.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from bench_rosbag import child_convert, synthetic


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mb", type=int, default=300)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--work", type=Path, default=Path("/tmp/nanorec-bench-image"))
    args = parser.parse_args()
    from rosbags.rosbag1 import Reader

    args.work.mkdir(parents=True, exist_ok=True)
    source = args.work / f"image{args.mb}.bag"
    if not source.exists():
        synthetic(source, args.mb)
    size = source.stat().st_size / 1e6
    ours, theirs = [], []
    for _ in range(args.runs):
        ours.append(child_convert(source, args.work / "out.zip")[0])
        start = time.perf_counter()
        with Reader(source) as reader:
            for _ in reader.messages():
                pass
        theirs.append(time.perf_counter() - start)
        print(f"convert {size / ours[-1]:.0f} MB/s  rosbags read {size / theirs[-1]:.0f} MB/s")
    best, ref = min(ours), min(theirs)
    ratio = ref / best
    print(f"best: convert {size / best:.0f} MB/s, rosbags {size / ref:.0f} MB/s, ratio {ratio:.2f}")


if __name__ == "__main__":
    main()
