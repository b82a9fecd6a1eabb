"""Convert many recordings at once: a process pool, resumable, one bad file never fatal.

`plan` turns the sources (files, directories searched recursively, glob patterns) into jobs,
each a native file and the archive it becomes under the output directory: a named file's
archive goes at the top, a directory's files keep their layout under it. Files that would
share an archive keep instead their path below the folder they have in common (a/rec.log and
b/rec.log become a/ and b/rec.log.nanover.zip); any still sharing one fail. `run_batch` converts
them in `jobs` worker processes (replaced by fresh ones every `TASKS_PER_WORKER` files each,
so memory stays that of one conversion) and yields one `Outcome` per file as it finishes.

Resuming is near free: an archive that exists, opens, and records the same source name and
size is skipped without reading the source again (`--force` converts anyway). Every archive
is written through `ArchiveWriter`'s partial file, so a killed worker or run leaves no
half-written archive under a final name; partial files a killed run left are removed before
their file is converted again.
"""

from __future__ import annotations

import concurrent.futures as futures
import contextlib
import glob
import multiprocessing
import os
import signal
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import cast

from nanorec import registry
from nanorec.archive.layout import COMPACT, use_layout
from nanorec.archive.reader import ArchiveReader
from nanorec.archive.upload import join, staged
from nanorec.archive.urls import is_url, url_path
from nanorec.archive.writer import partial_path
from nanorec.contract import convert_request
from nanorec.errors import NanorecError, UsageError
from nanorec.signals import stop

#: Files each worker converts before the pool is replaced by fresh processes (bounds what a
#: leak could grow; done by rounds, as `max_tasks_per_child` can hang CPython 3.11's pool).
TASKS_PER_WORKER = 64
SUFFIX = ".nanover.zip"


@dataclass(frozen=True)
class Job:
    source: Path
    output: Path
    size: int


@dataclass(frozen=True)
class Outcome:
    """What became of one file: `status` is converted, skipped, failed, or ignored (found in
    a directory with a recording's suffix, but not one)."""

    job: Job
    status: str
    messages: int = 0
    seconds: float = 0.0
    problem: str = ""


def _candidates(sources: Iterable[str | os.PathLike[str]]) -> Iterator[tuple[Path, Path, bool]]:
    """(file, the root its output path is taken relative to, whether it was named rather
    than found in a directory) for every source."""
    for name in sources:
        source = Path(name)
        text = str(source)
        if any(char in text for char in "*?[") and not source.exists():
            for match in sorted(glob.glob(text, recursive=True)):
                path = Path(match)
                if path.is_file():
                    yield path, path.parent, True
            continue
        if source.is_dir() and registry.for_directory(source) is None:
            yield from _found_in(source)
        else:
            yield source, source.parent, True


def _found_in(folder: Path) -> Iterator[tuple[Path, Path, bool]]:
    """The files below `folder`, and the folders a converter takes whole (not entered),
    in path order."""
    found = []
    for top, dirs, files in os.walk(folder):
        here = Path(top)
        found += [here / name for name in files if not name.endswith(SUFFIX)]
        whole = {d for d in dirs if registry.for_directory(here / d) is not None}
        found += [here / name for name in whole]
        dirs[:] = [d for d in dirs if d not in whole]
    for path in sorted(found):
        yield path, folder, False


def plan(
    sources: Iterable[str | os.PathLike[str]], outdir: Path
) -> tuple[list[Job], list[Outcome]]:
    """The jobs for `sources`, and the outcomes known without converting: named files that
    are missing or foreign fail, files in a directory with a converter's suffix that are not
    recordings are ignored (named in the summary), other files there are left out silently
    (a folder holds other things). A file given twice is one job."""
    jobs: list[Job] = []
    known: list[Outcome] = []
    seen: set[Path] = set()
    for path, root, named in _candidates(sources):
        if path.resolve() in seen:
            continue
        seen.add(path.resolve())
        output = _under(outdir, path.relative_to(root).with_name(path.name + SUFFIX))
        try:
            size = registry.input_size(path)
            registry.for_native(path)
        except (NanorecError, OSError) as error:
            if named or (_has_suffix(path) and not isinstance(error, NanorecError)):
                known.append(Outcome(Job(path, output, 0), "failed", problem=_line(error)))
            elif _has_suffix(path):
                known.append(Outcome(Job(path, output, 0), "ignored", problem=_line(error)))
            continue
        jobs.append(Job(path, output, size))
    jobs, clashes = _distinct(jobs, outdir)
    return jobs, known + clashes


def _under(outdir: Path, relative: Path) -> Path:
    """Where the archive at `relative` goes under the output directory, or under the output
    prefix by URL (`s3://bucket/runs/`: one key per input)."""
    if is_url(outdir):
        return cast("Path", url_path(join(str(outdir), relative.as_posix())))
    return outdir / relative


def _has_suffix(path: Path) -> bool:
    name = path.name.lower()
    return any(name.endswith(s) for c in registry.converters().values() for s in c.suffixes)


def _distinct(jobs: list[Job], outdir: Path) -> tuple[list[Job], list[Outcome]]:
    """Jobs whose archives would be one file get their path below the folder their sources
    have in common instead; those still sharing an archive fail, never merged silently."""
    groups: dict[Path, list[Job]] = defaultdict(list)
    for job in jobs:
        groups[job.output].append(job)
    moved = []
    for job in jobs:
        group = groups[job.output]
        if len(group) > 1:
            with contextlib.suppress(ValueError):  # no common folder (Windows drives)
                common = os.path.commonpath([j.source.absolute() for j in group])
                below = job.source.absolute().relative_to(common)
                job = replace(job, output=_under(outdir, below.with_name(below.name + SUFFIX)))
        moved.append(job)
    counts = Counter(job.output for job in moved)
    clashes = []
    for job in moved:
        if counts[job.output] > 1:
            others = ", ".join(str(j.source) for j in moved if j.output == job.output and j != job)
            problem = f"its archive {job.output} would also be that of {others}; convert them apart"
            clashes.append(Outcome(replace(job, size=0), "failed", problem=problem))
    return [job for job in moved if counts[job.output] == 1], clashes


def is_done(job: Job) -> bool:
    """Whether `job.output` is a complete archive of `job.source` (name and size recorded
    at conversion): the resume check, which never reads the source."""
    if not is_url(job.output) and not job.output.is_file():
        return False
    try:
        with ArchiveReader(job.output) as reader:
            source = (reader.description or {}).get("source") or {}
            return bool(source.get("name") == job.source.name and source.get("size") == job.size)
    except (NanorecError, OSError):
        return False


def convert_one(
    job: Job, options: Mapping[str, object], fmt: str | None, layout: str = COMPACT
) -> Outcome:
    """Convert one file (in a worker) into an archive of `layout`; every problem becomes
    the outcome's one line."""
    start = time.perf_counter()
    try:
        with contextlib.ExitStack() as stack:
            if is_url(job.output):  # written here, then uploaded (`is_done` chose to write it)
                target = stack.enter_context(staged(str(job.output), overwrite=True))
            else:
                target = job.output
                target.parent.mkdir(parents=True, exist_ok=True)
                with contextlib.suppress(FileNotFoundError):
                    partial_path(target).unlink()  # a killed run's leftover
            converter = registry.get(fmt) if fmt else registry.for_native(job.source)
            with use_layout(layout):
                report = converter.convert(
                    job.source, target, convert_request(converter, options, overwrite=True)
                )
    except (NanorecError, OSError) as error:
        return Outcome(job, "failed", seconds=time.perf_counter() - start, problem=_line(error))
    except Exception as error:  # a converter bug must not stop the batch: report it
        problem = f"internal error: {type(error).__name__}: {error}"
        return Outcome(job, "failed", seconds=time.perf_counter() - start, problem=problem)
    problems = [str(region) for region in report.damaged] + list(report.warnings)
    return Outcome(
        job,
        "converted",
        messages=report.messages,
        seconds=time.perf_counter() - start,
        problem="; ".join(problems),
    )


def run_batch(
    jobs: list[Job],
    *,
    workers: int,
    force: bool = False,
    options: Mapping[str, object] | None = None,
    fmt: str | None = None,
    layout: str = COMPACT,
) -> Iterator[Outcome]:
    """Yield an `Outcome` per job, skipped ones first, the rest as they finish."""
    if workers < 1:
        raise UsageError(f"--jobs must be 1 or more, not {workers}")
    todo = []
    for job in jobs:
        if not force and is_done(job):
            yield Outcome(job, "skipped")
        else:
            todo.append(job)
    options = dict(options or {})
    if workers == 1 or len(todo) <= 1:
        for job in todo:
            yield convert_one(job, options, fmt, layout)
        return
    yield from _pooled(todo, workers, options, fmt, layout)


def _pooled(
    todo: list[Job], workers: int, options: Mapping[str, object], fmt: str | None, layout: str
) -> Iterator[Outcome]:
    """Run `todo` in a process pool. When a worker dies (killed, out of memory), every file
    it might have held is tried again, each alone in a fresh one-worker pool, so only the
    file that kills its worker fails."""
    retry: list[Job] = []
    round_size = workers * TASKS_PER_WORKER
    for first in range(0, len(todo), round_size):
        for job, outcome in _in_pool(
            todo[first : first + round_size], workers, options, fmt, layout
        ):
            if outcome is None:
                retry.append(job)
            else:
                yield outcome
    for job in retry:
        for _, outcome in _in_pool([job], 1, options, fmt, layout):
            yield outcome or Outcome(job, "failed", problem="its worker process was killed")


def _in_pool(
    jobs: list[Job], workers: int, options: Mapping[str, object], fmt: str | None, layout: str
) -> Iterator[tuple[Job, Outcome | None]]:
    """(job, outcome) as each finishes; outcome None when the pool broke under it."""
    spawned = any(is_url(job.output) for job in jobs)  # obstore's threads die in a fork
    pool = futures.ProcessPoolExecutor(
        max_workers=workers,
        mp_context=multiprocessing.get_context("spawn") if spawned else None,
        initializer=_unwind_on_sigterm if spawned else None,
    )
    finished = False
    try:
        pending = {pool.submit(convert_one, job, options, fmt, layout): job for job in jobs}
        for future in futures.as_completed(pending):
            job = pending[future]
            try:
                yield job, future.result()
            except futures.process.BrokenProcessPool:
                _remove_partial(job)
                yield job, None
        finished = True
    finally:
        if finished:
            # Every job is done: each worker takes its end sentinel and exits by itself. A
            # signal now could stop one in the middle of reading the queue it shares with the
            # others, which then read half a message ("EOFError: Ran out of input").
            pool.shutdown(wait=True)
        else:
            _stop(pool)


def _unwind_on_sigterm() -> None:
    """In a spawned worker (which does not inherit the command line's handler): SIGTERM
    unwinds, so an upload is aborted and its local file removed (see `_stop`)."""
    signal.signal(signal.SIGTERM, stop)


def _remove_partial(job: Job) -> None:
    if is_url(job.output):  # a killed worker's upload was never completed: nothing there
        return
    with contextlib.suppress(FileNotFoundError):
        partial_path(job.output).unlink()


def _stop(pool: futures.ProcessPoolExecutor) -> None:
    """Shut the pool down; on an early exit (Ctrl-C, SIGTERM) workers get SIGTERM, which
    unwinds their writers so they remove their partial files."""
    processes = list(getattr(pool, "_processes", {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        with contextlib.suppress(Exception):
            if process.is_alive():
                process.terminate()
    for process in processes:
        with contextlib.suppress(Exception):
            process.join(timeout=10)


def _line(error: BaseException) -> str:
    if isinstance(error, OSError) and not isinstance(error, NanorecError):
        where = f": {error.filename}" if error.filename else ""
        return f"{error.strerror or error}{where}"
    return str(error)


__all__ = ["Job", "Outcome", "convert_one", "is_done", "plan", "run_batch"]
