"""`RangeBuffer`: slices equal to the bytes, pages asked once, adjacent missing pages joined into
one range, one batch for a prefetch, a bounded cache; and an archive read through it (a local
file as a `MappedSource`) reads as through its mapping."""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path

import pytest

from nanorec import ArchiveReader
from nanorec.archive.members import open_members
from nanorec.archive.source import CACHE_PAGES, PAGE, MappedSource, RangeBuffer

from ..container.helpers import sample_messages, write_archive


class Batches(MappedSource):
    """A `MappedSource` that also records each `read_many` call's ranges."""

    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.batches: list[list[tuple[int, int]]] = []

    def read_many(self, ranges: Sequence[tuple[int, int]]) -> list[bytes]:
        self.batches.append(list(ranges))
        return super().read_many(ranges)


DATA = random.Random(5).randbytes(20 * PAGE + 123)


def test_slices_are_the_bytes() -> None:
    buffer = RangeBuffer(Batches(DATA))
    rng = random.Random(7)
    assert len(buffer) == len(DATA)
    for _ in range(300):
        start = rng.randrange(len(DATA) + 10)
        stop = start + rng.choice([0, 1, 5, PAGE, 3 * PAGE + 17])
        assert buffer[start:stop] == DATA[start:stop]
    assert buffer[-10:] == DATA[-10:]
    assert buffer[5:2] == b""


def test_adjacent_missing_pages_are_one_range_and_cached_pages_none() -> None:
    source = Batches(DATA)
    buffer = RangeBuffer(source)
    assert buffer[PAGE + 10 : 4 * PAGE - 10] == DATA[PAGE + 10 : 4 * PAGE - 10]
    assert source.batches == [[(PAGE, 3 * PAGE)]]
    assert buffer[2 * PAGE : 2 * PAGE + 5] == DATA[2 * PAGE : 2 * PAGE + 5]
    assert source.requests == 1  # cached
    # pages 0 and 4 missing around cached 1-3: two ranges, one batch
    assert buffer[10 : 5 * PAGE - 1] == DATA[10 : 5 * PAGE - 1]
    assert source.batches[1] == [(0, PAGE), (4 * PAGE, PAGE)]


def test_a_prefetch_is_one_batch() -> None:
    source = Batches(DATA)
    buffer = RangeBuffer(source)
    buffer.prefetch([(0, 30), (10 * PAGE + 5, 40), (15 * PAGE, PAGE + 1)])
    assert source.batches == [[(0, PAGE), (10 * PAGE, PAGE), (15 * PAGE, 2 * PAGE)]]
    assert buffer[10 * PAGE : 10 * PAGE + 50] == DATA[10 * PAGE : 10 * PAGE + 50]
    assert len(source.batches) == 1


def test_the_tail_given_at_open_is_not_fetched_again() -> None:
    source = Batches(DATA)
    buffer = RangeBuffer(source, tail=DATA[-3 * PAGE :])
    assert buffer[len(DATA) - 2 * PAGE :] == DATA[len(DATA) - 2 * PAGE :]
    assert source.requests == 0


def test_the_cache_is_bounded_and_large_reads_bypass_it() -> None:
    data = bytes(range(256)) * ((CACHE_PAGES + 40) * PAGE // 256)
    source = Batches(data)
    buffer = RangeBuffer(source)
    for page in range(CACHE_PAGES + 40):
        assert buffer[page * PAGE : page * PAGE + 1] == data[page * PAGE : page * PAGE + 1]
    assert len(buffer._pages) == CACHE_PAGES
    assert buffer[0:1] == data[0:1]  # evicted: fetched again
    assert source.requests == CACHE_PAGES + 41
    whole = buffer[0 : len(data)]
    assert whole == data and len(buffer._pages) == CACHE_PAGES


def test_a_sequential_pass_reads_ahead() -> None:
    source = Batches(DATA)
    buffer = RangeBuffer(source)
    buffer.sequential = True
    for start in range(0, len(DATA), 1000):
        assert buffer[start : start + 1000] == DATA[start : start + 1000]
    assert source.requests == 1  # 20 pages < READ_AHEAD


@pytest.mark.parametrize("compact", [True, False])
def test_an_archive_reads_through_ranges_as_through_its_mapping(
    tmp_path: Path, compact: bool
) -> None:
    path = write_archive(tmp_path / "a.nanover.zip", sample_messages(3000), compact=compact)
    data = path.read_bytes()
    buffer = RangeBuffer(Batches(data))
    end, members = open_members(buffer)
    with ArchiveReader(path) as reader:
        assert list(members) == list(reader.member_names)
        assert end.cd_offset == reader._end.cd_offset
        assert {name: m.data_start for name, m in members.items()} == {
            name: m.data_start for name, m in reader._members.items()
        }
