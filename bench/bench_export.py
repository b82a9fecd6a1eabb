"""Benchmark `nanorec export --format parquet|mcap` in MB/s of CARLA source (issue 21's aim:
Parquet >= 50 MB/s, MCAP >= 30 MB/s).

Generates (or reuses, in bench/out/) a synthetic CARLA recording of `--mb` MB (family
0.9.16, the busy town of bench_carla.py), converts it once, then for each format measures,
best of `--repeat`, wall and CPU seconds (this process's user+system time: on a shared
machine the wall clock also counts other people's work) of:
- `archive`: `export_parquet` / `export_mcap` from the converted archive;
- `native`: the same from the .log, converted to a temporary archive first (what
  `nanorec export run.log --format ...` does).
With `--old`, also the Parquet export through `rows` (one dict a row, the path of every
recording without a columnar producer, and CARLA's before) on the first `--old-frames`
frames, scaled to MB/s of the source those frames hold. The real CARLA files of
../shared/realdata/carla are measured too (from the archive). Writes bench/RESULTS.md's
`export` section.

    python bench/bench_export.py [--mb 100] [--repeat 3] [--old]
    python bench/bench_export.py --only mcap [--archive-only]   # prints, writes nothing
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import platform
import resource
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from results import write_section

HERE = Path(__file__).resolve().parent
OUT = HERE / "out"
REAL = HERE.parent.parent / "shared" / "realdata" / "carla"
START, END = "<!-- export:start -->", "<!-- export:end -->"
SCENE = {"vehicles": 120, "walkers": 60, "traffic_lights": 40}


def cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def best(action: Callable[[], Any], repeat: int) -> tuple[float, float]:
    """The fastest run's (wall, cpu) seconds."""
    runs = []
    for _ in range(repeat):
        wall, used = time.perf_counter(), cpu()
        action()
        runs.append((time.perf_counter() - wall, cpu() - used))
    return min(runs, key=lambda run: run[1])


class RowsOnly:
    """A recording seen without its columnar producer: the export goes through `rows`."""

    def __init__(self, recording: Any) -> None:
        self._recording = recording

    def __getattr__(self, name: str) -> Any:
        if name == "table_columns":
            raise AttributeError(name)
        return getattr(self._recording, name)


def export(to: str, source: Path, out: Path, recording: Any = None, **options: Any) -> None:
    from nanorec import registry
    from nanorec.outputs.arrow import export_parquet
    from nanorec.outputs.mcap import export_mcap

    run = export_parquet if to == "parquet" else export_mcap
    if recording is not None:
        run(recording, out, overwrite=True, **options)
        return
    with registry.open(source) as opened:
        run(opened, out, overwrite=True, **options)


def synthetic(mb: int) -> Path:
    from nanorec.converters.carla.generate import generate_to

    path = OUT / f"export-carla-0.9.16-{mb}MB.log"
    if not path.exists():
        OUT.mkdir(exist_ok=True)
        generate_to(path, "0.9.16", target_bytes=mb * 1_000_000, **SCENE)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=100, help="synthetic source size, MB")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--old", action="store_true", help="also the rows path (Parquet)")
    parser.add_argument("--old-frames", type=int, default=300)
    parser.add_argument("--only", choices=("parquet", "mcap"), help="one format (no RESULTS)")
    parser.add_argument("--archive-only", action="store_true", help="not from the native .log")
    args = parser.parse_args()
    import pyarrow.parquet  # noqa: F401  (imports outside the timings)
    from mcap.writer import Writer  # noqa: F401

    from nanorec import registry
    from nanorec.converters.carla.convert import convert
    from nanorec.selection import Selection

    rows: list[str] = []
    source = synthetic(args.mb)
    size = source.stat().st_size
    with tempfile.TemporaryDirectory(prefix="bench-export-") as tmp:
        folder = Path(tmp)
        archive = folder / "source.nanover.zip"
        convert_wall, convert_cpu = best(lambda: convert(source, archive, overwrite=True), 1)
        rows.append(
            f"| {source.name}: convert (once, for `archive`) | {size / 1e6:.0f} | "
            f"{convert_wall:.2f} | {convert_cpu:.2f} | {size / 1e6 / convert_cpu:.0f} |"
        )
        formats = (args.only,) if args.only else ("parquet", "mcap")
        sources = [("archive", archive), ("native .log", source)][: 1 if args.archive_only else 2]
        for to in formats:
            out = folder / ("out" if to == "parquet" else "out.mcap")
            for where, path in sources:
                wall, used = best(lambda: export(to, path, out), args.repeat)  # noqa: B023
                rows.append(
                    f"| {source.name}: {to} from the {where} | {size / 1e6:.0f} | {wall:.2f} | "
                    f"{used:.2f} | **{size / 1e6 / used:.1f}** |"
                )
                print(rows[-1], flush=True)
        if args.old:
            with registry.open(archive) as recording:
                frames = min(args.old_frames, len(recording))
                index = recording.reader.index
                share = size * frames / len(recording)
                cut = dataclasses.replace(Selection(), first=0, stop=frames)
                out = folder / "old"
                for label, seen in (("rows (old)", RowsOnly(recording)), ("columns", recording)):
                    wall, used = best(
                        lambda s=seen, o=out: export("parquet", archive, o, s, selection=cut),  # type: ignore[misc]
                        1,
                    )
                    rows.append(
                        f"| {source.name}, first {frames} of {len(index)} frames: parquet "
                        f"through {label} | {share / 1e6:.1f} | {wall:.2f} | {used:.2f} | "
                        f"{share / 1e6 / used:.1f} |"
                    )
                    print(rows[-1], flush=True)
        for path in sorted(REAL.glob("*")) if REAL.is_dir() else []:
            real = folder / (path.name + ".nanover.zip")
            convert(path, real, overwrite=True)
            for to in formats:
                out = folder / ("real" if to == "parquet" else "real.mcap")
                wall, used = best(lambda: export(to, real, out), args.repeat)  # noqa: B023
                rows.append(
                    f"| real {path.name}: {to} from the archive | "
                    f"{path.stat().st_size / 1e6:.2f} | {wall:.2f} | {used:.2f} | "
                    f"{path.stat().st_size / 1e6 / used:.1f} |"
                )
                print(rows[-1], flush=True)
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    command = f"python bench/bench_export.py --mb {args.mb} --repeat {args.repeat}"
    command += " --old" if args.old else ""
    text = (
        f"{START}\n## Parquet and MCAP export, MB/s of CARLA source (`{command}`)\n\n"
        f"{stamp}, Python {platform.python_version()}, {platform.machine()}, "
        f"{platform.processor() or 'cpu'}; best of {args.repeat} by CPU time. MB/s = source "
        "MB / CPU s (user+system of this process: on a shared machine the wall clock also "
        "counts the others' work). Aims (issue 21): Parquet >= 50, MCAP >= 30.\n\n"
        "| run | source MB | wall s | CPU s | MB/s (CPU) |\n|---|---|---|---|---|\n"
        + "\n".join(rows)
        + f"\n{END}"
    )
    print(text)
    if not args.only and not args.archive_only:
        write_section(START, END, text)


if __name__ == "__main__":
    main()
