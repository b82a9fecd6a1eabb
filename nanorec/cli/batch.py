"""`nanorec convert A B DIR... -o OUTDIR -j N`: the batch form of convert (see nanorec.batch).

One overall progress bar (files, MB, rate, ETA) on a terminal, a summary at the end
(converted / skipped / failed, with the one line of each failure and each damaged input),
exit status 1 if any file failed (or was damaged, unless --keep-going).
"""

from __future__ import annotations

import io
import sys
import time
from collections.abc import Mapping
from pathlib import Path

import typer

from nanorec.batch import Outcome, plan, run_batch
from nanorec.cli import EXIT_PROBLEM, run
from nanorec.errors import UsageError
from nanorec.layout import COMPACT


def batch_convert(
    sources: list[Path],
    output: Path | None,
    *,
    jobs: int,
    force: bool,
    keep_going: bool,
    fmt: str | None,
    options: Mapping[str, str],
    layout: str = COMPACT,
) -> int:
    """Convert every recording in `sources` into `output` (a directory); returns the
    exit status."""

    def action() -> int:
        if output is None:
            raise UsageError("several sources or a directory need -o OUTDIR")
        if output.exists() and not output.is_dir():
            raise UsageError(f"{output} is not a directory")
        output.mkdir(parents=True, exist_ok=True)
        todo, outcomes = plan(sources, output)
        total = sum(job.size for job in todo)
        shown = sys.stderr.isatty()
        start = time.perf_counter()
        with typer.progressbar(
            length=max(total, 1),
            label=f"{len(todo)} files",
            file=sys.stderr if shown else io.StringIO(),
            show_eta=True,
            show_percent=True,
        ) as bar:
            for outcome in run_batch(
                todo, workers=jobs, force=force, options=options, fmt=fmt, layout=layout
            ):
                outcomes.append(outcome)
                bar.update(outcome.job.size)
                done_mb = sum(o.job.size for o in outcomes) / 1e6
                rate = done_mb / max(time.perf_counter() - start, 1e-9)
                bar.label = f"{len(outcomes)}/{len(todo)} files, {done_mb:.0f} MB, {rate:.0f} MB/s"
        typer.echo(summary(outcomes, time.perf_counter() - start))
        failed = any(o.status == "failed" for o in outcomes)
        damaged = any(o.status == "converted" and o.problem for o in outcomes)
        return EXIT_PROBLEM if failed or (damaged and not keep_going) else 0

    return run(action)


def summary(outcomes: list[Outcome], seconds: float) -> str:
    counts = {status: 0 for status in ("converted", "skipped", "failed")}
    for outcome in outcomes:
        counts[outcome.status] += 1
    converted_mb = sum(o.job.size for o in outcomes if o.status == "converted") / 1e6
    lines = [
        f"{counts['converted']} converted ({converted_mb:.1f} MB in {seconds:.1f} s), "
        f"{counts['skipped']} skipped (already converted), {counts['failed']} failed"
    ]
    for outcome in outcomes:
        if outcome.status == "failed":
            lines.append(f"  FAILED {outcome.job.source}: {outcome.problem}")
        elif outcome.problem:
            lines.append(f"  damaged {outcome.job.source}: {outcome.problem}")
    return "\n".join(lines)
