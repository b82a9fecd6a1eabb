"""Compact convert and export now, against the stored layout as it was before the compact one.

Issue 20 asks that the compact default be "no slower than today's stored layout": the stored
layout of the code the issue was filed against (`--baseline`, default d207a8c, the commit the
compact layout was built on). That code is checked out into a temporary worktree with its own
virtual environment (sharing this one's packages), and every variant runs in a child process
of its own interpreter, rounds alternating the variants (same machine load for each):

- `compact`: this code, the default layout;
- `stored`: this code, `--stored`;
- `stored@REV`: the baseline's stored layout (its only one).

Each child converts and exports once untimed (imports, page cache), then `--repeat` times
timed; the best is kept, and the best over rounds reported. Inputs: every real recording of
`../shared/realdata` (CARLA, ROS1 bags, pbstream) and, with `--mb N`, the synthetic inputs
of `bench_convert.py` at N MB. Every export is compared byte for byte with its source.

    python bench/bench_compact_before.py                  # real files, 3 rounds
    python bench/bench_compact_before.py --mb 100         # and the 100 MB inputs
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import site
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_convert import INPUTS
from results import write_section

ROOT = Path(__file__).resolve().parents[1]
REALDATA = ROOT.parent / "shared" / "realdata"
START, END = "<!-- compact-before:start -->", "<!-- compact-before:end -->"

#: Run in a child: convert FILE in LAYOUT to OUT and export it back, `repeat` times after one
#: untimed pass; prints the best seconds of each and whether the export is byte for byte.
CHILD = """
import contextlib, hashlib, json, sys, time
from pathlib import Path
from nanorec.contract import ConvertRequest, ExportRequest
import nanorec
from nanorec import ArchiveReader, registry
try:
    from nanorec.archive.layout import use_layout
except ImportError:  # before the compact layout: stored is all there is
    use_layout = lambda layout: contextlib.nullcontext()
path, layout, out, repeat = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3]), int(sys.argv[4])
converter = registry.for_native(path)
back = out.with_suffix(".back")
def clock():
    return time.perf_counter(), time.process_time()  # wall, CPU of every thread
def once():
    start = clock()
    with use_layout(layout):
        converter.convert(path, out, ConvertRequest(overwrite=True))
    middle = clock()
    with ArchiveReader(out) as reader:
        converter.export(reader, back, ExportRequest(overwrite=True))
    end = clock()
    return [b - a for a, b in (*zip(start, middle), *zip(middle, end))]
once()
times = list(zip(*(once() for _ in range(repeat))))
same = hashlib.sha256(back.read_bytes()).digest() == hashlib.sha256(path.read_bytes()).digest()
print(json.dumps({"convert": min(times[0]), "convert cpu": min(times[1]),
                  "export": min(times[2]), "export cpu": min(times[3]),
                  "size": out.stat().st_size, "identical": same, "code": nanorec.__file__}))
"""


def baseline_python(revision: str, folder: Path) -> Path:
    """An interpreter running the code at `revision` (a worktree in `folder`)."""
    tree = folder / "baseline"
    subprocess.run(
        ["git", "-C", str(ROOT), "worktree", "add", "-q", "--detach", str(tree), revision],
        check=True,
    )
    subprocess.run([sys.executable, "-m", "venv", str(tree / ".venv")], check=True)
    python = tree / ".venv" / "bin" / "python"
    target = subprocess.run(
        [str(python), "-c", "import site; print(site.getsitepackages()[0])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    # this environment's packages (numpy, msgpack, ...) without reinstalling them
    Path(target, "zz_bench_shared.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    subprocess.run(
        [
            str(python),
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "-e",
            str(tree),
        ],
        check=True,
    )
    return python


def run_child(python: Path, path: Path, layout: str, out: Path, repeat: int) -> dict[str, Any]:
    done = subprocess.run(
        [str(python), "-c", CHILD, str(path), layout, str(out), str(repeat)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": ""},
        cwd=out.parent,  # not this checkout: `-c` puts the working directory first on the path
    )
    if done.returncode:
        raise SystemExit(f"{python} on {path} ({layout}) failed:\n{done.stderr}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def inputs(folder: Path, mb: int | None) -> list[Path]:
    files = sorted(
        path
        for kind in ("carla", "rosbag", "pbstream")
        if (REALDATA / kind).is_dir()
        for path in (REALDATA / kind).iterdir()
        if path.suffix in (".log", ".rec", ".bag", ".pbstream")
    )
    if mb:
        suffix = {"carla": ".log", "carla-small": ".log", "rosbag": ".bag", "pbstream": ".pbstream"}
        for name, make in INPUTS.items():
            path = folder / f"{name}-{mb}MB{suffix[name]}"
            make(path, mb << 20)
            files.append(path)
    return files


def table(rows: list[dict[str, Any]], label: str) -> str:
    lines = [
        f"| input | MB | convert s: compact / stored / {label} | compact / {label}: wall "
        f"(CPU) | export s: compact / stored / {label} | compact / {label}: wall (CPU) "
        f"| archive / source: compact ({label}) |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        c, s, b = row["compact"], row["stored"], row[label]
        cells = []
        for key in ("convert", "export"):
            cells.append(f"{c[key]:.3f} / {s[key]:.3f} / {b[key]:.3f}")
            cells.append(f"**{c[key] / b[key]:.2f}** ({c[key + ' cpu'] / b[key + ' cpu']:.2f})")
        lines.append(
            f"| {row['name']} | {row['mb']:.1f} | {' | '.join(cells)} "
            f"| {c['size'] / row['bytes']:.3f} ({b['size'] / row['bytes']:.3f}) |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--baseline", default="d207a8c", help="the code before compact")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=2, help="timed passes per child")
    parser.add_argument("--mb", type=int, help="also bench_convert's inputs at this size")
    args = parser.parse_args()
    label = f"stored@{args.baseline}"
    with tempfile.TemporaryDirectory(prefix="bench-before-") as tmp:
        folder = Path(tmp)
        try:
            pythons = {
                "compact": Path(sys.executable),
                "stored": Path(sys.executable),
                label: baseline_python(args.baseline, folder),
            }
            rows = []
            for path in inputs(folder, args.mb):
                best: dict[str, dict[str, Any]] = {}
                for _ in range(args.rounds):
                    for variant, python in pythons.items():
                        layout = "compact" if variant == "compact" else "stored"
                        got = run_child(python, path, layout, folder / "out.zip", args.repeat)
                        code = python.parents[2] if variant == label else ROOT
                        if not Path(got["code"]).is_relative_to(code):
                            raise SystemExit(f"{variant} ran {got['code']}, not from {code}")
                        if not got["identical"]:
                            raise SystemExit(f"{path}: {variant} export is not byte for byte")
                        kept = best.setdefault(variant, got)
                        for key in ("convert", "convert cpu", "export", "export cpu"):
                            kept[key] = min(kept[key], got[key])
                size = path.stat().st_size
                rows.append({"name": path.name, "mb": size / 1e6, "bytes": size, **best})
                print(path.name, "done", file=sys.stderr)
        finally:
            subprocess.run(
                ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(folder / "baseline")],
                check=False,
            )
    text = table(rows, label)
    print(text)
    command = "python bench/bench_compact_before.py" + (f" --mb {args.mb}" if args.mb else "")
    write_section(
        START,
        END,
        f"{START}\n## Compact now against the stored layout before it (`bench/"
        f"bench_compact_before.py`)\n\nMachine: {platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}. Date: {dt.date.today()}. Command: `{command}`. "
        f"Each variant in its own process, {args.rounds} rounds alternating the variants, best "
        f"of {args.repeat} timed passes a round; `{label}` is the code the compact layout was "
        "built on (its only layout), run from a worktree of that commit. Every export "
        "byte for byte.\n\n"
        f"{text}\n{END}",
    )


if __name__ == "__main__":
    main()
