"""Benchmark the compact layout against the stored one on the real recordings.

For every real recording in `../shared/realdata` (CARLA, ROS bags, pbstream), side by side in
one run, both layouts: archive / source size, convert and byte-exact export time (best of
`--repeat`, alternating layouts), random message reads (`ArchiveReader.raw`, messages up to
64 KiB: median / p99 µs over the same message numbers) and, for CARLA, `frame(n)` median.

Prints a table and updates the `compact` section of `bench/RESULTS.md`.

    python bench/bench_compact.py              # 3 repeats, 2000 random reads per file
    python bench/bench_compact.py --quick      # 1 repeat, 300 reads
"""

from __future__ import annotations

import argparse
import datetime as dt
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from results import write_section

import nanorec
from nanorec import ArchiveReader, registry
from nanorec.archive.atomic import file_sha256
from nanorec.archive.layout import use_layout
from nanorec.contract import ConvertRequest, ExportRequest

NOTES = """\
Targets (issue 20): archive / source <= 1.25 where messages average >= 100 source bytes and
<= 2.0 everywhere, CARLA below 1: met on every file (the bz2 bag of 29-byte messages is the
tightest, 1.95: its messages are kept inflated and indexed one by one; the stored layout took
7.7x). CARLA frame(n) <= 1.5x its stored time: met. Raw read median <= 25 us and p99 <= 200
us (messages up to 64 KiB): met on every file.
Convert and export against the stored layout of the same code (the columns above): 1.0-1.3x,
1.3-1.4x on the two bags of tiny messages (29 and 100 source bytes), whose blocks need zlib's
level 6 to meet the size budget; against the code before the compact layout, see the
compact-before section (`bench_compact_before.py`). Blocks are deflated by two threads the
process shares beside the converter, handed over ~128 KiB at a time, which also take the
CRC of a block of several messages; the other members are deflated by ISA-L, except in
recordings under 40 source bytes a message (zlib's level 6, in 256 KiB pieces on the same
threads: the bz2 bag's budget).
Choices, measured on the real files' messages: blocks of 16 KiB at level 6, ended at 8 KiB
when that holds 4-16 messages (0.5-2 KiB messages: a read inflates half as much, e.g. the
haicheng12 map 32 -> 22 us, for ~5 % of size); 64 KiB blocks were ~5 % smaller but a random
read took ~2.5x longer, 8 KiB blocks everywhere ~7 % larger (the bz2 bag at 1.999x), level 1
~12 % larger (2.04x). pbstream records keep no gzip member of their own: their payloads
deflate as well inside the blocks (0.67-0.95x of the source) and export re-gzips them as
before. Timings: best of 3 on an idle 2-core machine, layouts alternated read by read."""

REALDATA = Path(__file__).resolve().parents[1].parent / "shared" / "realdata"
LAYOUTS = ("stored", "compact")


def _best(action: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return min(times)


def _interleaved(
    opened: dict[str, Any], numbers: list[int], read: Callable[[Any, int], object]
) -> dict[str, list[float]]:
    """Seconds per read of each number, the layouts alternating read by read (same load)."""
    times: dict[str, list[float]] = {layout: [] for layout in opened}
    for number in numbers:
        for layout, reader in opened.items():
            start = time.perf_counter()
            read(reader, number)
            times[layout].append(time.perf_counter() - start)
    return times


def measure(path: Path, folder: Path, repeat: int, samples: int) -> dict[str, Any]:
    converter = registry.for_native(path)
    row: dict[str, Any] = {"file": f"{path.parent.name}/{path.name}", "size": path.stat().st_size}
    archives = {layout: folder / f"{layout}.nanover.zip" for layout in LAYOUTS}
    convert_times: dict[str, list[float]] = {layout: [] for layout in LAYOUTS}
    export_times: dict[str, list[float]] = {layout: [] for layout in LAYOUTS}
    for _ in range(repeat):  # alternate, so both layouts see the same machine load
        for layout in LAYOUTS:

            def convert(layout: str = layout) -> None:
                with use_layout(layout):
                    report = converter.convert(
                        path, archives[layout], ConvertRequest(overwrite=True)
                    )
                row["messages"] = report.messages

            convert_times[layout].append(_best(convert, 1))
            back = folder / f"{layout}.back"

            def export(layout: str = layout, back: Path = back) -> None:
                with ArchiveReader(archives[layout]) as reader:
                    converter.export(reader, back, ExportRequest(overwrite=True))

            export_times[layout].append(_best(export, 1))
            if file_sha256(back) != file_sha256(path):
                raise SystemExit(f"{path}: {layout} export is not byte for byte")
    with ArchiveReader(archives["stored"]) as reader:
        small = np.flatnonzero(reader.index.length <= 64 << 10)
    rng = np.random.default_rng(0)
    numbers = rng.choice(small, size=samples).tolist()
    readers = {layout: ArchiveReader(archives[layout]) for layout in LAYOUTS}
    reads = _interleaved(readers, numbers, lambda reader, number: reader.raw(number))
    for reader in readers.values():
        reader.close()
    frames = {}
    if converter.name == "carla":
        recordings = {layout: nanorec.open(archives[layout]) for layout in LAYOUTS}
        frames = _interleaved(
            recordings, numbers[: max(samples // 4, 50)], lambda rec, n: rec.frame(n)
        )
        for recording in recordings.values():
            recording.close()
    for layout in LAYOUTS:
        row[f"{layout} ratio"] = archives[layout].stat().st_size / row["size"]
        row[f"{layout} convert s"] = min(convert_times[layout])
        row[f"{layout} export s"] = min(export_times[layout])
        times = reads[layout]
        row[f"{layout} read"] = (
            statistics.median(times) * 1e6,
            float(np.percentile(times, 99)) * 1e6,
        )
        if frames:
            row[f"{layout} frame"] = statistics.median(frames[layout]) * 1e6
    return row


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| recording | B/message | archive / source: compact (stored) | convert s: compact / "
        "stored | export s: compact / stored | raw read µs median / p99: compact (stored) | "
        "CARLA frame(n) median µs: compact / stored |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        frame = (
            f"{row['compact frame']:.0f} / {row['stored frame']:.0f}"
            f" ({row['compact frame'] / row['stored frame']:.2f}x)"
            if "compact frame" in row
            else ""
        )
        cr, sr = row["compact read"], row["stored read"]
        lines.append(
            f"| {row['file']} | {row['size'] / max(row['messages'], 1):.0f} "
            f"| **{row['compact ratio']:.3f}** ({row['stored ratio']:.3f}) "
            f"| {row['compact convert s']:.3f} / {row['stored convert s']:.3f} "
            f"| {row['compact export s']:.3f} / {row['stored export s']:.3f} "
            f"| {cr[0]:.1f} / {cr[1]:.0f} ({sr[0]:.1f} / {sr[1]:.0f}) | {frame} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    repeat, samples = (1, 300) if args.quick else (3, 2000)
    files = sorted(
        path
        for folder in ("carla", "rosbag", "pbstream")
        if (REALDATA / folder).is_dir()
        for path in (REALDATA / folder).iterdir()
        if path.suffix in (".log", ".rec", ".bag", ".pbstream")
    )
    if not files:
        raise SystemExit(f"no real recordings under {REALDATA}")
    rows = []
    for path in files:
        with tempfile.TemporaryDirectory(prefix="bench-compact-") as folder:
            rows.append(measure(path, Path(folder), repeat, samples))
            print(rows[-1]["file"], "done", file=sys.stderr)
    text = table(rows)
    print(text)
    machine = f"{platform.machine()}, Python {platform.python_version()}"
    command = "python bench/bench_compact.py" + (" --quick" if args.quick else "")
    write_section(
        "<!-- compact:start -->",
        "<!-- compact:end -->",
        "<!-- compact:start -->\n## Compact vs stored layout on the real recordings "
        f"(`bench/bench_compact.py`)\n\nMachine: {machine}, shared by other jobs (timings are "
        f"best of {repeat}, layouts alternated). Date: {dt.date.today()}. Command: `{command}`. "
        "Every export compared byte for byte with its source.\n\n"
        f"{text}\n\n{NOTES}\n<!-- compact:end -->",
    )


if __name__ == "__main__":
    main()
