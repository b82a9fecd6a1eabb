"""Benchmark the pbstream converter: parse speed against the protobuf package, convert and
export throughput on a ~1 GB stream, random record reads, peak memory.

The large stream repeats the records of a real Cartographer file (header, pose graph and
options once, then its submap/node/sensor records over and over; their gzip members are
copied, so building it costs no compression) — the smallest real file that has submaps
when ../shared/realdata is present, else a synthetic stream from our generator. Parsing is
measured on the inflated payloads of that source: our index pass (kind, ids, time), our
full decode (every field, packed arrays with numpy), and protobuf's `FromString` on the
same bytes (upb, with descriptors built at run time from our field tables). Convert and
export run in fresh interpreters so their peak RSS is their own. Writes the table into
bench/RESULTS.md between the `pbstream` markers.

    python bench/bench_pbstream.py            # ~1 GiB
    python bench/bench_pbstream.py --quick    # ~64 MiB
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import random
import resource
import statistics
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
OUT = HERE / "out"
REALDATA = HERE.parent.parent / "shared" / "realdata" / "pbstream"
START, END = "<!-- pbstream:start -->", "<!-- pbstream:end -->"


def source_file() -> Path:
    """The real file the large stream repeats (or a generated one)."""
    preferred = REALDATA / "artelrobotics_camel_robot_unfinished.pbstream"
    if preferred.is_file():
        return preferred
    from nanorec.converters.pbstream.generate import Plan, generate

    OUT.mkdir(exist_ok=True)
    return generate(OUT / "pbstream-generated.pbstream", Plan(trajectories=2, nodes=400))


def members(path: Path) -> list[bytes]:
    data = path.read_bytes()
    found, pos = [], 8
    while pos < len(data):
        (size,) = struct.unpack_from("<Q", data, pos)
        found.append(data[pos : pos + 8 + size])
        pos += 8 + size
    return found


def ensure_large(size: int) -> Path:
    source = source_file()
    target = OUT / f"pbstream-{size >> 20}MB.pbstream"
    if target.exists():
        return target
    OUT.mkdir(exist_ok=True)
    records = members(source)
    head, body = records[:3], records[3:]
    with target.open("wb") as out:
        written = out.write(source.read_bytes()[:8] + b"".join(head))
        chunk = b"".join(body)
        while written < size:
            written += out.write(chunk)
    return target


def best_of(runs: int, action: Any) -> float:
    timings = []
    for _ in range(runs):
        start = time.perf_counter()
        action()
        timings.append(time.perf_counter() - start)
    return min(timings)


def phase_parse() -> dict[str, Any]:
    """MB/s of payload bytes: our index pass, our full decode, protobuf's parse."""
    sys.path.insert(0, str(HERE.parent))
    from nanorec.converters.pbstream.decode import decode_record
    from nanorec.converters.pbstream.records import V2_KINDS, describe
    from nanorec.converters.pbstream.stream import inflate_member
    from tests.converters.pbstream.protobuf_reference import message_class

    payloads = [inflate_member(m[8:], 0) for m in members(source_file())[1:]]
    total = sum(map(len, payloads))
    infos = [describe(p, V2_KINDS) for p in payloads]
    serialized = message_class("SerializedData")

    def ours_index() -> None:
        for payload in payloads:
            describe(payload, V2_KINDS)

    def ours_full() -> None:
        for info, payload in zip(infos, payloads, strict=True):
            decode_record(info.kind, {"payload": payload})

    def theirs() -> None:
        for payload in payloads:
            serialized.FromString(payload)

    return {
        "payload_mb": total / 1e6,
        "records": len(payloads),
        "index_mbs": total / 1e6 / best_of(3, ours_index),
        "decode_mbs": total / 1e6 / best_of(3, ours_full),
        "protobuf_mbs": total / 1e6 / best_of(3, theirs),
    }


def phase_convert(source: Path, archive: Path) -> dict[str, Any]:
    from nanorec.converters.pbstream.convert import convert

    start = time.perf_counter()
    report = convert(source, archive, overwrite=True)
    seconds = time.perf_counter() - start
    return {
        "seconds": seconds,
        "mbs": report.source_size / 1e6 / seconds,
        "records": report.messages,
        "raw": report.details["raw_members"],
        "archive_mb": report.archive_size / 1e6,
    }


def phase_export(archive: Path, output: Path) -> dict[str, Any]:
    from nanorec.archive.reader import ArchiveReader
    from nanorec.converters.pbstream.export import export_native

    start = time.perf_counter()
    with ArchiveReader(archive) as reader:
        report = export_native(reader, output, overwrite=True)
    seconds = time.perf_counter() - start
    output.unlink()
    return {"seconds": seconds, "mbs": report.size / 1e6 / seconds, "identical": report.identical}


def phase_seek(archive: Path, samples: int) -> dict[str, Any]:
    from nanorec.archive.reader import ArchiveReader
    from nanorec.converters.pbstream.recording import PbstreamRecording

    with PbstreamRecording(ArchiveReader(archive)) as rec:
        rng = random.Random(1)
        numbers = [rng.randrange(len(rec)) for _ in range(samples)]
        raw, decoded, inflated = [], [], []
        for number in numbers:
            start = time.perf_counter()
            rec.entry(number)
            raw.append(time.perf_counter() - start)
        for number in numbers:
            start = time.perf_counter()
            rec.payload(number)
            inflated.append(time.perf_counter() - start)
        for number in numbers[:200]:
            start = time.perf_counter()
            rec.decode(number)
            decoded.append(time.perf_counter() - start)
    raw.sort()
    inflated.sort()
    return {
        "payload_us": statistics.median(inflated) * 1e6,
        "payload_p99_us": inflated[int(len(inflated) * 0.99)] * 1e6,
        "read_us": statistics.median(raw) * 1e6,
        "read_p99_us": raw[int(len(raw) * 0.99)] * 1e6,
        "decode_us": statistics.median(decoded) * 1e6,
    }


def in_subprocess(phase: str, *args: str) -> dict[str, Any]:
    """Run a phase in a fresh interpreter; adds its peak RSS in MB."""
    out = subprocess.run(
        [sys.executable, __file__, "--phase", phase, *args],
        check=True,
        capture_output=True,
        text=True,
        cwd=HERE.parent,
    )
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def table(
    parse: dict[str, Any],
    large: Path,
    conv: dict[str, Any],
    exp: dict[str, Any],
    seek: dict[str, Any],
    command: str,
) -> str:
    size = large.stat().st_size / 1e6
    when = datetime.date.today().isoformat()
    return "\n".join(
        [
            START,
            "## pbstream (Cartographer)",
            "",
            f"`{command}` on {when}, Python {platform.python_version()}, "
            f"{platform.machine()}. Parse: {parse['records']} records "
            f"({parse['payload_mb']:.1f} MB inflated) of the source file; convert/export: "
            f"{size:,.0f} MB stream of {conv['records']:,} records built from it.",
            "",
            "| measure | result |",
            "|---|---|",
            f"| parse, our index pass (kind, ids, time) | {parse['index_mbs']:,.0f} MB/s |",
            f"| parse, our full decode (every field) | {parse['decode_mbs']:,.1f} MB/s |",
            f"| parse, protobuf `FromString` (upb) | {parse['protobuf_mbs']:,.0f} MB/s |",
            f"| convert (inflate each member's start, archive the members) | "
            f"{conv['mbs']:,.1f} MB/s "
            f"({conv['seconds']:.1f} s; peak RSS {conv['rss_mb']:.0f} MB) |",
            f"| export, byte-exact (copy the members) | {exp['mbs']:,.1f} MB/s "
            f"({exp['seconds']:.1f} s; peak RSS {exp['rss_mb']:.0f} MB; identical: "
            f"{exp['identical']}) |",
            f"| random record read (median / p99) | {seek['read_us']:.1f} / "
            f"{seek['read_p99_us']:.1f} µs |",
            f"| random record payload (member inflated, CRC checked; median / p99) | "
            f"{seek['payload_us']:.1f} / {seek['payload_p99_us']:.0f} µs |",
            f"| random record read + full decode (median) | {seek['decode_us']:.0f} µs |",
            f"| archive size | {conv['archive_mb']:,.0f} MB ({conv['archive_mb'] / size:.2f}x) |",
            "",
            "The index pass reads only what the archive index needs (kind, ids, time) and skips "
            "bulky fields by length; the full decode builds Python dicts of every field (packed "
            "arrays with numpy) where protobuf fills C structures, hence the gap. The archive "
            "keeps each record's gzip member as read: convert inflates only the first bytes of "
            "each (kind, ids, time open every record) and export copies the members, so "
            "neither is bound by zlib any more; both are bound by per-record Python work "
            "(~1.8 records per KB here). The compact layout stores the blocks of gzip bytes "
            "(deflate would gain nothing), so the archive is about the source's size; a "
            "record's payload is inflated, and its CRC checked, when it is read.",
            "",
            END,
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="~64 MiB instead of ~1 GiB")
    parser.add_argument("--samples", type=int, default=2000, help="random reads")
    parser.add_argument("--phase", help=argparse.SUPPRESS)
    parser.add_argument("args", nargs="*", help=argparse.SUPPRESS)
    options = parser.parse_args()
    sys.path.insert(0, str(HERE.parent))
    if options.phase:
        phases = {
            "parse": lambda a: phase_parse(),
            "convert": lambda a: phase_convert(Path(a[0]), Path(a[1])),
            "export": lambda a: phase_export(Path(a[0]), Path(a[1])),
            "seek": lambda a: phase_seek(Path(a[0]), int(a[1])),
        }
        result = phases[options.phase](options.args)
        result["rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(json.dumps(result))
        return
    size = (64 << 20) if options.quick else (1 << 30)
    large = ensure_large(size)
    archive = large.with_suffix(".nanover.zip")
    parse = in_subprocess("parse")
    conv = in_subprocess("convert", str(large), str(archive))
    exp = in_subprocess("export", str(archive), str(large.with_suffix(".back")))
    seek = in_subprocess("seek", str(archive), str(options.samples))
    command = "python bench/bench_pbstream.py" + (" --quick" if options.quick else "")
    text = table(parse, large, conv, exp, seek, command)
    print(text)
    from results import write_section

    write_section(START, END, text)


if __name__ == "__main__":
    main()
