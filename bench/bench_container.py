"""Benchmark the archive container against the way NanoVer reads archives.

Writes an archive of N small messages (default 1,000,000 of ~300 bytes) with
`ArchiveWriter.write_packed`, then measures, each phase in a fresh process:

- write rate (messages/s, MB/s, close included) and the writer's peak RSS;
- open time of `ArchiveReader` (columnar index from `nanorec.msgpack`), of
  `ArchiveReader(use_description=False)` (parsing `index.msgpack`, the NanoVer-file path), and
  of NanoVer's way (`zipfile` open + `msgpack.unpackb` of the whole index into entry objects);
- random message reads (read + decode) at the same random message numbers: ours through
  `mmap`, NanoVer's through `ZipFile.open("messages.msgpack")` + `seek` + `read` + `unpackb`
  (fewer samples: each costs O(offset) on Python < 3.12);
- a sequential pass over every message;
- peak memory: `tracemalloc` peak of opening (Python heap), `ru_maxrss` of each phase.

Prints a table and updates the `container` section of `bench/RESULTS.md`.

    python bench/bench_container.py            # 1,000,000 messages
    python bench/bench_container.py --quick    # 20,000 messages, fewer samples
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import random
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
import zipfile
from pathlib import Path
from typing import Any

import msgpack
import numpy as np

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "RESULTS.md"
SECTION = "container"


# -- phases (each runs in its own process) ---------------------------------------------------


def _maxrss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _payloads(size: int, pool: int = 4096) -> list[tuple[bytes, list[str]]]:
    """Pre-packed messages of about `size` bytes once stored ("nanorec.t" adds ~15)."""
    rng = np.random.default_rng(7)
    out = []
    for i in range(pool):
        body = size - 15 - 40
        message = {
            "frame": {
                "frame.index": i,
                "particle.positions": rng.bytes(max(body, 1)),
                "system.temperature": 300.0,
            }
        }
        out.append((msgpack.packb(message), ["frame"]))
    return out


def phase_write(path: Path, count: int, size: int) -> dict[str, Any]:
    from nanorec import ArchiveWriter

    payloads = _payloads(size)
    pool = len(payloads)
    start = time.perf_counter()
    with ArchiveWriter(path, overwrite=True, source_format="bench") as writer:
        write = writer.write_packed
        for i in range(count):
            packed, types = payloads[i % pool]
            write(packed, types=types, timestamp_us=i * 1000, flags=i & 3)
        before_close = time.perf_counter()
    end = time.perf_counter()
    return {
        "seconds": end - start,
        "close_seconds": end - before_close,
        "file_bytes": path.stat().st_size,
        "maxrss_mb": _maxrss_mb(),
    }


def _stats_us(samples_ns: list[int]) -> dict[str, float]:
    values = sorted(samples_ns)
    return {
        "median_us": statistics.median(values) / 1000,
        "p99_us": values[min(len(values) - 1, int(len(values) * 0.99))] / 1000,
        "mean_us": statistics.fmean(values) / 1000,
        "n": len(values),
    }


def phase_read(path: Path, samples: int, zip_samples: int) -> dict[str, Any]:
    from nanorec import ArchiveReader

    result: dict[str, Any] = {}
    opens = []
    for _ in range(5):
        t0 = time.perf_counter_ns()
        reader = ArchiveReader(path)
        opens.append(time.perf_counter_ns() - t0)
        reader.close()
    result["open_ms"] = min(opens) / 1e6
    result["open_ms_median"] = statistics.median(opens) / 1e6

    t0 = time.perf_counter_ns()
    with ArchiveReader(path, use_description=False) as slow:
        result["open_index_msgpack_ms"] = (time.perf_counter_ns() - t0) / 1e6
        assert len(slow) > 0

    reader = ArchiveReader(path)
    count = len(reader)
    rng = random.Random(1)
    numbers = [rng.randrange(count) for _ in range(samples)]
    for number in numbers[:1000]:  # warm the page cache and the code paths
        reader[number]
    timings = []
    clock = time.perf_counter_ns
    for number in numbers:
        t0 = clock()
        reader[number]
        timings.append(clock() - t0)
    result["random"] = _stats_us(timings)

    raw_timings = []
    for number in numbers[: min(samples, 100_000)]:
        t0 = clock()
        reader.raw(number)
        raw_timings.append(clock() - t0)
    result["random_raw"] = _stats_us(raw_timings)

    unchecked = ArchiveReader(path, verify=False)  # the opt-out: no CRC-32 per read
    plain_timings = []
    for number in numbers:
        t0 = clock()
        unchecked[number]
        plain_timings.append(clock() - t0)
    unchecked.close()
    result["random_unverified"] = _stats_us(plain_timings)

    # NanoVer's way at the same message numbers: one shared ZipExtFile, seek + read + unpackb.
    offsets = reader.index.offset
    lengths = reader.index.length
    zip_timings = []
    with zipfile.ZipFile(path) as archive, archive.open("messages.msgpack") as stream:
        for number in numbers[:zip_samples]:
            offset, length = int(offsets[number]), int(lengths[number])
            t0 = clock()
            stream.seek(offset)
            msgpack.unpackb(stream.read(length))
            zip_timings.append(clock() - t0)
    result["zipfile_random"] = _stats_us(zip_timings)
    ours_same = timings[:zip_samples]
    result["random_same_numbers"] = _stats_us(ours_same)

    t0 = time.perf_counter()
    total = 0
    for _message in reader:
        total += 1
    seconds = time.perf_counter() - t0
    result["sequential_msgs_per_s"] = total / seconds
    member = reader._members["messages.msgpack"]
    result["sequential_mb_per_s"] = member.size / seconds / 1e6
    reader.close()
    result["maxrss_mb"] = _maxrss_mb()
    return result


def phase_nanover_open(path: Path) -> dict[str, Any]:
    """NanoVer's open: zipfile, unpackb of the whole index, one object per entry."""
    from dataclasses import dataclass, field

    @dataclass(kw_only=True)
    class Entry:  # the shape of NanoVer's RecordingIndexEntry
        offset: int
        length: int
        metadata: dict[str, Any] = field(default_factory=dict)

    base = _maxrss_mb()
    t0 = time.perf_counter()
    archive = zipfile.ZipFile(path)
    stream = archive.open("messages.msgpack")
    with archive.open("index.msgpack") as index_file:
        index = [Entry(**entry) for entry in msgpack.unpackb(index_file.read())]
    seconds = time.perf_counter() - t0
    assert index
    stream.close()
    archive.close()
    return {"open_ms": seconds * 1000, "maxrss_mb": _maxrss_mb(), "base_rss_mb": base}


def phase_memory(path: Path) -> dict[str, Any]:
    from nanorec import ArchiveReader

    base = _maxrss_mb()
    tracemalloc.start()
    reader = ArchiveReader(path)
    _, open_peak = tracemalloc.get_traced_memory()
    held, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    reader.close()
    return {"open_peak_mb": open_peak / 1e6, "open_held_mb": held / 1e6, "base_rss_mb": base}


PHASES = {
    "write": lambda a: phase_write(Path(a.path), a.messages, a.size),
    "read": lambda a: phase_read(Path(a.path), a.samples, a.zip_samples),
    "nanover_open": lambda a: phase_nanover_open(Path(a.path)),
    "memory": lambda a: phase_memory(Path(a.path)),
}


def run_phase(name: str, args: argparse.Namespace, path: Path) -> dict[str, Any]:
    command = [
        sys.executable,
        __file__,
        "--phase",
        name,
        "--path",
        str(path),
        "--messages",
        str(args.messages),
        "--size",
        str(args.size),
        "--samples",
        str(args.samples),
        "--zip-samples",
        str(args.zip_samples),
    ]
    done = subprocess.run(command, check=True, capture_output=True, text=True)
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


# -- report ---------------------------------------------------------------------------------


def _machine() -> str:
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return (
        f"{platform.machine()}, {cpu}, {os.cpu_count()} cores, Python {platform.python_version()}"
    )


def render(
    args: argparse.Namespace,
    w: dict[str, Any],
    r: dict[str, Any],
    nv: dict[str, Any],
    m: dict[str, Any],
) -> str:
    n = args.messages
    mb = w["file_bytes"] / 1e6
    speedup = r["zipfile_random"]["median_us"] / r["random_same_numbers"]["median_us"]
    rows = [
        ("archive", f"{n:,} messages, ~{args.size} B each, {mb:.1f} MB"),
        (
            "write (write_packed, close included)",
            f"{n / w['seconds']:,.0f} msg/s, {mb / w['seconds']:.0f} MB/s "
            f"(close {w['close_seconds'] * 1000:.0f} ms)",
        ),
        (
            "open, ours (columnar index)",
            f"{r['open_ms']:.1f} ms (median {r['open_ms_median']:.1f})",
        ),
        (
            "open, ours parsing index.msgpack (NanoVer files)",
            f"{r['open_index_msgpack_ms']:.0f} ms",
        ),
        ("open, NanoVer way (zipfile + unpackb index)", f"{nv['open_ms']:.0f} ms"),
        (
            "random read+decode, ours (mmap, CRC-32 checked)",
            f"median {r['random']['median_us']:.2f} µs, p99 {r['random']['p99_us']:.2f} µs "
            f"(n={r['random']['n']:,})",
        ),
        (
            "random read+decode, ours, verify=False",
            f"median {r['random_unverified']['median_us']:.2f} µs, "
            f"p99 {r['random_unverified']['p99_us']:.2f} µs",
        ),
        (
            "random raw read, ours",
            f"median {r['random_raw']['median_us']:.2f} µs, p99 {r['random_raw']['p99_us']:.2f} µs",
        ),
        (
            "random read+decode, NanoVer way (ZipExtFile seek+read)",
            f"median {r['zipfile_random']['median_us']:,.0f} µs, "
            f"p99 {r['zipfile_random']['p99_us']:,.0f} µs (n={r['zipfile_random']['n']})",
        ),
        ("speed-up at the same random messages (median)", f"{speedup:,.0f}×"),
        (
            "sequential read+decode, ours",
            f"{r['sequential_msgs_per_s']:,.0f} msg/s, {r['sequential_mb_per_s']:.0f} MB/s",
        ),
        (
            "peak memory: open (tracemalloc peak / held)",
            f"{m['open_peak_mb']:.1f} MB / {m['open_held_mb']:.1f} MB",
        ),
        (
            "peak memory: NanoVer-way open (ru_maxrss − baseline)",
            f"{nv['maxrss_mb'] - nv['base_rss_mb']:.0f} MB",
        ),
        (
            "peak RSS: writer process / reader process",
            f"{w['maxrss_mb']:.0f} MB / {r['maxrss_mb']:.0f} MB (reader includes mmap'ed pages)",
        ),
    ]
    aims = (
        f"Aims: open < 100 ms ({'met' if r['open_ms'] < 100 else 'MISSED'}), random read "
        f"< 20 µs median ({'met' if r['random']['median_us'] < 20 else 'MISSED'}), ≥ 100× the "
        f"zipfile way ({'met' if speedup >= 100 else 'MISSED'})."
    )
    table = "\n".join(["| measure | result |", "|---|---|"] + [f"| {a} | {b} |" for a, b in rows])
    command = "python bench/bench_container.py" + (" --quick" if args.quick else "")
    return (
        f"## Archive container (`bench/bench_container.py`)\n\n"
        f"Machine: {_machine()}. Date: {dt.date.today().isoformat()}. Command: `{command}`. "
        f"Each phase in a fresh process; warm page cache.\n\n{table}\n\n{aims}\n"
    )


def update_results(section: str) -> None:
    start, end = f"<!-- {SECTION}:start -->", f"<!-- {SECTION}:end -->"
    block = f"{start}\n{section}{end}\n"
    text = RESULTS.read_text() if RESULTS.exists() else "# Benchmark results\n\n"
    pattern = re.compile(re.escape(start) + r".*?" + re.escape(end) + r"\n?", re.DOTALL)
    if pattern.search(text):
        text = pattern.sub(lambda _: block, text)
    else:
        text = text.rstrip("\n") + "\n\n" + block
    RESULTS.write_text(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--size", type=int, default=300, help="bytes per stored message")
    parser.add_argument("--samples", type=int, default=200_000, help="random reads, ours")
    parser.add_argument("--zip-samples", type=int, default=200, help="random reads, zipfile way")
    parser.add_argument("--quick", action="store_true", help="20,000 messages, fewer samples")
    parser.add_argument("--dir", type=Path, default=None, help="where to write the archive")
    parser.add_argument("--no-results", action="store_true", help="do not touch RESULTS.md")
    parser.add_argument("--phase", choices=sorted(PHASES), help=argparse.SUPPRESS)
    parser.add_argument("--path", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase:
        print(json.dumps(PHASES[args.phase](args)))
        return
    if args.quick:
        args.messages, args.samples, args.zip_samples = 20_000, 20_000, 100
    workdir = Path(tempfile.mkdtemp(prefix="nanorec-bench-", dir=args.dir))
    try:
        path = workdir / "bench.nanover.zip"
        print(f"writing {args.messages:,} messages to {path} ...", file=sys.stderr)
        w = run_phase("write", args, path)
        print("reading ...", file=sys.stderr)
        r = run_phase("read", args, path)
        nv = run_phase("nanover_open", args, path)
        m = run_phase("memory", args, path)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    section = render(args, w, r, nv, m)
    print(section)
    if not args.no_results:
        update_results(section)
        print(f"updated {RESULTS}", file=sys.stderr)


if __name__ == "__main__":
    main()
