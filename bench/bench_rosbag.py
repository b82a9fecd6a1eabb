"""Benchmark the ROS bag converter against `rosbags`, side by side in one run.

Inputs, scaled to `--mb` (default ~1 GB): a synthetic robot bag of our generator (IMU,
odometry, scans, point clouds, 640x480 camera images: few large messages), and the real
rosbag.js example bag's messages repeated in time (many small messages). For each:
- convert: MB/s, messages/s and peak RSS (in a child process) vs `rosbags` reading every
  message (raw) and reading + deserialising every message;
- decode every message: our generated decoders vs `rosbags`' deserialize_ros1;
- random message read: median µs of `raw(n)` from the archive vs `rosbags` seeking one
  message by time (it has no read-by-number);
- info: reading the bag's index as `rosbag info` does, vs `rosbags` opening the bag;
- export back byte for byte: MB/s.
Writes bench/RESULTS.md's rosbag section.

    python bench/bench_rosbag.py            # ~1 GB inputs
    python bench/bench_rosbag.py --mb 100   # quicker
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import random
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
REAL = HERE.parent.parent / "shared" / "realdata" / "rosbag"
START, END = "<!-- rosbag:start -->", "<!-- rosbag:end -->"


def synthetic(path: Path, mb: int) -> None:
    from nanorec.converters.ros.ros1.generate import generate

    generate(path, seconds=mb / 1.95, image=640)  # ~1.95 MB of messages per second


def tiled_real(path: Path, mb: int) -> None:
    """The real example bag's messages, repeated with shifted times up to `mb` MB."""
    from nanorec import registry
    from nanorec.archive.atomic import atomic_output
    from nanorec.converters.ros.ros1.archived import payload
    from nanorec.converters.ros.ros1.writer import BagWriter

    source = REAL / "rosbagjs_example.bag"
    with registry.open(source) as rec, atomic_output(path, overwrite=True) as stream:
        meta = rec.meta  # type: ignore[attr-defined]
        bag = BagWriter(stream)
        for conn in meta.connections.values():
            bag.add_connection(conn.id, conn.topic, conn.fields)
        messages = [
            (int(meta.conn[n]), int(meta.time[n]), bytes(payload(rec.reader, n)["data"]))
            for n in range(len(rec))
        ]
        span = messages[-1][1] - messages[0][1] + 10_000_000
        size = sum(len(m[2]) + 40 for m in messages)
        for copy in range(max(1, mb * 1_000_000 // size)):
            for conn, ns, data in messages:
                bag.write(conn, ns + copy * span, data)
        bag.close()


def timed(action: Any) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def child_convert(source: Path, archive: Path) -> tuple[float, float]:
    """Convert in a child process: (seconds, peak RSS MB) of that process alone (VmHWM:
    getrusage's maxrss would include the parent's RSS at fork time). Like `rosbags`' read,
    timed warm: the converter's modules are imported first, and the faster of two
    conversions is kept."""
    code = (
        "import sys, time\n"
        "from pathlib import Path\n"
        "from nanorec import registry\n"
        "from nanorec.contract import ConvertRequest\n"
        "import nanorec.converters.ros.ros1.convert\n"
        "converter = registry.get('rosbag')\n"
        "best = float('inf')\n"
        "for _ in range(2):\n"
        "    t = time.perf_counter()\n"
        "    wanted = ConvertRequest(overwrite=True)\n"
        "    converter.convert(Path(sys.argv[1]), Path(sys.argv[2]), wanted)\n"
        "    best = min(best, time.perf_counter() - t)\n"
        "peak = [l for l in open('/proc/self/status') if l.startswith('VmHWM')][0].split()[1]\n"
        "print(best, peak)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(source), str(archive)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    return float(out[0]), float(out[1]) / 1024


def measure(name: str, source: Path, work: Path) -> dict[str, Any]:
    from rosbags.rosbag1 import Reader
    from rosbags.typesys import Stores, get_types_from_msg, get_typestore

    from nanorec import registry
    from nanorec.archive.reader import ArchiveReader

    size = source.stat().st_size
    archive = work / "bag.nanover.zip"
    os.sync()
    convert_s, rss = child_convert(source, archive)

    def rosbags_read() -> int:
        with Reader(source) as reader:
            return sum(1 for _ in reader.messages())

    store = get_typestore(Stores.EMPTY)

    def rosbags_decode() -> None:
        with Reader(source) as reader:
            for c in reader.connections:
                store.register(get_types_from_msg(c.msgdef.data, c.msgtype))
            for c, _, raw in reader.messages():
                store.deserialize_ros1(raw, c.msgtype)  # kept by neither side: no list

    count = rosbags_read()
    read_s = min(timed(rosbags_read) for _ in range(2))
    rosbags_decode_s = timed(rosbags_decode)
    with registry.open(archive) as rec:

        def ours_decode() -> None:
            for n in range(len(rec)):
                rec.decode(n)

        ours_decode_s = timed(ours_decode)
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
    from nanorec.converters.ros.ros1.index import read_index

    info_s = min(timed(lambda: read_index(source)) for _ in range(3))
    freq_s = min(timed(lambda: read_index(source, entries=True)) for _ in range(3))

    def rosbags_open() -> None:
        with Reader(source):
            pass

    rosbags_open_s = min(timed(rosbags_open) for _ in range(3))
    back = work / "back.bag"
    converter = registry.get("rosbag")
    with ArchiveReader(archive) as reader:
        export_s = timed(lambda: converter.export(reader, back, ExportRequest(overwrite=True)))
    assert back.read_bytes() == source.read_bytes() if size < 2 << 30 else True
    return {
        "name": name,
        "mb": size / 1e6,
        "messages": count,
        "convert_s": convert_s,
        "rss": rss,
        "read_s": read_s,
        "rosbags_decode_s": rosbags_decode_s,
        "ours_decode_s": ours_decode_s,
        "ours_random_us": ours_random_us,
        "rosbags_random_us": rosbags_random_us,
        "info_ms": info_s * 1e3,
        "freq_ms": freq_s * 1e3,
        "rosbags_open_ms": rosbags_open_s * 1e3,
        "export_s": export_s,
        "archive_mb": archive.stat().st_size / 1e6,
    }


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| input | MB | messages | convert MB/s | convert msg/s | peak RSS MB | rosbags read "
        "MB/s | ratio (rosbags read s / convert s) | decode all: ours s | rosbags s | "
        "random read µs: ours | rosbags (by time) | info ms | info --freq ms | rosbags open "
        "ms | export MB/s |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['name']} | {r['mb']:.0f} | {r['messages']} | "
            f"{r['mb'] / r['convert_s']:.0f} | {r['messages'] / r['convert_s']:.0f} | "
            f"{r['rss']:.0f} | {r['mb'] / r['read_s']:.0f} | {r['read_s'] / r['convert_s']:.2f} | "
            f"{r['ours_decode_s']:.2f} | {r['rosbags_decode_s']:.2f} | "
            f"{r['ours_random_us']:.1f} | {r['rosbags_random_us']:.0f} | {r['info_ms']:.1f} | "
            f"{r['freq_ms']:.1f} | {r['rosbags_open_ms']:.1f} | {r['mb'] / r['export_s']:.0f} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=1000, help="size of each input in MB")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-rosbag-", dir=HERE) as tmp:
        work = Path(tmp)
        inputs: list[tuple[str, Any]] = [("synthetic robot (640x480 images)", synthetic)]
        if (REAL / "rosbagjs_example.bag").is_file():
            inputs.append(("real rosbag.js example, tiled (small messages)", tiled_real))
        for name, make in inputs:
            source = work / "input.bag"
            make(source, args.mb)
            rows.append(measure(name, source, work))
            print(rows[-1], flush=True)
            source.unlink()
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    text = (
        f"{START}\n## ROS bags (`python bench/bench_rosbag.py --mb {args.mb}`)\n\n"
        f"{stamp}, Python {platform.python_version()}, {platform.machine()}, "
        f"{os.cpu_count()} cores. Convert runs in a child process (its peak RSS), its modules "
        "imported first, the faster of two; `rosbags` read = its Reader iterating every "
        "message's raw bytes, the faster of two after one untimed (page cache warm for both); "
        "decode all = every message deserialised (ours: generated decoders over the archive; "
        "rosbags: deserialize_ros1 over the bag); random read = median of `reader.raw(n)` "
        "for 2,000 random n, against rosbags' `messages(start=t)` for one message; info = "
        "reading the index as `rosbag info` does (no decompression).\n\n"
        f"{table(rows)}\n{END}"
    )
    write_section(START, END, text)
    print(text)


if __name__ == "__main__":
    main()
