"""Small files and start-up (issue 33, items 3 and 4): what a command costs before its work,
and converting many small CARLA recordings, against the MCAP writer in the same run.

Start-up: whole processes, CPU seconds (user + system, `RUSAGE_CHILDREN`), run side by side
in alternation, medians of `--runs`: `nanorec --version` and `--help` against
`python -c "import typer"`, `nanorec info SMALL.nanover.zip` (the smallest CARLA sample's
archive) against `python -c "import typer, numpy"`.

Batch: `--files` small real recordings (the real CARLA logs of ../shared/realdata/carla,
0.1-1.7 MB, tiled by hard links of one private copy; the CARLA samples without realdata),
converted in-process (`registry.get("carla").convert` per file, CPU of the whole process
including its threads) and by `nanorec convert DIR -o OUT` (one process); the anchor is the
`mcap` package's Writer storing, per file, the very message bytes of that file's archive
(prebuilt in memory, default zstd chunks, against our default compact layout), as in
`bench_convert.py`. ratio = mcap CPU s / ours (the issue's aim: >= 0.5). Rounds alternate
ours and the peer (A B A B), best of each kept. Writes the `small` section of RESULTS.md.

    python bench/bench_small.py                 # 1000 files, 7 runs
    python bench/bench_small.py --files 200 --runs 7
    python bench/bench_small.py --startup-only --runs 9   # the start-up table alone
    python bench/bench_small.py --batch-only --runs 5     # the batch, start-up table kept
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from results import write_section

from nanorec.contract import ConvertRequest

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
REALDATA = REPO.parent / "shared" / "realdata" / "carla"
ROUNDS = 2
START, END = "<!-- small:start -->", "<!-- small:end -->"
#: The start-up part inside the section, rewritten alone by `--startup-only`.
STARTUP_START, STARTUP_END = "<!-- small-startup:start -->", "<!-- small-startup:end -->"


def _child_cpu(command: Sequence[str]) -> float:
    """CPU seconds (user + system) of running `command` to its end."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _compiled() -> None:
    """Compile our modules, as pip leaves an installed package: with PYTHONDONTWRITEBYTECODE
    set (or a module edited since) every process would compile what it imports from the
    sources."""
    import compileall

    for folder in ("nanorec", "converters"):
        compileall.compile_dir(REPO / folder, quiet=1)
    compileall.compile_file(REPO / "_nanorec_entry.py", quiet=1)


def startup(runs: int, work: Path) -> list[dict[str, Any]]:
    from nanorec import registry

    _compiled()

    small = min((REPO / "samples").glob("carla-*.log"), key=lambda p: p.stat().st_size)
    archive = work / "small.nanover.zip"
    registry.get("carla").convert(small, archive, ConvertRequest(overwrite=True))
    nanorec = str(Path(sys.executable).parent / "nanorec")
    commands = {
        "python -c 'import typer'": [sys.executable, "-c", "import typer"],
        "nanorec --version": [nanorec, "--version"],
        "nanorec --help": [nanorec, "--help"],
        "python -c 'import typer, numpy'": [sys.executable, "-c", "import typer, numpy"],
        f"nanorec info {small.name}.nanover.zip": [nanorec, "info", str(archive)],
    }
    seconds: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(runs):  # alternating: the machine may be shared
        for name, command in commands.items():
            seconds[name].append(_child_cpu(command))
    median = {name: statistics.median(values) for name, values in seconds.items()}
    typer_s, numpy_s = median["python -c 'import typer'"], median["python -c 'import typer, numpy'"]
    rows = []
    for name, value in median.items():
        anchor = numpy_s if name.startswith("nanorec info") else typer_s
        rows.append(
            {
                "command": f"`{name}`",
                "CPU s (median)": round(value, 3),
                "x anchor": "anchor" if name.startswith("python") else round(value / anchor, 2),
            }
        )
    return rows


def _tiles(work: Path, files: int) -> tuple[Path, int]:
    """A folder of `files` recordings: the real CARLA logs (or the samples) in turn, as hard
    links to one copy each; returns it and its total bytes."""
    sources = sorted(p for p in REALDATA.glob("*") if p.is_file()) if REALDATA.is_dir() else []
    sources = sources or sorted((REPO / "samples").glob("carla-*.log"))
    copies = work / "copies"
    copies.mkdir()
    originals = []
    for source in sources:
        copy = copies / source.name
        copy.write_bytes(source.read_bytes())
        originals.append(copy)
    folder = work / "tiles"
    folder.mkdir()
    total = 0
    for number in range(files):
        original = originals[number % len(originals)]
        os.link(original, folder / f"{number:05d}-{original.name}")
        total += original.stat().st_size
    return folder, total


def _payloads(archive: Path) -> tuple[list[bytes], list[int], list[str]]:
    from nanorec.archive.reader import ArchiveReader

    with ArchiveReader(archive) as reader:
        payloads = [bytes(reader.raw(i)) for i in range(len(reader))]
        stamps = (reader.index.timestamp_us * 1000).tolist()
        kinds = [
            reader.index.types(i)[0] if reader.index.types(i) else "" for i in range(len(reader))
        ]
    return payloads, stamps, kinds


def _mcap_cpu(messages: list[tuple[list[bytes], list[int], list[str]]], out: Path) -> float:
    """CPU seconds for the `mcap` Writer to store each file's messages (one file each)."""
    from mcap.writer import CompressionType, Writer

    start = time.process_time()
    for payloads, stamps, kinds in messages:
        with out.open("wb") as stream:
            writer = Writer(stream, compression=CompressionType.ZSTD)
            writer.start()
            schema = writer.register_schema(name="bytes", encoding="", data=b"")
            channels: dict[str, int] = {}
            for payload, stamp, kind in zip(payloads, stamps, kinds, strict=True):
                channel = channels.get(kind)
                if channel is None:
                    channel = channels[kind] = writer.register_channel(kind, "msgpack", schema)
                writer.add_message(channel, log_time=stamp, data=payload, publish_time=stamp)
            writer.finish()
    return time.process_time() - start


def batch(files: int, work: Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    from nanorec import registry

    _compiled()  # the batch's `nanorec convert` process too
    folder, total = _tiles(work, files)
    inputs = sorted(folder.iterdir())
    converter = registry.get("carla")
    out = work / "out"
    out.mkdir()
    # Untimed first pass: imports, the sources' pages, and each distinct file's payloads.
    by_inode: dict[int, tuple[list[bytes], list[int], list[str]]] = {}
    for source in inputs:
        archive = out / (source.name + ".nanover.zip")
        converter.convert(source, archive, ConvertRequest(overwrite=True))
        inode = source.stat().st_ino
        if inode not in by_inode:
            by_inode[inode] = _payloads(archive)
    messages = [by_inode[source.stat().st_ino] for source in inputs]
    payload_bytes = sum(len(p) for payloads, _, _ in messages for p in payloads)
    nanorec = str(Path(sys.executable).parent / "nanorec")
    seconds: dict[str, list[float]] = {}
    for _ in range(ROUNDS):  # A B A B
        start = time.process_time()
        for source in inputs:
            converter.convert(
                source, out / (source.name + ".nanover.zip"), ConvertRequest(overwrite=True)
            )
        seconds.setdefault("in-process", []).append(time.process_time() - start)
        seconds.setdefault("mcap", []).append(_mcap_cpu(messages, work / "out.mcap"))
        command = [nanorec, "convert", str(folder), "-o", str(work / "cli"), "--force"]
        seconds.setdefault("cli", []).append(_child_cpu(command))
    best = {key: min(values) for key, values in seconds.items()}
    mb, payload_mb = total / 1e6, payload_bytes / 1e6
    rows = [
        {
            "what": f"mcap Writer (zstd), {files} files",
            "CPU s": round(best["mcap"], 2),
            "MB/s": round(payload_mb / best["mcap"], 1),
            "ms a file": round(best["mcap"] / files * 1e3, 2),
            "ratio mcap / ours": "anchor",
        }
    ]
    for key, what in (
        ("in-process", "registry.get('carla').convert per file"),
        ("cli", "`nanorec convert DIR -o OUT` (one process)"),
    ):
        rows.append(
            {
                "what": what,
                "CPU s": round(best[key], 2),
                "MB/s": round(mb / best[key], 1),
                "ms a file": round(best[key] / files * 1e3, 2),
                "ratio mcap / ours": round(best["mcap"] / best[key], 2),
            }
        )
    facts = {"files": files, "MB": round(mb, 1), "sources": len(by_inode)}
    return rows, facts


def _table(rows: list[dict[str, Any]]) -> list[str]:
    header = list(rows[0])
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(row[key]) for key in header) + " |" for row in rows]
    return lines


def _startup_text(started: list[dict[str, Any]], runs: int) -> list[str]:
    load = os.getloadavg()[0]
    return [
        STARTUP_START,
        f"Start-up: whole processes, alternating, median of {runs}; anchors "
        "`import typer` (for --version, --help; aim <= 1.5x) and `import typer, numpy` "
        f"(for info; aim <= 2x). Python {platform.python_version()}, load average {load:.1f}, "
        f"{datetime.date.today()}, `python bench/bench_small.py --startup-only --runs {runs}` "
        "(or the whole bench); modules compiled first, as an installed package is.",
        "",
        *_table(started),
        STARTUP_END,
    ]


def _kept_startup() -> list[str]:
    """The start-up table as RESULTS.md has it (`--batch-only`)."""
    from results import RESULTS

    text = RESULTS.read_text()
    if STARTUP_START not in text or STARTUP_END not in text:
        return []
    kept = text.split(STARTUP_START, 1)[1].split(STARTUP_END, 1)[0]
    return [STARTUP_START + kept + STARTUP_END]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=1000, help="small recordings in the batch")
    parser.add_argument("--runs", type=int, default=7, help="start-up runs per command")
    parser.add_argument(
        "--startup-only", action="store_true", help="time start-up only (its table alone)"
    )
    parser.add_argument(
        "--batch-only",
        action="store_true",
        help="time the batch only (the start-up table in RESULTS.md is kept as it is)",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="nanorec-bench-") as folder:
        work = Path(folder)
        started = [] if args.batch_only else startup(args.runs, work)
        print(started, file=sys.stderr)
        if args.startup_only:
            text = "\n".join(_startup_text(started, args.runs))
            write_section(STARTUP_START, STARTUP_END, text)
            print(text)
            return
        batched, facts = batch(args.files, work)
        print(batched, file=sys.stderr)
    load = os.getloadavg()[0]
    text = "\n".join(
        [
            START,
            "## Small files and start-up (issue 33, items 3-4)",
            "",
            f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
            f"Python {platform.python_version()}, load average {load:.1f} at the end. Date: "
            f"{datetime.date.today()}. Command: `python bench/bench_small.py --files "
            f"{args.files} --runs {args.runs}{' --batch-only' if args.batch_only else ''}`. "
            "All times are CPU seconds (user + system).",
            "",
            *(_kept_startup() if args.batch_only else _startup_text(started, args.runs)),
            "",
            f"Batch: {facts['files']} real CARLA recordings ({facts['sources']} distinct, "
            f"{facts['MB']} MB in all), compact layout, against the `mcap` Writer storing "
            f"each file's message bytes with zstd chunks; best of {ROUNDS} alternating rounds "
            "(MB/s: source for us, payload for MCAP; aim: ratio >= 0.5).",
            "",
            *_table(batched),
            END,
        ]
    )
    write_section(START, END, text)
    print(text)


if __name__ == "__main__":
    main()
