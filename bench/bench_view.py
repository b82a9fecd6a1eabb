"""Benchmark `nanorec view` on a large archive: first paint after start, seek-to-paint, page
weight and the server's memory.

Generates (or reuses, in bench/out/) a synthetic CARLA recording of about `--size` MB (the
same busy town as bench_carla.py; 1700 MB make a 1 GB archive, which stores it at 0.6x) and
its archive, then, with Debian's Chromium driven by
Playwright (`/usr/bin/chromium`):

- first paint: from launching `nanorec view ARCHIVE --no-browser` to the page showing
  message 0 and its scene (`body[data-painted]`), wall time (it is a latency), with the
  server's CPU time up to then from /proc; then the overview drawn under it
  (`body[data-ready]`); runs alternate with a small archive (A B A B), each a fresh server;
- seek-to-paint: 100 random seeks timed in the page with `performance.now()` around
  `nanorecView.seek(n)` (the message's and the scene's fetch, the inspector and the canvas
  drawn), median and p95;
- page weight: the bytes of index.html, app.js and style.css;
- server memory: the server's peak RSS and anonymous RSS after the seeks (mmap'ed archive
  pages count in RSS, not in anon).

Writes the table into bench/RESULTS.md between the `view` markers.

    python bench/bench_view.py              # a 1 GB archive
    python bench/bench_view.py --size 64    # quicker
"""

from __future__ import annotations

import argparse
import compileall
import datetime
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
OUT = HERE / "out"
CHROMIUM = "/usr/bin/chromium"
FAMILY = "0.9.16"
SCENE = {"vehicles": 120, "walkers": 60, "traffic_lights": 40}
START, END = "<!-- view:start -->", "<!-- view:end -->"
SEEKS = 100
#: The numbers before the first paint's work (kept in the section's prose, as measured then).
BEFORE = (
    "Before (the tree of commit c45cc19, same command, load not recorded): first paint 1.19 s "
    "median on the 1 GB archive (1.19, 1.14, 2.21; 0.57 s until the URL; server CPU 0.91 s to "
    "first paint) and 1.01 s on the 6 MB one (0.49 s until the URL; 0.73 s CPU); seek-to-paint "
    "31.6 / 43.7 ms; page 30,877 bytes. Since then: the overview and the plot's fields are "
    "asked after the first paint (the overview of the 1 GB archive, 0.74 s CPU, could take the "
    "lock first); no pydantic for view's default port; the archive's format read once; its "
    "block table joined as arrays; the URL printed once the socket listens, then the server's "
    "modules imported, the archive opened, and message 0 and its scene made, while the browser "
    "loads the page; message 0 and its scene asked with the summary; the CARLA recording "
    "without its converter's modules."
)
NANOREC = [sys.executable, "-c", "import sys, _nanorec_entry; sys.exit(_nanorec_entry.main())"]

sys.path.insert(0, str(HERE))
from results import write_section  # noqa: E402


def ensure_archive(megabytes: int) -> Path:
    """A synthetic CARLA recording of ~`megabytes` MB converted to an archive (reused)."""
    from nanorec.converters.carla.generate import generate_to

    log = OUT / f"view-carla-{FAMILY}-{megabytes}MB.log"
    archive = log.with_suffix(".nanover.zip")
    if archive.exists():
        return archive
    OUT.mkdir(exist_ok=True)
    started = time.process_time()
    generate_to(log, FAMILY, target_bytes=megabytes * 1_000_000, overwrite=True, seed=1, **SCENE)
    subprocess.run([*NANOREC, "convert", str(log), "-o", str(archive), "--force"], check=True)
    log.unlink()
    print(
        f"made {archive.name} ({archive.stat().st_size / 1e6:.0f} MB) "
        f"in {time.process_time() - started:.1f} s CPU (here)",
        file=sys.stderr,
    )
    return archive


def _proc(pid: int) -> dict[str, float]:
    """CPU seconds, peak RSS and anonymous RSS (MB) of process `pid` now."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    status = Path(f"/proc/{pid}/status").read_text()
    kb = {m[0]: int(m[1]) for m in re.findall(r"^(\w+):\s+(\d+) kB", status, re.M)}
    return {
        "cpu_s": (int(fields[11]) + int(fields[12])) / ticks,
        "peak_mb": kb.get("VmHWM", 0) / 1024,
        "anon_mb": kb.get("RssAnon", 0) / 1024,
    }


def first_paint(browser: Any, archive: Path, seeks: int = 0) -> dict[str, Any]:
    """One fresh server on `archive`: seconds to the first paint, then `seeks` timed seeks."""
    started = time.perf_counter()
    server = subprocess.Popen(
        [*NANOREC, "view", str(archive), "--no-browser"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert server.stdout is not None
        url = re.search(r" at (http://\S+/) ", server.stdout.readline())
        assert url, "no URL printed"
        listening = time.perf_counter() - started
        listening_cpu = _proc(server.pid)["cpu_s"]
        page = browser.new_page(viewport={"width": 1280, "height": 820})
        page.goto(url.group(1))
        page.wait_for_selector("body[data-painted='1']")  # message 0 and its scene
        result: dict[str, Any] = {"paint_s": time.perf_counter() - started}
        result["listening_s"] = listening
        result["listening_cpu_s"] = listening_cpu
        result["paint_cpu_s"] = _proc(server.pid)["cpu_s"]
        page.wait_for_selector("body[data-ready='1']")  # the overview under it too
        result["ready_s"] = time.perf_counter() - started
        if seeks:
            result["seeks_ms"] = page.evaluate(
                """async (count) => {
                    const total = window.nanorecView.state.summary.messages;
                    const times = [];
                    let seed = 37;
                    for (let i = 0; i < count; i++) {
                        seed = (seed * 1103515245 + 12345) % 2147483648;
                        const n = seed % total;
                        const t0 = performance.now();
                        await window.nanorecView.seek(n);
                        await new Promise(requestAnimationFrame);
                        times.push(performance.now() - t0);
                    }
                    return times;
                }""",
                seeks,
            )
            result.update(_proc(server.pid))
            result["viewable"] = page.evaluate("window.nanorecView.state.summary.viewable")
            result["messages"] = page.evaluate("window.nanorecView.state.summary.messages")
        page.close()
        return result
    finally:
        server.send_signal(2)
        server.wait(timeout=60)


def cat_cpu(archive: Path) -> float:
    """CPU seconds of `nanorec cat ARCHIVE --messages 0:1`: the command line's own start-up
    and one message, for scale (best of 3)."""
    import resource

    best = float("inf")
    for _ in range(3):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run(
            [*NANOREC, "cat", str(archive), "--messages", "0:1"], check=True, capture_output=True
        )
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        spent = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
        best = min(best, spent)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=1700, help="MB of the large CARLA log")
    parser.add_argument("--runs", type=int, default=3, help="first paints of each archive")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    from nanorec.view.server import page_weight

    large, small = ensure_archive(args.size), ensure_archive(10)
    for folder in ("nanorec", "converters"):  # as pip leaves an installed package
        compileall.compile_dir(HERE.parent / folder, quiet=1)
    load_before = os.getloadavg()[0]
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM)
        paints: dict[Path, list[dict[str, Any]]] = {small: [], large: []}
        for _ in range(args.runs):  # A B A B
            for archive in (small, large):
                paints[archive].append(first_paint(browser, archive))
        seeks = {archive: first_paint(browser, archive, SEEKS) for archive in (small, large)}
        browser.close()
    load_after = os.getloadavg()[0]
    reference = cat_cpu(large)
    rows = []
    for archive in (small, large):
        runs, seek = paints[archive], seeks[archive]
        times = sorted(seek["seeks_ms"])
        rows.append(
            f"| {archive.name} | {archive.stat().st_size / 1e6:.0f} | {seek['messages']} | "
            f"{statistics.median(r['paint_s'] for r in runs):.2f} "
            f"({', '.join(format(r['paint_s'], '.2f') for r in runs)}) | "
            f"{statistics.median(r['listening_s'] for r in runs):.2f} | "
            f"{statistics.median(r['paint_s'] - r['listening_s'] for r in runs):.2f} | "
            f"{statistics.median(r['listening_cpu_s'] for r in runs):.2f} / "
            f"{statistics.median(r['paint_cpu_s'] for r in runs):.2f} | "
            f"{statistics.median(r['ready_s'] for r in runs):.2f} | "
            f"{statistics.median(times):.1f} / {times[int(0.95 * len(times)) - 1]:.1f} | "
            f"{seek['peak_mb']:.0f} / {seek['anon_mb']:.0f} | {seek['viewable']} |"
        )
    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        platform.processor(),
    )
    text = "\n".join(
        [
            START,
            "## nanorec view: first paint, seek-to-paint, page weight (`bench/bench_view.py`)",
            "",
            f"Machine: {cpu}, {os.cpu_count()} cores (shared), Python "
            f"{platform.python_version()}, Chromium headless via Playwright. Date: "
            f"{datetime.date.today()}. Command: `python bench/bench_view.py --size {args.size}`."
            f" Recordings: synthetic CARLA {FAMILY} ({SCENE}), converted to archives. Load "
            f"average (1 min) {load_before:.1f} before the runs, {load_after:.1f} after: wall "
            "times stretch with it (the CPU times much less).",
            "",
            "| archive | MB | messages | first paint s, median (runs) | of which until the URL "
            "is printed, s | of which after it (page, answers, drawing), s | server CPU s "
            "until the URL / to first paint | overview drawn too, s | "
            "seek-to-paint ms median / p95 | server peak RSS / anon MB | scene drawn |",
            "|---|---|---|---|---|---|---|---|---|---|---|",
            *rows,
            "",
            f"Page weight: {page_weight()} bytes (index.html, app.js, style.css; aim < 150 KB). "
            f"First paint: from launching `nanorec view` (a fresh interpreter; nanorec's modules "
            f"compiled first, as an installed package's are) to message 0 and its scene shown, "
            f"wall time, small and large runs alternating; then the overview (the hero's whole "
            f"path, the bounds) drawn under it. Seek-to-paint: {SEEKS} random "
            "seeks timed in the page (`performance.now()` around fetch of message and scene, "
            "inspector and canvas, and the next animation frame). Peak RSS counts the archive's "
            "mmap'ed pages; anon is the server's own memory. For scale, `nanorec cat` of one "
            f"message of the large archive costs {reference:.2f} s CPU (best of 3): the server's "
            "CPU to first paint is the command line's start-up (its imports, the format found) "
            "plus milliseconds. Seek-to-paint is the message and its scene fetched, the inspector "
            "and the canvas drawn (every actor a box).",
            "",
            BEFORE,
            END,
        ]
    )
    write_section(START, END, text)
    print(text)


if __name__ == "__main__":
    main()
