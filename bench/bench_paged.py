"""The paged layout on disk (issue 36 item 2): what it costs a local archive, in CPU seconds.

Writes the same `--messages` messages (`--size` random bytes each, as bench_remote.py) twice,
paged (the default) and unpaged (`ArchiveWriter(paged=False)`, format_version 1, the layout
before), and measures, each in a fresh process and in the order A B A B (`--rounds`):

- writing (CPU seconds of the process, its deflating threads included) and the file's size;
- opening (`ArchiveReader`: the paged one reads every page at open);
- `--reads` random messages read and decoded (CRC checked), CPU microseconds each; and both
  archives open in one process, read in turn over the same messages (a loaded machine
  scatters fresh processes by tens of %).

Prints a table and writes the `paged` section of bench/RESULTS.md.

    python bench/bench_paged.py                      # 1,000,000 messages
    python bench/bench_paged.py --messages 100000    # quick
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.results import write_section  # noqa: E402

LAYOUTS = ("paged", "unpaged")


def phase_write(path: Path, count: int, size: int, paged: bool) -> dict[str, Any]:
    from nanorec.archive.writer import ArchiveWriter

    head = b"\x81\xa1m\xc4" + bytes([size])
    blob = random.Random(36).randbytes(size * 10_000)
    cpu = time.process_time()
    with ArchiveWriter(path, source_format="bench", paged=paged, overwrite=True) as writer:
        for start in range(0, count, 10_000):
            n = min(10_000, count - start)
            writer.write_packed_run(
                [head + blob[i * size : (i + 1) * size] for i in range(n)],
                types=[("m",)] * n,
                timestamps_us=range(start * 1000, (start + n) * 1000, 1000),
            )
    return {"write_cpu_s": time.process_time() - cpu, "bytes": path.stat().st_size}


def phase_read(path: Path, reads: int) -> dict[str, Any]:
    from nanorec.archive.reader import ArchiveReader

    cpu = time.process_time()
    reader = ArchiveReader(path)
    opened = time.process_time() - cpu
    rng = random.Random(1)
    numbers = [rng.randrange(len(reader)) for _ in range(reads)]
    cpu = time.process_time()
    for number in numbers:
        reader.read(number)
    per = (time.process_time() - cpu) / reads
    reader.close()
    return {"open_cpu_ms": opened * 1e3, "read_cpu_us": per * 1e6}


def phase_alternate(paths: list[Path], reads: int, rounds: int = 6) -> dict[str, Any]:
    """Both archives open in one process, read in turn over the same random messages: what
    fresh processes on a loaded machine scatter, this holds steady."""
    from nanorec.archive.reader import ArchiveReader

    readers = [ArchiveReader(path) for path in paths]
    rng = random.Random(1)
    numbers = [rng.randrange(len(readers[0])) for _ in range(reads)]
    out: dict[str, Any] = {layout: [] for layout in LAYOUTS}
    for _ in range(rounds):
        for layout, reader in zip(LAYOUTS, readers, strict=True):
            cpu = time.process_time()
            for number in numbers:
                reader.read(number)
            out[layout].append((time.process_time() - cpu) / reads * 1e6)
    return out


def _child(args: list[str]) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, __file__, "--phase", *args], check=True, capture_output=True, text=True
    )
    result: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--reads", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--phase", nargs="*", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase:
        name, path, *rest = args.phase
        if name == "write":
            out = phase_write(Path(path), int(rest[0]), int(rest[1]), rest[2] == "paged")
        elif name == "alternate":
            out = phase_alternate([Path(path), Path(rest[0])], int(rest[1]))
        else:
            out = phase_read(Path(path), int(rest[0]))
        print(json.dumps(out))
        return
    folder = Path(tempfile.mkdtemp(prefix="nanorec-bench-paged-"))
    samples: dict[str, dict[str, list[float]]] = {layout: {} for layout in LAYOUTS}
    for _ in range(args.rounds):
        for layout in LAYOUTS:  # A B A B
            path = folder / f"{layout}.nanover.zip"
            found = _child(["write", str(path), str(args.messages), str(args.size), layout])
            found.update(_child(["read", str(path), str(args.reads)]))
            for key, value in found.items():
                samples[layout].setdefault(key, []).append(value)
    paths = [str(folder / f"{layout}.nanover.zip") for layout in LAYOUTS]
    alternate = _child(["alternate", *paths, str(args.reads // 6)])
    for layout in LAYOUTS:
        samples[layout]["alternate_us"] = alternate[layout]
    keys = (
        ("bytes", "archive size, bytes", "{:,.0f}"),
        ("write_cpu_s", "write, CPU s", "{:.2f}"),
        ("open_cpu_ms", "open, CPU ms", "{:.1f}"),
        ("read_cpu_us", "random read + decode, CPU us", "{:.2f}"),
        ("alternate_us", "the same, one process, in turn", "{:.2f}"),
    )
    lines = ["| | " + " | ".join(LAYOUTS) + " |", "|---|" + "---|" * len(LAYOUTS)]
    for key, label, form in keys:
        cells = []
        for layout in LAYOUTS:
            values = samples[layout][key]
            cells.append(
                " / ".join(form.format(v) for v in values)
                + f" (median {form.format(statistics.median(values))})"
            )
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    text = "\n".join(lines)
    print(text)
    start = "## Paged layout on disk"
    end = "<!-- end paged -->"
    write_section(
        start,
        end,
        f"{start} (`python bench/bench_paged.py --messages {args.messages} --rounds "
        f"{args.rounds}`)\n\n{args.messages:,} messages of {args.size} random bytes, compact, "
        f"written paged and unpaged (format_version 1), each phase in a fresh process, the "
        f"rounds in the order A B A B (each value listed); CPU time of the process (its "
        f"deflating threads included), {args.reads:,} random reads; then both archives "
        f"open in one process, read in turn 6 times over the same {args.reads // 6:,} "
        f"random messages.\n\n{text}\n{end}",
    )


if __name__ == "__main__":
    main()
