"""Outputs to object storage (issue 36 item 4): uploading an archive to moto's S3 server on
127.0.0.1 through nanorec's path (`nanorec.archive.upload.upload`: read in 8 MiB parts, 4 in
flight, a multipart upload aborted on error) against two baselines: obstore's own `put` of the
same file (5 MiB parts, 12 in flight, no abort on a failed part) and boto3's `upload_file`
(s3transfer: 8 MiB parts, 10 threads) when installed.

Each upload runs in a child process of its own, A B C A B C..., measured by the child itself:
CPU time (`time.process_time()`: every thread of the client, not the server's) and peak RSS
above what the process held before the upload (VmHWM), which shows that the file is
never read whole into memory. Wall time is printed for information only (the machine is
shared; moto's server, in this process, takes its share of the CPU).

    python bench/bench_upload.py                 # ~100 MB archive, 3 rounds
    python bench/bench_upload.py --mb 20 --rounds 2
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.bench_remote import make_archive  # noqa: E402
from bench.results import write_section  # noqa: E402
from tests.remote.servers import moto_s3, put_object  # noqa: E402

CHILD = r"""
import json, os, resource, sys, time
from pathlib import Path

how, path, bucket, key = sys.argv[1:5]
def rss():  # this process's peak, KiB (VmHWM: ru_maxrss keeps the parent's across exec)
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
if how == "nanorec":
    from nanorec.archive.upload import upload
    run = lambda: upload(Path(path), f"s3://{bucket}/{key}", overwrite=True)
elif how == "obstore":
    import obstore
    from nanorec.archive.remote import store_for
    store, name = store_for(f"s3://{bucket}/{key}")
    run = lambda: obstore.put(store, name, Path(path))
else:
    import boto3
    client = boto3.client("s3", endpoint_url=os.environ["AWS_ENDPOINT_URL"])
    run = lambda: client.upload_file(path, bucket, key)
before = rss()
cpu, wall = time.process_time(), time.perf_counter()
run()
cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
print(json.dumps({"cpu": cpu, "wall": wall, "peak_kb": rss(), "before_kb": before}))
"""

WAYS = {
    "nanorec": "nanorec `upload` (open_writer, 8 MiB x 4)",
    "obstore": "obstore.put(Path) (5 MiB x 12)",
    "boto3": "boto3 upload_file (8 MiB x 10)",
}


def _child(how: str, path: Path, key: str) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, "-c", CHILD, how, str(path), "bench", key],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=int, default=100, help="archive size (MB, about)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-write", action="store_true", help="do not touch RESULTS.md")
    args = parser.parse_args()
    ways = [w for w in WAYS if w != "boto3" or _has("boto3")]
    with tempfile.TemporaryDirectory(prefix="bench-upload-") as folder, moto_s3() as endpoint:
        path = Path(folder) / "big.nanover.zip"
        make_archive(path, args.mb * 10_000 * 100 // 110, 100)  # ~110 bytes a message stored
        size = path.stat().st_size
        put_object(endpoint, "bench", "seed", b"")
        found: dict[str, list[dict[str, float]]] = {way: [] for way in ways}
        for round_ in range(args.rounds):
            for way in ways:  # A B C A B C
                key = f"{way}-{round_}.nanover.zip"
                found[way].append(_child(way, path, key))
                _delete(endpoint, key)  # moto keeps what it is given: not 9 copies
    rows = []
    for way in ways:
        runs = found[way]
        cpu = statistics.median(r["cpu"] for r in runs)
        wall = statistics.median(r["wall"] for r in runs)
        extra = statistics.median((r["peak_kb"] - r["before_kb"]) / 1024 for r in runs)
        peak = statistics.median(r["peak_kb"] / 1024 for r in runs)
        rows.append((WAYS[way], cpu, wall, extra, peak))
        print(
            f"{way:8} cpu {cpu:6.2f} s  wall {wall:6.2f} s  +rss {extra:6.1f} MiB  peak {peak:.0f}"
        )
    command = f"python bench/bench_upload.py --mb {args.mb} --rounds {args.rounds}"
    start, end = "<!-- upload:start -->", "<!-- upload:end -->"
    lines = [
        start,
        f"## Uploading an archive to S3 (moto on 127.0.0.1), {size / 1e6:.0f} MB (`{command}`)",
        "",
        "Each upload in a child process of its own, A B C A B C; medians of "
        f"{args.rounds} rounds. CPU: the client's (`time.process_time`, all its threads); "
        "+RSS: peak RSS above what the process held before the upload (the file is read a "
        "part at a time, never whole); wall time for information only (a shared machine, "
        "moto's server in the parent).",
        "",
        "| upload | CPU s | wall s | +RSS MiB | peak RSS MiB |",
        "|---|---|---|---|---|",
        *[f"| {n} | {c:.2f} | {w:.2f} | {x:.1f} | {p:.0f} |" for n, c, w, x, p in rows],
        end,
    ]
    if not args.no_write:
        write_section(start, end, "\n".join(lines))
    print("\n".join(lines))


def _delete(endpoint: str, key: str) -> None:
    import boto3

    boto3.client("s3", endpoint_url=endpoint).delete_object(Bucket="bench", Key=key)


def _has(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


if __name__ == "__main__":
    main()
