"""The paged layout read by URL (#36 item 2), counted in requests and bytes on the logging
Range server and moto's S3 server: open + message N costs at most 3 requests and 512 KiB cold
(the tail, one index page, one block), at most 2 after the first; the message at time t
likewise; `info` at most one request beyond the open. Archives of the unpaged layout still
read, with more requests; a damaged page is one error naming the page and its byte offset."""

from __future__ import annotations

import os
import random
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("obstore")

from nanorec import ArchiveReader, ArchiveWriter, registry
from nanorec.archive.pages import PAGE_MESSAGES
from nanorec.cli import _register, app
from nanorec.errors import PageError

from ..conftest import make_runner
from .servers import RangeServer, moto_s3, put_object

COUNT = 100_000  # 7 pages of 16 Ki messages, ~11 MB: far more than the tail
SIZE = 100
COLD_BYTES = 512 << 10
runner = make_runner()
_register()


def _write(path: Path, count: int = COUNT, **options: object) -> Path:
    """`count` messages of `SIZE` random bytes (they do not deflate), 1 ms apart."""
    head = b"\x81\xa1m\xc4" + bytes([SIZE])
    blob = random.Random(36).randbytes(count * SIZE)
    with ArchiveWriter(path, source_format="bench", **options) as writer:  # type: ignore[arg-type]
        for start in range(0, count, 10_000):
            n = min(10_000, count - start)
            writer.write_packed_run(
                [head + blob[(start + i) * SIZE : (start + i + 1) * SIZE] for i in range(n)],
                types=[("m",)] * n,
                timestamps_us=range(start * 1000, (start + n) * 1000, 1000),
            )
    return path


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("paged-remote")
    _write(out / "paged.nanover.zip")
    _write(out / "stored.nanover.zip", compact=False)
    _write(out / "old.nanover.zip", paged=False)
    _write(out / "one.nanover.zip", 1)
    _write(out / "empty.nanover.zip", 0)
    return out


@pytest.fixture
def server(folder: Path) -> Iterator[RangeServer]:
    with RangeServer(folder).running() as running:
        yield running


#: Page boundaries and ends, then random messages.
NUMBERS = [
    0,
    PAGE_MESSAGES - 1,
    PAGE_MESSAGES,
    2 * PAGE_MESSAGES,
    COUNT - 1,
    *random.Random(7).sample(range(COUNT), 5),
]


@pytest.mark.parametrize("name", ["paged.nanover.zip", "stored.nanover.zip"])
def test_open_and_message_n_cold_then_warm(server: RangeServer, folder: Path, name: str) -> None:
    with ArchiveReader(folder / name) as local:
        for number in NUMBERS:  # each from a fresh open: cold
            server.reset()
            with ArchiveReader(server.url(name)) as reader:
                assert server.requests == 1  # the tail: end records, directory, page table
                assert reader.raw(number) == local.raw(number)
                assert server.requests <= 3 and server.sent <= COLD_BYTES, (number, server.log)
        with ArchiveReader(server.url(name)) as reader:
            reader.read(0)
            for number in random.Random(3).sample(range(COUNT), 20):  # warm
                server.reset()
                assert reader.read(number) == local.read(number)
                assert server.requests <= 2, (number, server.log)


def test_message_at_time_cold_then_warm(server: RangeServer, folder: Path) -> None:
    url = server.url("paged.nanover.zip")
    with ArchiveReader(folder / "paged.nanover.zip") as local:
        for t_us in (-1, 0, 999, PAGE_MESSAGES * 1000, 54_321_500, 10**12):
            server.reset()
            with ArchiveReader(url) as reader:
                number = reader.index_at_time(t_us)
                assert number == local.index_at_time(t_us)
                if number is not None:
                    assert reader.read(number) == local.read(number)
                assert server.requests <= 3 and server.sent <= COLD_BYTES, (t_us, server.log)
        with ArchiveReader(url) as reader:
            reader.read(reader.index_at_time(1000) or 0)
            for t_us in (77_777_000, 3_000_100, 99_999_000):
                server.reset()
                number = reader.index_at_time(t_us)
                assert number is not None and reader.read(number) == local.read(number)
                assert server.requests <= 2


def test_info_costs_at_most_one_request_beyond_the_open(server: RangeServer, folder: Path) -> None:
    url = server.url("paged.nanover.zip")
    with registry.open(url) as remote, registry.open(folder / "paged.nanover.zip") as local:
        opened = server.requests
        summary = remote.summary()
        assert server.requests - opened <= 1
        assert {k: v for k, v in summary.items() if k != "path"} == {
            k: v for k, v in local.summary().items() if k != "path"
        }
        assert remote.time_of(COUNT - 1) == local.time_of(COUNT - 1)
    server.reset()
    done = runner.invoke(app, ["info", url, "--json"])
    assert done.exit_code == 0, done.output
    assert server.requests <= 2  # the open (the format, from the description) and info


def test_cat_of_one_message_by_url_reads_its_page_not_the_index(
    server: RangeServer, folder: Path
) -> None:
    """A selection by number needs only the count: the tail, one page and one block."""
    first = 3 * PAGE_MESSAGES + 11
    url, local = server.url("paged.nanover.zip"), folder / "paged.nanover.zip"
    server.reset()
    remote = runner.invoke(app, ["cat", url, "--messages", f"{first}:{first + 1}"])
    assert remote.exit_code == 0, remote.output
    assert server.requests <= 3 and server.sent <= COLD_BYTES, server.log
    here = runner.invoke(app, ["cat", str(local), "--messages", f"{first}:{first + 1}"])
    assert remote.stdout == here.stdout and remote.stdout.count("\n") == 1
    empty = runner.invoke(app, ["cat", url, "--messages", f"{COUNT}:{COUNT + 5}"])
    assert empty.exit_code == 2 and "selects no message" in empty.stderr


def test_the_unpaged_layout_still_reads_by_url_with_more_requests(
    server: RangeServer, folder: Path
) -> None:
    with ArchiveReader(folder / "old.nanover.zip") as local:
        server.reset()
        with ArchiveReader(server.url("old.nanover.zip")) as reader:
            assert reader.pages is None and reader.description_problem is None
            assert reader.read(COUNT // 2) == local.read(COUNT // 2)
            assert server.requests > 3  # its whole columns and block table first
            assert np.array_equal(reader.index.timestamp_us, local.index.timestamp_us)


@pytest.mark.parametrize("name", ["one.nanover.zip", "empty.nanover.zip"])
def test_one_message_and_empty_archives_by_url(server: RangeServer, name: str) -> None:
    with ArchiveReader(server.url(name)) as reader:
        count = 1 if name.startswith("one") else 0
        assert len(reader) == count
        assert reader.index_at_time(10**9) == (0 if count else None)
        if count:
            assert reader.read(0) == {"m": random.Random(36).randbytes(SIZE)}
        with registry.open(server.url(name)) as recording:
            assert recording.summary()["messages"] == count


def test_a_damaged_page_by_url_is_one_error_naming_it(server: RangeServer, folder: Path) -> None:
    data = bytearray((folder / "paged.nanover.zip").read_bytes())
    with ArchiveReader(folder / "paged.nanover.zip") as local:
        assert local.pages is not None
        at, _ = local.pages.span(3)
        offset = local._members["nanorec.pages"].data_start + at
        expected = local.read(3 * PAGE_MESSAGES + 5)
    data[offset] = 0xC1  # never valid msgpack
    (folder / "damaged.nanover.zip").write_bytes(bytes(data))
    url = server.url("damaged.nanover.zip")
    with ArchiveReader(url) as reader:
        assert reader.read(0) is not None  # page 0 is whole
        with pytest.raises(PageError, match=f"page 3 at byte {offset}"):
            reader.read(3 * PAGE_MESSAGES + 5)
        # what needs the whole index falls back to index.msgpack, saying why
        assert reader.index.length[3 * PAGE_MESSAGES + 5] == len(reader.raw(3 * PAGE_MESSAGES + 5))
        assert f"page 3 at byte {offset}" in (reader.description_problem or "")
        assert reader.read(3 * PAGE_MESSAGES + 5) == expected


def test_s3_open_and_message_n(folder: Path) -> None:
    pytest.importorskip("moto.server")
    with moto_s3() as endpoint, ArchiveReader(folder / "paged.nanover.zip") as local:
        put_object(
            endpoint, "runs", "paged.nanover.zip", (folder / "paged.nanover.zip").read_bytes()
        )
        with ArchiveReader("s3://runs/paged.nanover.zip") as reader:
            assert reader.remote is not None
            source = reader.remote.source
            assert reader.read(COUNT - 7) == local.read(COUNT - 7)
            assert source.requests <= 3  # type: ignore[attr-defined]
            assert source.bytes_read <= COLD_BYTES  # type: ignore[attr-defined]
            before = source.requests  # type: ignore[attr-defined]
            assert reader.read(12_345) == local.read(12_345)
            assert source.requests - before <= 2  # type: ignore[attr-defined]
    assert os.environ.get("AWS_ENDPOINT_URL") != endpoint  # the server's environment is undone
