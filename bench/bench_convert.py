"""Format-neutral benchmark: every converter's convert MB/s against the MCAP writer merely
storing the same message bytes, and random message reads, in one run.

The anchor is what a user might pick instead of an indexed archive: MCAP's own Python
writer (`mcap` package, chunked, with its index) writing the very bytes our converter wrote
as messages, prebuilt in memory and with no decoding at all. Like for like: our stored
layout (`nanorec.archive.layout.STORED`, `nanorec convert --stored`) against the writer without
compression, our compact layout (the default) against the writer with its default zstd
chunk compression. The ratio `mcap s / convert s` is the share of the MCAP writer's speed
our conversion reaches (1.0 = as fast; the issue's aim: >= 0.5). Random read:
`reader.raw(i)` and `recording.message(i)` at random i, on the compact archive.

Inputs come from each format's own generator (`INPUTS`; `carla-small` is CARLA with the
few actors and ~1 KB frames of the real recordings, many small packets); a format without
one is listed as skipped. Writes its table into bench/RESULTS.md between the `convert`
markers.

    python bench/bench_convert.py              # ~100 MB per format
    python bench/bench_convert.py --mb 20      # quicker
    python bench/bench_convert.py --only carla carla-small
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from results import write_section

from nanorec.contract import ConvertRequest

HERE = Path(__file__).resolve().parent
ROUNDS = 3  # timed conversions per layout (best kept), each followed by the MCAP writer
START, END = "<!-- convert:start -->", "<!-- convert:end -->"


def _carla_input(path: Path, size: int) -> None:
    from nanorec.converters.carla.generate import generate_to

    generate_to(path, "0.9.16", target_bytes=size, vehicles=120, walkers=60, traffic_lights=40)


def _carla_small_input(path: Path, size: int) -> None:
    """The shape of the real recordings (scenario_runner, scenic): a few actors, ~1 KB frames."""
    from nanorec.converters.carla.generate import generate_to

    generate_to(
        path,
        "0.9.10-0.9.13",
        target_bytes=size,
        vehicles=6,
        walkers=2,
        traffic_lights=12,
        scene_lights=0,
    )


def _rosbag_input(path: Path, size: int) -> None:
    from nanorec.converters.ros.ros1.generate import generate

    generate(path, seconds=size / 1.95e6, image=640)  # ~1.95 MB of messages per second


def _pbstream_input(path: Path, size: int) -> None:
    """A real Cartographer file's records repeated (see bench_pbstream: its members are
    copied, so the input costs no compression; a generated file without realdata)."""
    from bench_pbstream import members, source_file

    source = source_file()
    records = members(source)
    with path.open("wb") as out:
        written = out.write(source.read_bytes()[:8] + b"".join(records[:3]))
        body = b"".join(records[3:])
        while written < size:
            written += out.write(body)


#: How to make a benchmark input of about `size` bytes, per format.
INPUTS: dict[str, Callable[[Path, int], None]] = {
    "carla": _carla_input,
    "pbstream": _pbstream_input,
    "carla-small": _carla_small_input,
    "rosbag": _rosbag_input,
}


def _mcap_seconds(
    payloads: list[bytes], stamps: list[int], kinds: list[str], out: Path, compression: Any
) -> float:
    """Seconds for the `mcap` package's Writer to store `payloads` (one channel per type)."""
    from mcap.writer import Writer

    start = time.perf_counter()
    with out.open("wb") as stream:
        writer = Writer(stream, compression=compression)
        writer.start()
        schema = writer.register_schema(name="bytes", encoding="", data=b"")
        channels: dict[str, int] = {}
        for payload, stamp, kind in zip(payloads, stamps, kinds, strict=True):
            channel = channels.get(kind)
            if channel is None:
                channel = channels[kind] = writer.register_channel(kind, "msgpack", schema)
            writer.add_message(channel, log_time=stamp, data=payload, publish_time=stamp)
        writer.finish()
    return time.perf_counter() - start


def bench_format(name: str, work: Path, size: int) -> dict[str, Any]:
    from mcap.writer import CompressionType

    from nanorec import registry
    from nanorec.archive.layout import COMPACT, STORED, use_layout
    from nanorec.archive.reader import ArchiveReader

    converter = registry.get(name.split("-")[0])
    source = work / f"input.{name}"
    INPUTS[name](source, size)
    source_size = source.stat().st_size
    archives = {layout: work / f"{name}-{layout}.nanover.zip" for layout in (STORED, COMPACT)}
    # Untimed first conversion: imports and the source's pages (the MCAP writer's are in).
    converter.convert(source, archives[STORED], ConvertRequest(overwrite=True))
    with ArchiveReader(archives[STORED]) as reader:
        payloads = [bytes(reader.raw(i)) for i in range(len(reader))]
        stamps = (reader.index.timestamp_us * 1000).tolist()
        kinds = [
            reader.index.types(i)[0] if reader.index.types(i) else "" for i in range(len(reader))
        ]
    payload_mb = sum(len(payload) for payload in payloads) / 1e6
    writers = {STORED: CompressionType.NONE, COMPACT: CompressionType.ZSTD}
    seconds: dict[str, list[float]] = {}
    for _ in range(ROUNDS):  # interleaved, best of each: the machine may be shared
        for layout, archive in archives.items():
            os.sync()
            with use_layout(layout):
                start = time.perf_counter()
                report = converter.convert(source, archive, ConvertRequest(overwrite=True))
                seconds.setdefault(layout, []).append(time.perf_counter() - start)
            mcap = _mcap_seconds(payloads, stamps, kinds, work / "out.mcap", writers[layout])
            seconds.setdefault(f"mcap {layout}", []).append(mcap)
    del payloads
    best = {key: min(values) for key, values in seconds.items()}

    reads: list[float] = []
    decodes: list[float] = []
    with registry.open(archives[COMPACT]) as rec:
        count = len(rec)
        rng = random.Random(1)
        picks = [rng.randrange(count) for _ in range(2000)]
        for number in picks:
            t0 = time.perf_counter()
            rec.reader.raw(number)
            reads.append(time.perf_counter() - t0)
        for number in picks[:300]:
            t0 = time.perf_counter()
            rec.message(number)
            decodes.append(time.perf_counter() - t0)
    mb = source_size / 1e6
    return {
        "format": name,
        "source MB": round(mb, 1),
        "messages": report.messages,
        "stored MB/s": round(mb / best[STORED], 1),
        "MCAP none MB/s": round(payload_mb / best[f"mcap {STORED}"], 1),
        "ratio stored / none": round(best[f"mcap {STORED}"] / best[STORED], 2),
        "compact MB/s": round(mb / best[COMPACT], 1),
        "MCAP zstd MB/s": round(payload_mb / best[f"mcap {COMPACT}"], 1),
        "ratio compact / zstd": round(best[f"mcap {COMPACT}"] / best[COMPACT], 2),
        "raw read median µs": round(statistics.median(reads) * 1e6, 1),
        "message read median µs": round(statistics.median(decodes) * 1e6, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=100, help="input size per format, MB")
    parser.add_argument("--only", nargs="*", help="inputs to run (default: all of INPUTS)")
    args = parser.parse_args()
    from nanorec import registry

    for name in sorted(registry.converters()):
        if name not in INPUTS:
            print(f"{name}: no input generator, skipped", file=sys.stderr)
    rows = []
    with tempfile.TemporaryDirectory(prefix="nanorec-bench-") as folder:
        for name in args.only or sorted(INPUTS):
            work = Path(folder) / name
            work.mkdir()
            row = bench_format(name, work, args.mb * 1_000_000)
            print(row, file=sys.stderr)
            rows.append(row)
    header = list(rows[0])
    table = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    table += ["| " + " | ".join(str(row[key]) for key in header) + " |" for row in rows]
    text = "\n".join(
        [
            START,
            "## Convert, every format, against the MCAP writer",
            "",
            f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
            f"Python {platform.python_version()}. Date: {datetime.date.today()}. Command: "
            f"`python bench/bench_convert.py --mb {args.mb}`. The MCAP writer (`mcap` "
            "package) stores the same message bytes, prebuilt in memory: without compression "
            "against our stored layout, with its default zstd chunks against our compact one; "
            "ratio = mcap s / convert s (MB/s: source for us, payload for MCAP); best of "
            f"{ROUNDS} interleaved rounds after an untimed conversion.",
            "",
            *table,
            END,
        ]
    )
    if not args.only:  # a partial run leaves RESULTS.md as it is
        write_section(START, END, text)
    print(text)


if __name__ == "__main__":
    main()
