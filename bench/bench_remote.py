"""Archives read in place over HTTP and S3 (issue 36): requests and bytes, not seconds.

Makes an archive of `--messages` small messages (`--size` bytes of random payload each: they do
not deflate, so the archive is about messages x size; the default 10,000,000 x 100 is ~1 GB),
serves its folder on 127.0.0.1 by the Range-capable server of the tests (which logs each
request and the bytes it sent) and by moto's S3 server (counted by the reader's own counters),
and measures requests and bytes (mean and max):

- open (`ArchiveReader(url)`) and message N (`reader.raw(N)`) cold: `--cold` fresh opens,
  each reading one random message; warm: `--reads` random messages on one reader;
- the message at time t cold (`index_at_time` + `raw`), `--cold` fresh opens;
- info (`registry.open(url).summary()`), beyond the open;
- side by side, the `mcap` Python reader over the same server (a file of HTTP ranges read
  ahead 64 KiB, `RangeFile`, as fsspec's "readahead" file; the HEAD that learns its size
  counted) reading the same messages by time from the MCAP export of the archive, each
  from a fresh open (`--mcap-reads`).

A ~10 GB archive (`--messages 100000000`) takes ~35 min to write on a loaded 2-core machine;
what a read costs depends on the archive's size only through the page table in the tail
(~16 bytes a page of 16 Ki messages: ~100 KiB at 100 M messages), so a smaller run says it.

Prints a table and writes the `remote` section of bench/RESULTS.md. A CARLA archive's
`frame(n)` by URL: bench/bench_remote_carla.py.

    python bench/bench_remote.py                        # ~1 GB
    python bench/bench_remote.py --messages 200000      # quick
"""

from __future__ import annotations

import argparse
import io
import os
import random
import statistics
import sys
import tempfile
import time
import urllib.request
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
        return int(source.requests), int(source.bytes_read)


Sample = tuple[int, int]


def _delta(counter: Counter, before: Sample) -> Sample:
    now = counter.now()
    return now[0] - before[0], now[1] - before[1]


def measure(
    url: str, server: RangeServer | None, numbers: list[int], count: int, cold: int
) -> dict[str, list[Sample]]:
    """Requests and bytes: `cold` fresh opens each reading one of `numbers` (open, then the
    read), one reader reading all of `numbers` (warm), the same by time, and info."""
    out: dict[str, list[Sample]] = {key: [] for key in KEYS}
    for number in numbers[:cold]:
        if server is not None:
            server.reset()
        reader = ArchiveReader(url)
        counter = Counter(server, reader)
        opened = counter.now()
        out["open"].append(opened)
        reader.raw(number)
        out["read N cold, beyond the open"].append(_delta(counter, opened))
        out["open + read N cold"].append(counter.now())
        reader.close()
    reader = ArchiveReader(url)
    counter = Counter(server, reader)
    reader.raw(numbers[0])
    for number in numbers[1:]:
        before = counter.now()
        reader.raw(number)
        out["read N warm"].append(_delta(counter, before))
    reader.close()
    for number in numbers[:cold]:
        if server is not None:
            server.reset()
        reader = ArchiveReader(url)
        counter = Counter(server, reader)
        t_us = number * 1000 + 500
        found = reader.index_at_time(t_us)
        assert found == number, (found, number)
        reader.raw(found)
        out["open + read at time t cold"].append(counter.now())
        reader.close()
    with registry.open(url) as recording:
        counter = Counter(server, recording.reader)
        before = counter.now()
        recording.summary()
        out["info beyond the open"].append(_delta(counter, before))
    return out


class RangeFile(io.RawIOBase):
    """A file on an HTTP server read by Range requests (stdlib only), for the `mcap` reader:
    wrapped in a 64 KiB `io.BufferedReader`, as an fsspec "readahead" file of 64 KiB blocks."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.position = 0
        head = urllib.request.Request(url, method="HEAD")
        with urllib.request.urlopen(head) as answer:
            self.size = int(answer.headers["Content-Length"])

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self.position, io.SEEK_END: self.size}[whence]
        self.position = base + offset
        return self.position

    def tell(self) -> int:
        return self.position

    def readinto(self, buffer: Any) -> int:
        stop = min(self.size, self.position + len(buffer))
        if stop <= self.position:
            return 0
        request = urllib.request.Request(
            self.url, headers={"Range": f"bytes={self.position}-{stop - 1}"}
        )
        with urllib.request.urlopen(request) as answer:
            data = answer.read()
        buffer[: len(data)] = data
        self.position += len(data)
        return len(data)


def mcap_side(server: RangeServer, name: str, numbers: list[int]) -> dict[str, list[Sample]]:
    """The mcap package's reader over HTTP ranges (`RangeFile`: 64 KiB read-ahead), each from
    a fresh open: the summary, then message N by its time."""
    from mcap.reader import make_reader

    out: dict[str, list[Sample]] = {key: [] for key in KEYS}
    for target in numbers:
        server.reset()
        with io.BufferedReader(RangeFile(server.url(name)), 64 << 10) as handle:
            reader = make_reader(handle)
            summary = reader.get_summary()
            assert summary is not None
            opened = (server.requests, server.sent)
            out["open"].append(opened)
            t_ns = target * 1_000_000
            found = next(iter(reader.iter_messages(starting_at=t_ns, ending_before=t_ns + 1)), None)
            assert found is not None
            out["open + read at time t cold"].append((server.requests, server.sent))
            out["read N cold, beyond the open"].append(
                (server.requests - opened[0], server.sent - opened[1])
            )
    return out


KEYS = (
    "open",
    "info beyond the open",
    "read N cold, beyond the open",
    "open + read N cold",
    "read N warm",
    "open + read at time t cold",
)


def _cell(samples: list[Sample]) -> str:
    if not samples:
        return "-"
    requests = [sample[0] for sample in samples]
    kib = [sample[1] / 1024 for sample in samples]
    if len(samples) == 1:
        return f"{requests[0]} req, {kib[0]:,.1f} KiB"
    return (
        f"{statistics.mean(requests):.3g} req, {statistics.mean(kib):,.1f} KiB "
        f"(max {max(requests)}, {max(kib):,.1f} KiB)"
    )


def table(rows: dict[str, dict[str, list[Sample]]]) -> str:
    lines = ["| | " + " | ".join(rows) + " |", "|---|" + "---|" * len(rows)]
    for key in KEYS:
        lines.append(
            f"| {key} | " + " | ".join(_cell(row.get(key, [])) for row in rows.values()) + " |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=10_000_000)
    parser.add_argument("--size", type=int, default=100, help="payload bytes per message")
    parser.add_argument("--reads", type=int, default=100, help="random messages read warm")
    parser.add_argument("--cold", type=int, default=100, help="fresh opens, each one read")
    parser.add_argument("--mcap-reads", type=int, default=20, help="fresh MCAP opens")
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
    rows: dict[str, dict[str, list[Sample]]] = {}
    with RangeServer(folder).running() as server:
        rows["nanorec, HTTP"] = measure(
            server.url(archive.name), server, numbers, args.messages, args.cold
        )
        if not args.no_mcap:
            mcap = folder / "bench.mcap"
            if not mcap.exists():
                from nanorec.outputs.mcap import export_mcap

                with registry.open(archive) as recording:
                    export_mcap(recording, mcap)
            rows["mcap reader, HTTP ranges"] = mcap_side(
                server, mcap.name, numbers[: args.mcap_reads]
            )
    if not args.no_moto:
        with moto_s3() as endpoint:
            import boto3

            client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
            client.create_bucket(Bucket="bench")
            client.upload_file(str(archive), "bench", archive.name)
            rows["nanorec, S3 (moto)"] = measure(
                f"s3://bench/{archive.name}", None, numbers, args.messages, args.cold
            )
    text = table(rows)
    print(text)
    header = (
        f"## Reading in place over HTTP and S3 (`python bench/bench_remote.py "
        f"--messages {args.messages} --size {args.size}`)\n\n"
        f"One archive of {args.messages:,} messages of {args.size} random bytes "
        f"({size / 1e6:,.0f} MB, compact and paged layout), served on 127.0.0.1; requests and "
        f"bytes moved (the logging server's count for HTTP, the reader's for S3), mean (max): "
        f"cold, {args.cold} fresh opens each reading one random message (or the message at "
        f"its time); warm, {args.reads} random messages on one reader; the MCAP reader, "
        f"{args.mcap_reads} fresh opens each reading one message by its time.\n\n"
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
