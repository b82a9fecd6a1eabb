"""Dask reads archives in place (#36 item 5): `read_kind("s3://bucket/*.nanover.zip", kind)` on
moto's S3 server lists the bucket, then reads each archive's index and the blocks of the
kind's messages only, not a copy of the archive."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("obstore")
pytest.importorskip("moto.server")
pytest.importorskip("dask.dataframe")

from nanorec.archive import remote
from nanorec.archive.writer import ArchiveWriter
from nanorec.maintain.dask import expand, read_kind

from .servers import moto_s3, put_object

ARCHIVES = 20
MESSAGES = 24_000
PAYLOAD = 1000  # random bytes: the archive does not deflate below its messages' size
EVENT_EVERY = 6000  # the kind queried: 4 messages an archive


def _archive(path: Path, seed: int) -> Path:
    """`MESSAGES` messages `{"sample": <random bytes>}`, every `EVENT_EVERY`th an
    `{"event": {...}}` instead."""
    rng = __import__("random").Random(seed)
    with ArchiveWriter(path, source_format="t") as writer:
        for number in range(MESSAGES):
            if number % EVENT_EVERY == EVENT_EVERY - 1:
                message: dict[str, Any] = {"event": {"seed": seed, "number": number}}
            else:
                message = {"sample": rng.randbytes(PAYLOAD)}
            writer.write(message, timestamp_us=1000 * number)
    return path


@pytest.fixture(scope="module")
def bucket(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    """`ARCHIVES` archives at s3://dask-runs/day1/ (two distinct files, alternately) and one
    object the pattern leaves out; yields the archives' total size in bytes. The bucket is
    this module's own: moto keeps every server's objects for the process's life."""
    folder = tmp_path_factory.mktemp("dask-remote")
    files = [_archive(folder / f"{seed}.nanover.zip", seed).read_bytes() for seed in (1, 2)]
    with moto_s3() as endpoint:
        total = 0
        for number in range(ARCHIVES):
            data = files[number % 2]
            put_object(endpoint, "dask-runs", f"day1/run{number:02}.nanover.zip", data)
            total += len(data)
        put_object(endpoint, "dask-runs", "day1/notes.txt", b"not an archive")
        yield total


@pytest.fixture
def traffic(monkeypatch: pytest.MonkeyPatch) -> list[remote.RemoteSource]:
    """Every `RemoteSource` opened while the test runs (their counters: requests, bytes)."""
    opened: list[remote.RemoteSource] = []
    original = remote.RemoteSource.__init__

    def counted(self: remote.RemoteSource, url: str) -> None:
        original(self, url)
        opened.append(self)

    monkeypatch.setattr(remote.RemoteSource, "__init__", counted)
    return opened


def test_a_pattern_lists_the_bucket(bucket: int) -> None:
    names = expand("s3://dask-runs/day1/*.nanover.zip")
    assert names == [f"s3://dask-runs/day1/run{n:02}.nanover.zip" for n in range(ARCHIVES)]
    assert expand(["s3://dask-runs/day1/run00.nanover.zip"]) == [
        "s3://dask-runs/day1/run00.nanover.zip"
    ]


@pytest.mark.slow
def test_read_kind_moves_under_two_percent_of_the_archives(
    bucket: int, traffic: list[remote.RemoteSource]
) -> None:
    frame = read_kind("s3://dask-runs/day1/*.nanover.zip", "event")
    assert frame.npartitions == ARCHIVES
    rows = frame.compute(scheduler="synchronous")
    per = MESSAGES // EVENT_EVERY
    assert len(rows) == ARCHIVES * per
    assert sorted(set(rows["number"])) == [EVENT_EVERY * (k + 1) - 1 for k in range(per)]
    moved = sum(source.bytes_read for source in traffic)
    requests = sum(source.requests for source in traffic)
    print(f"read_kind: {requests} requests, {moved} of {bucket} bytes ({moved / bucket:.2%})")
    assert moved < 0.02 * bucket, (moved, bucket, requests)
    assert os.environ.get("AWS_ENDPOINT_URL")  # still pointed at moto
