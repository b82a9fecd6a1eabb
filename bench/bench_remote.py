"""Archives read in place over HTTP and S3 (issue 36): requests and bytes, not seconds.

Makes an archive of `--messages` small messages (`--size` bytes of random payload each: they do
not deflate, so the archive is about messages x size; the default 10,000,000 x 100 is ~1 GB),
serves its folder on 127.0.0.1 by the Range-capable server of the tests (which logs each
request and the bytes it sent) and by moto's S3 server (counted by the reader's own counters),
and measures, each from a fresh open:

- open (`ArchiveReader(url)`): requests, bytes;
- info (`registry.open(url).summary()`), beyond the open;
- message N (`reader.raw(N)`) cold (the first read after the open) and warm (`--reads`
  random N on one reader: mean requests and bytes per read), and the message at time t;
- side by side, the `mcap` Python reader over the same server (an fsspec HTTP file, no
  read-ahead) reading the same message from the MCAP export of the archive.

Prints a table and writes the `remote` section of bench/RESULTS.md.

    python bench/bench_remote.py                        # ~1 GB
    python bench/bench_remote.py --messages 200000      # quick
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.results import write_section  # noqa: E402
from nanorec import registry  # noqa: E402
from nanorec.archive.reader import ArchiveReader  # noqa: E402
from nanorec.archive.writer import ArchiveWriter  # noqa: E402
from tests.remote.servers import RangeServer, moto_s3  # noqa: E402

RUN = 10_000


def make_archive(path: Path, count: int, size: int) -> None:
    """`count` messages `{"m": <size random bytes>}`, 1 ms apart, in the default layout."""
    head = b"\x81\xa1m\xc4" + bytes([size]) if size < 256 else b"\x81\xa1m\xc5" + size.to_bytes(2)
    with ArchiveWriter(path, source_format="bench") as writer:
        for start in range(0, count, RUN):
            n = min(RUN, count - start)
            blob = os.urandom(n * size)
            packed = [head + blob[i * size : (i + 1) * size] for i in range(n)]
            writer.write_packed_run(
                packed,
                types=[("m",)] * n,
                timestamps_us=range(start * 1000, (start + n) * 1000, 1000),
            )


class Counter:
    """Requests and bytes so far, from the logging server or from the reader's counters."""

    def __init__(self, server: RangeServer | None, reader: Any = None) -> None:
        self.server, self.reader = server, reader

    def now(self) -> tuple[int, int]:
        if self.server is not None:
            return self.server.requests, self.server.sent
        source = self.reader.remote.source
        return source.requests, source.bytes_read


def measure(url: str, server: RangeServer | None, numbers: list[int], count: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if server is not None:
        server.reset()
    cpu = time.process_time()
    reader = ArchiveReader(url)
    out["open cpu s"] = time.process_time() - cpu
    counter = Counter(server, reader)
    out["open"] = counter.now()
    before = counter.now()
    reader.raw(numbers[0])
    after = counter.now()
    out["read N cold"] = (after[0] - before[0], after[1] - before[1])
    per = []
    for number in numbers[1:]:
        before = counter.now()
        reader.raw(number)
        after = counter.now()
        per.append((after[0] - before[0], after[1] - before[1]))
    out["read N warm (mean)"] = (
        statistics.mean(p[0] for p in per),
        statistics.mean(p[1] for p in per),
    )
    before = counter.now()
    t_us = (count // 3) * 1000 + 500
    number = reader.index_at_time(t_us)
    assert number == count // 3
    reader.raw(number)
    after = counter.now()
    out["read at time t"] = (after[0] - before[0], after[1] - before[1])
    reader.close()
    with registry.open(url) as recording:
        counter = Counter(server, recording.reader)
        before = counter.now()
        recording.summary()
        after = counter.now()
        out["info beyond open"] = (after[0] - before[0], after[1] - before[1])
    return out


def mcap_side(server: RangeServer, name: str, count: int) -> dict[str, Any]:
    """The mcap package's reader over fsspec HTTP (no read-ahead) reading message N by time."""
    import fsspec
    from mcap.reader import make_reader

    out: dict[str, Any] = {}
    fs = fsspec.filesystem("http", block_size=0)
    target = count // 3
    server.reset()
    with fs.open(server.url(name), "rb", block_size=64 << 10, cache_type="readahead") as handle:
        reader = make_reader(handle)
        summary = reader.get_summary()
        assert summary is not None
        out["open"] = (server.requests, server.sent)
        before = (server.requests, server.sent)
        t_ns = target * 1_000_000
        found = next(iter(reader.iter_messages(starting_at=t_ns, ending_before=t_ns + 1)), None)
        assert found is not None
        out["read at time t"] = (server.requests - before[0], server.sent - before[1])
    return out


def table(rows: dict[str, dict[str, Any]]) -> str:
    keys = ["open", "info beyond open", "read N cold", "read N warm (mean)", "read at time t"]
    lines = ["| | " + " | ".join(rows) + " |", "|---|" + "---|" * len(rows)]
    for key in keys:
        cells = []
        for row in rows.values():
            value = row.get(key)
            cells.append(
                "-" if value is None else f"{value[0]:.3g} req, {value[1] / 1024:,.1f} KiB"
            )
        lines.append(f"| {key} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=10_000_000)
    parser.add_argument("--size", type=int, default=100, help="payload bytes per message")
    parser.add_argument("--reads", type=int, default=100, help="random reads per reader")
    parser.add_argument("--no-mcap", action="store_true", help="skip the MCAP side")
    parser.add_argument("--no-moto", action="store_true", help="skip moto's S3 server")
    parser.add_argument("--dir", type=Path, default=None, help="keep the files here")
    args = parser.parse_args()
    folder = args.dir or Path(tempfile.mkdtemp(prefix="nanorec-bench-remote-"))
    folder.mkdir(parents=True, exist_ok=True)
    archive = folder / "bench.nanover.zip"
    if not archive.exists():
        cpu = time.process_time()
        make_archive(archive, args.messages, args.size)
        cpu = time.process_time() - cpu
        print(f"archive: {archive.stat().st_size / 1e6:.0f} MB in {cpu:.0f} CPU s")
    size = archive.stat().st_size
    rng = random.Random(36)
    numbers = [rng.randrange(args.messages) for _ in range(args.reads + 1)]
    rows: dict[str, dict[str, Any]] = {}
    with RangeServer(folder).running() as server:
        rows["nanorec, HTTP"] = measure(server.url(archive.name), server, numbers, args.messages)
        if not args.no_mcap:
            mcap = folder / "bench.mcap"
            if not mcap.exists():
                from nanorec.outputs.mcap import export_mcap

                with registry.open(archive) as recording:
                    export_mcap(recording, mcap)
            rows["mcap reader, HTTP (fsspec)"] = mcap_side(server, mcap.name, args.messages)
    if not args.no_moto:
        with moto_s3() as endpoint:
            import boto3

            client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
            client.create_bucket(Bucket="bench")
            client.upload_file(str(archive), "bench", archive.name)
            rows["nanorec, S3 (moto)"] = measure(
                f"s3://bench/{archive.name}", None, numbers, args.messages
            )
    text = table(rows)
    print(text)
    header = (
        f"## Reading in place over HTTP and S3 (`python bench/bench_remote.py "
        f"--messages {args.messages} --size {args.size}`)\n\n"
        f"One archive of {args.messages:,} messages of {args.size} random bytes "
        f"({size / 1e6:,.0f} MB, compact layout), served on 127.0.0.1; requests and bytes "
        f"moved (the logging server's count for HTTP, the reader's for S3); warm: mean of "
        f"{args.reads} random messages on one reader.\n\n"
    )
    # one section per archive size: the 1 GB run skips the MCAP side (its export takes long)
    start = f"## Reading in place over HTTP and S3, {args.messages:,} messages"
    end = f"<!-- end remote {args.messages} -->"
    write_section(
        start,
        end,
        header.replace("## Reading in place over HTTP and S3", start, 1) + text + f"\n{end}",
    )


if __name__ == "__main__":
    main()
