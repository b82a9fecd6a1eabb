"""Benchmark many recordings at once: batch convert -j 1 vs -j 2, resume, worker memory, and
one question asked across all of them through Dask and through DuckDB.

Generates N synthetic CARLA recordings (0.9.16, ~MB each, different seeds) once into
/tmp/nanorec-bench-batch (reused when present), then in one run: converts them all with one
worker and with two (this machine has two cores), runs the batch again (everything already
converted: the resume cost), reads the largest worker RSS, exports each archive's collision
and spawn tables to Parquet, and asks "every collision, with the blueprint of each actor,
and how many involve a walker" through `nanorec.maintain.dask.read_kind` (a Dask dataframe over the
archives) and through DuckDB over the Parquet files. Writes its table into bench/RESULTS.md
between the `batch` markers.

    python bench/bench_batch.py                 # 1000 x 5 MB
    python bench/bench_batch.py --n 100 --mb 2  # quicker
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import resource
import shutil
import sys
import time
from pathlib import Path

from results import write_section

HERE = Path(__file__).resolve().parent
WORK = Path("/tmp/nanorec-bench-batch")
START, END = "<!-- batch:start -->", "<!-- batch:end -->"
QUERY = """
select c.recording, c.frame, c.actor1_id, a1.type_id as blueprint1,
       c.actor2_id, a2.type_id as blueprint2,
       (a1.type_name = 'walker' or a2.type_name = 'walker') as with_walker
from collisions c
left join spawns a1 on a1.recording = c.recording and a1.id = c.actor1_id
left join spawns a2 on a2.recording = c.recording and a2.id = c.actor2_id
"""


def generate(n: int, mb: float) -> Path:
    from nanorec.converters.carla.generate import generate_to

    folder = WORK / f"in-{n}x{mb:g}MB"
    if folder.is_dir() and len(list(folder.glob("*.log"))) == n:
        return folder
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    for k in range(n):
        generate_to(folder / f"route_{k:04d}.log", "0.9.16", target_bytes=int(mb * 1e6), seed=k)
    return folder


def convert(source: Path, out: Path, workers: int) -> tuple[float, int, list[str]]:
    from nanorec.maintain.batch import plan, run_batch

    jobs, failed = plan([source], out)
    start = time.perf_counter()
    outcomes = list(run_batch(jobs, workers=workers))
    seconds = time.perf_counter() - start
    statuses = [o.status for o in outcomes + failed]
    return seconds, sum(job.size for job in jobs), statuses


def tables(out: Path, parquet: Path) -> float:
    from nanorec import registry
    from nanorec.outputs.arrow import export_parquet
    from nanorec.selection import Selection

    start = time.perf_counter()
    wanted = Selection.make(kinds=["collision", "event_add"])
    for archive in sorted(out.glob("*.nanover.zip")):
        with registry.open(archive) as rec:
            export_parquet(rec, parquet / archive.stem, selection=wanted)
    return time.perf_counter() - start


def ask_duckdb(parquet: Path) -> tuple[float, int, int]:
    import duckdb

    start = time.perf_counter()
    con = duckdb.connect()
    con.execute(f"create view collisions as select * from '{parquet}/*/collision.parquet'")
    con.execute(f"create view spawns as select * from '{parquet}/*/event_add.parquet'")
    rows = con.sql(f"select count(*), sum(with_walker::int) from ({QUERY})").fetchall()[0]
    return time.perf_counter() - start, int(rows[0]), int(rows[1] or 0)


def ask_dask(out: Path) -> tuple[float, int, int]:
    import distributed

    from nanorec.maintain.dask import read_kind

    archives = sorted(str(p) for p in out.glob("*.nanover.zip"))
    with (
        distributed.LocalCluster(n_workers=2, threads_per_worker=1) as cluster,
        distributed.Client(cluster) as client,
    ):
        start = time.perf_counter()
        collisions = read_kind(archives, "collision")
        spawns = read_kind(archives, "event_add")[["recording", "id", "type_id", "type_name"]]
        one = collisions.merge(
            spawns.rename(columns={"id": "actor1_id", "type_id": "bp1", "type_name": "t1"}),
            on=["recording", "actor1_id"],
            how="left",
        )
        both = one.merge(
            spawns.rename(columns={"id": "actor2_id", "type_id": "bp2", "type_name": "t2"}),
            on=["recording", "actor2_id"],
            how="left",
        )
        walkers = (both["t1"] == "walker") | (both["t2"] == "walker")
        total, with_walker = client.compute([both.shape[0], walkers.sum()], sync=True)
        return time.perf_counter() - start, int(total), int(with_walker)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000, help="recordings")
    parser.add_argument("--mb", type=float, default=5.0, help="MB per recording")
    args = parser.parse_args()
    t0 = time.perf_counter()
    source = generate(args.n, args.mb)
    print(f"inputs ready in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    rows = []
    outs = {}
    for workers in (1, 2):
        out = WORK / f"out-j{workers}"
        shutil.rmtree(out, ignore_errors=True)
        seconds, size, statuses = convert(source, out, workers)
        outs[workers] = out
        assert statuses.count("converted") == args.n, statuses
        rows.append(
            (
                f"batch convert -j {workers}",
                f"{seconds:.1f} s, {size / 1e6 / seconds:.0f} MB/s, {args.n / seconds:.0f} files/s",
            )
        )
        print(rows[-1], file=sys.stderr)
    j1 = float(rows[0][1].split(" s")[0])
    j2 = float(rows[1][1].split(" s")[0])
    rows.append(("scaling -j 2 / -j 1", f"{j1 / j2:.2f}x"))
    seconds, _, statuses = convert(source, outs[2], 2)
    assert statuses.count("skipped") == args.n
    rows.append(
        (
            "resume (all converted already)",
            f"{seconds:.2f} s ({seconds / args.n * 1e3:.2f} ms/file)",
        )
    )
    worker_rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    rows.append(("peak RSS of one worker", f"{worker_rss:.0f} MB"))
    parquet = WORK / "parquet"
    shutil.rmtree(parquet, ignore_errors=True)
    parquet.mkdir()
    rows.append(
        ("Parquet tables (collision, event_add) for all", f"{tables(outs[2], parquet):.1f} s")
    )
    seconds, total, walkers = ask_duckdb(parquet)
    rows.append(
        (
            "query via DuckDB over Parquet",
            f"{seconds:.2f} s ({total} collisions, {walkers} with a walker)",
        )
    )
    seconds, total_d, walkers_d = ask_dask(outs[2])
    assert (total_d, walkers_d) == (total, walkers), (total_d, walkers_d, total, walkers)
    rows.append(("query via Dask over the archives (2 workers)", f"{seconds:.2f} s (same answer)"))
    table = ["| measure | result |", "|---|---|"] + [f"| {a} | {b} |" for a, b in rows]
    text = "\n".join(
        [
            START,
            "## Many recordings: batch convert, resume, cross-recording query",
            "",
            f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
            f"Python {platform.python_version()}. Date: {datetime.date.today()}. Command: "
            f"`python bench/bench_batch.py --n {args.n} --mb {args.mb:g}` ({args.n} synthetic "
            f"CARLA 0.9.16 recordings of ~{args.mb:g} MB).",
            "",
            *table,
            END,
        ]
    )
    write_section(START, END, text)
    print(text)


if __name__ == "__main__":
    main()
