"""`nanorec convert A B DIR... -o OUTDIR -j N`: the batch form of convert (see
nanorec.maintain.batch).

One overall progress bar (files, MB, rate, ETA) on a terminal, a summary at the end
(converted / skipped / failed, with the one line of each failure and each damaged input, and
each file with a recording's suffix that is not one), exit status 1 if any file failed (or
was damaged, unless --keep-going); sources holding no recording at all are an error.
"""

from __future__ import annotations

import io
import sys
import time
from collections.abc import Mapping
from pathlib import Path

import typer

from nanorec.archive.layout import COMPACT
from nanorec.archive.upload import exists
from nanorec.archive.urls import is_url
from nanorec.cli.app import EXIT_PROBLEM, run
from nanorec.errors import UsageError
from nanorec.maintain.batch import Outcome, plan, run_batch


def batch_convert(
    sources: list[Path],
    output: Path | None,
    *,
    jobs: int,
    force: bool,
    keep_going: bool,
    fmt: str | None,
    options: Mapping[str, object],
    layout: str = COMPACT,
) -> int:
    """Convert every recording in `sources` into `output` (a directory); returns the
    exit status."""

    def action() -> int:
        if output is None:
            raise UsageError("several sources or a directory need -o OUTDIR")
        if is_url(output):  # a prefix: one key per input, each uploaded once written
            pass
        elif output.exists() and not output.is_dir():
            raise UsageError(f"{output} is not a directory")
        else:
            output.mkdir(parents=True, exist_ok=True)
        todo, outcomes = plan(sources, output)
        if is_url(output) and todo:  # a store that cannot be reached fails here, not per file
            exists(str(todo[0].output))
        if not todo and all(o.status == "ignored" for o in outcomes):
            ignored = ", ".join(str(o.job.source) for o in outcomes)
            raise UsageError(
                f"no recording found in {', '.join(map(str, sources))}"
                + (f" (not recordings: {ignored})" if ignored else "")
            )
        shown = sys.stderr.isatty()
        start = time.perf_counter()
        done_bytes = 0
        # counts files (a byte count sits still while one big file converts in a worker)
        with typer.progressbar(
            length=max(len(todo), 1),
            label=f"0/{len(todo)} files",
            file=sys.stderr if shown else io.StringIO(),
            show_eta=True,
            show_percent=True,
            show_pos=False,
        ) as bar:
            for done, outcome in enumerate(
                run_batch(todo, workers=jobs, force=force, options=options, fmt=fmt, layout=layout),
                1,
            ):
                outcomes.append(outcome)
                done_bytes += outcome.job.size
                rate = done_bytes / 1e6 / max(time.perf_counter() - start, 1e-9)
                bar.label = f"{done}/{len(todo)} files, {done_bytes / 1e6:.0f} MB, {rate:.0f} MB/s"
                bar.update(1)
        typer.echo(summary(outcomes, time.perf_counter() - start))
        failed = any(o.status == "failed" for o in outcomes)
        damaged = any(o.status == "converted" and o.problem for o in outcomes)
        return EXIT_PROBLEM if failed or (damaged and not keep_going) else 0

    return run(action)


def summary(outcomes: list[Outcome], seconds: float) -> str:
    counts = {status: 0 for status in ("converted", "skipped", "failed", "ignored")}
    for outcome in outcomes:
        counts[outcome.status] += 1
    converted_mb = sum(o.job.size for o in outcomes if o.status == "converted") / 1e6
    ignored = f", {counts['ignored']} ignored (not recordings)" if counts["ignored"] else ""
    lines = [
        f"{counts['converted']} converted ({converted_mb:.1f} MB in {seconds:.1f} s), "
        f"{counts['skipped']} skipped (already converted){ignored}, {counts['failed']} failed"
    ]
    for outcome in outcomes:
        if outcome.status == "failed":
            lines.append(f"  FAILED {outcome.job.source}: {outcome.problem}")
        elif outcome.status == "ignored":
            lines.append(f"  ignored {outcome.job.source}: {outcome.problem}")
        elif outcome.problem:
            lines.append(f"  damaged {outcome.job.source}: {outcome.problem}")
    return "\n".join(lines)
