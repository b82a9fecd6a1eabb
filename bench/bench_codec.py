"""Benchmark the CARLA recorder codec: decode and encode throughput next to a plain walk.

Generates (or reuses, in bench/out/) synthetic CARLA recordings of at least 512 MiB with
`nanorec.converters.carla.generate.generate_to`, then in one run measures for each file, every
phase in a fresh process (so that `ru_maxrss` is that phase's peak):

- walk: the plainest packet-header walk, `u8 id, u32 size`, skip (the floor of any reader);
- decode: `Reader.iter_batches` over the mmap'ed file, every packet decoded, batches dropped;
- encode: the same decode, plus `encode_batch` of every batch (only the encode is timed).

Two scenes: the generator's default for large targets (a dense town: 256 vehicles, 128
walkers, ~2 KB packets) and a moderate one (30 vehicles, 10 walkers: ~250-byte packets,
the packet density of the real recordings in ../shared/realdata). The walk's cost is per
packet and the codec's mostly per byte, so their ratio depends on the density.

Writes the table into bench/RESULTS.md between the `codec` markers.

    python bench/bench_codec.py             # 512 MiB per scene
    python bench/bench_codec.py --mib 64    # quicker, for a smoke test
"""

from __future__ import annotations

import argparse
import datetime
import json
import mmap
import os
import platform
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
START, END = "<!-- codec:start -->", "<!-- codec:end -->"
SCENES: dict[str, dict[str, int]] = {
    "dense": {},  # the generator's own choice for large targets
    "moderate": {"vehicles": 30, "walkers": 10, "traffic_lights": 8},
}


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def phase_walk(path: Path) -> dict[str, Any]:
    """The plainest packet-header walk (what the brief calls the baseline)."""
    header = struct.Struct("<BI").unpack_from
    with path.open("rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as buf:
        start = time.perf_counter()
        (magic,) = struct.unpack_from("<H", buf, 2)
        (name,) = struct.unpack_from("<H", buf, 4 + magic + 8)
        off = 4 + magic + 8 + 2 + name
        size = len(buf)
        packets = 0
        while off + 5 <= size:
            _pid, body = header(buf, off)
            off += 5 + body
            packets += 1
        seconds = time.perf_counter() - start
    return {"seconds": seconds, "packets": packets}


def phase_decode(path: Path) -> dict[str, Any]:
    from nanorec.converters.carla.codec import Reader

    start = time.perf_counter()
    packets = 0
    raw = 0
    with Reader(path) as reader:
        family = reader.family.name
        for batch in reader.iter_batches():
            packets += len(batch.packet_ids)
            raw += len(batch.raw.index)
    return {
        "seconds": time.perf_counter() - start,
        "packets": packets,
        "raw": raw,
        "family": family,
    }


def phase_encode(path: Path) -> dict[str, Any]:
    from nanorec.converters.carla.codec import Reader, encode_batch

    encode_seconds = 0.0
    written = 0
    with Reader(path) as reader:
        written += len(reader.header.serialize())
        for batch in reader.iter_batches():
            start = time.perf_counter()
            out = encode_batch(batch, reader.family)
            encode_seconds += time.perf_counter() - start
            written += len(out)
    return {"seconds": encode_seconds, "bytes": written}


PHASES = {"walk": phase_walk, "decode": phase_decode, "encode": phase_encode}


def run_phase(name: str, path: Path) -> dict[str, Any]:
    """Run one phase in a fresh interpreter; its result plus that process's peak RSS."""
    done = subprocess.run(
        [sys.executable, __file__, "--phase", name, str(path)],
        check=True,
        capture_output=True,
        text=True,
        cwd=HERE.parent,
    )
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def ensure_file(scene: str, mib: int) -> Path:
    from nanorec.converters.carla.generate import generate_to

    OUT.mkdir(exist_ok=True)
    path = OUT / f"codec-{FAMILY}-{scene}-{mib}MiB.log"
    if not path.exists() or path.stat().st_size < mib << 20:
        print(f"generating {path.name} ...", flush=True)
        scene_args: dict[str, Any] = dict(SCENES[scene])
        generate_to(path, FAMILY, target_bytes=mib << 20, overwrite=True, **scene_args)
    return path


def machine() -> str:
    model = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{model}, {os.cpu_count()} cores, Python {platform.python_version()}"


def best_of(name: str, path: Path, runs: int) -> dict[str, Any]:
    results = [run_phase(name, path) for _ in range(runs)]
    best = min(results, key=lambda result: float(result["seconds"]))
    best["peak_mb"] = max(float(result["peak_mb"]) for result in results)
    return best


def measure(path: Path, runs: int) -> dict[str, Any]:
    size = path.stat().st_size
    walk = best_of("walk", path, runs)
    decode = best_of("decode", path, runs)
    encode = best_of("encode", path, runs)
    if encode["bytes"] != size:
        raise SystemExit(f"{path.name}: encoded {encode['bytes']} bytes, the file has {size}")
    mb = size / 1e6
    return {
        "file": path.name,
        "mb": mb,
        "packets": walk["packets"],
        "family": decode["family"],
        "raw": decode["raw"],
        "walk": mb / walk["seconds"],
        "decode": mb / decode["seconds"],
        "encode": mb / encode["seconds"],
        "walk_peak": walk["peak_mb"],
        "decode_peak": decode["peak_mb"],
        "encode_peak": encode["peak_mb"],
    }


def table(rows: list[dict[str, Any]], command: str) -> str:
    lines = [
        START,
        "## CARLA codec: decode / encode vs a plain packet walk (`bench/bench_codec.py`)",
        "",
        f"Machine: {machine()}. Date: {datetime.date.today().isoformat()}. "
        f"Command: `{command}`. Recordings: synthetic, family {FAMILY}, from "
        "`nanorec.converters.carla.generate.generate_to`; each phase in a fresh process, best of "
        "the runs; peak = `ru_maxrss` of that process (mmap'ed file pages included).",
        "",
        "| recording | MB | packets | B/packet | walk MB/s | decode MB/s (x walk) "
        "| encode MB/s (x decode) | peak MB walk / decode / encode |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        lines.append(
            f"| {row['file']} | {row['mb']:.0f} | {row['packets']} "
            f"| {row['mb'] * 1e6 / row['packets']:.0f} | {row['walk']:.0f} "
            f"| {row['decode']:.0f} ({row['decode'] / row['walk']:.2f}) "
            f"| {row['encode']:.0f} ({row['encode'] / row['decode']:.2f}) "
            f"| {row['walk_peak']:.0f} / {row['decode_peak']:.0f} / {row['encode_peak']:.0f} |"
        )
    raw = sum(int(row["raw"]) for row in rows)
    lines += [
        "",
        f"Packets carried raw: {raw}. Every file encodes back to its exact size (byte "
        "identity itself is what `nanorec roundtrip` and the tests check). The walk costs "
        "per packet and reads 5 bytes of each; the codec also copies every record byte. So "
        "the ratio falls with packet size: on the dense scene the walk touches ~0.1 % of "
        "the bytes. The codec's own walk checks whole frames at once against the previous "
        "frame's layout, which is why it can beat the plain walk on small packets. Peak RSS "
        "stays flat because the reader releases the mmap pages of decoded batches; the plain "
        "walk keeps every page it touched.",
        END,
    ]
    return "\n".join(lines)


def write_results(section: str) -> None:
    text = RESULTS.read_text() if RESULTS.exists() else "# Benchmark results\n"
    if START in text and END in text:
        before, rest = text.split(START, 1)
        after = rest.split(END, 1)[1]
        text = before + section + after
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    RESULTS.write_text(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=512, help="recording size per scene")
    parser.add_argument("--runs", type=int, default=2, help="runs per phase (best is kept)")
    parser.add_argument("--scene", choices=list(SCENES), action="append", help="default: all")
    parser.add_argument("--no-write", action="store_true", help="do not update RESULTS.md")
    parser.add_argument("--phase", choices=list(PHASES), help=argparse.SUPPRESS)
    parser.add_argument("path", nargs="?", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase:
        result = PHASES[args.phase](args.path)
        result["peak_mb"] = _peak_mb()
        print(json.dumps(result))
        return
    rows = []
    for scene in args.scene or list(SCENES):
        path = ensure_file(scene, args.mib)
        row = measure(path, args.runs)
        rows.append(row)
        print(json.dumps(row), flush=True)
    command = "python bench/bench_codec.py" + (f" --mib {args.mib}" if args.mib != 512 else "")
    section = table(rows, command)
    print(section)
    if not args.no_write:
        write_results(section)


if __name__ == "__main__":
    main()
