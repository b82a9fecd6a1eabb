"""Selections by time and by type on a paged archive read by URL (#36, what was left) read
only the pages the page table says may hold a selected message (each page's least and
greatest time, and the types it holds), fetched together; the messages equal the local
archive's. Counted on the logging Range server; the pages read are counted where they are
parsed."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("obstore")

from nanorec import ArchiveReader, ArchiveWriter, registry
from nanorec.archive.pages import PAGE_MESSAGES
from nanorec.archive.pagetable import PageTable
from nanorec.cli import _register, app
from nanorec.selection import Selection

from ..conftest import make_runner
from .servers import RangeServer

COUNT = 100_000  # 7 pages of 16 Ki messages, 1 ms apart
SIZE = 100
#: Messages carrying "rare" besides "m": in page 3 only.
RARE = range(3 * PAGE_MESSAGES + 100, 3 * PAGE_MESSAGES + 110)
runner = make_runner()
_register()


def _write(path: Path) -> Path:
    blob = random.Random(36).randbytes(COUNT * SIZE)
    with ArchiveWriter(path, source_format="bench") as writer:
        for number in range(COUNT):
            value: dict[str, object] = {"m": blob[number * SIZE : (number + 1) * SIZE]}
            if number in RARE:
                value["rare"] = number
            writer.write(value, timestamp_us=number * 1000)
    return path


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("paged-select")
    _write(out / "kinds.nanover.zip")
    return out


@pytest.fixture
def server(folder: Path) -> Iterator[RangeServer]:
    with RangeServer(folder).running() as running:
        yield running


@pytest.fixture
def parsed(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The pages parsed (each page read is parsed once)."""
    pages: list[int] = []
    parse = PageTable.parse

    def counted(self: PageTable, page: int, data: bytes, base: int = 0) -> object:
        pages.append(page)
        return parse(self, page, data, base)

    monkeypatch.setattr(PageTable, "parse", counted)
    return pages


@pytest.mark.parametrize(
    ("start", "end"),
    [(20.0, 21.0), (16.0, 16.5), (32.7, 33.0), (0.0, 0.2), (99.5, None), (None, 0.01)],
)
def test_a_time_window_reads_the_pages_it_spans(
    server: RangeServer, folder: Path, parsed: list[int], start: float | None, end: float | None
) -> None:
    selection = Selection.make(start=start, end=end)
    with ArchiveReader(folder / "kinds.nanover.zip") as local:
        expected = selection.numbers(local.index)
    server.reset()
    with ArchiveReader(server.url("kinds.nanover.zip")) as reader:
        numbers = selection.numbers_from(reader)
        assert np.array_equal(numbers, expected)
        spanned = set((expected // PAGE_MESSAGES).tolist())
        assert set(parsed) == spanned and len(parsed) == len(spanned)
        assert server.requests <= 1 + len(spanned), server.log  # the tail, then the pages


def test_cat_of_a_time_window_by_url_equals_the_local_one(
    server: RangeServer, folder: Path, parsed: list[int]
) -> None:
    url, local = server.url("kinds.nanover.zip"), folder / "kinds.nanover.zip"
    server.reset()
    remote = runner.invoke(app, ["cat", url, "--start", "40", "--end", "41.5"])
    assert remote.exit_code == 0, remote.output
    assert set(parsed) == {2}  # messages 40,000 to 41,500 lie in page 2 alone
    size = (folder / "kinds.nanover.zip").stat().st_size
    assert server.sent < size // 10, server.log
    here = runner.invoke(app, ["cat", str(local), "--start", "40", "--end", "41.5"])
    assert remote.stdout == here.stdout and remote.stdout.count("\n") == 1501


def test_a_type_reads_only_the_pages_holding_it(
    server: RangeServer, folder: Path, parsed: list[int]
) -> None:
    url, local = server.url("kinds.nanover.zip"), folder / "kinds.nanover.zip"
    with ArchiveReader(url) as reader:
        assert reader.pages is not None and reader.pages.page_types is not None
        numbers = Selection.make(kinds=["rare"]).numbers_from(reader)
        assert numbers.tolist() == list(RARE) and parsed == [3]
    server.reset()
    parsed.clear()
    remote = runner.invoke(app, ["cat", url, "--type", "rare"])
    assert remote.exit_code == 0, remote.output
    assert parsed == [3] and server.requests <= 3, server.log
    here = runner.invoke(app, ["cat", str(local), "--type", "rare"])
    assert remote.stdout == here.stdout and remote.stdout.count("\n") == len(RARE)
    with registry.open(url) as recording:
        assert recording.table_kinds() == ["m", "rare"]
        parsed.clear()
        empty = Selection.make(start=0, end=49, kinds=["rare"]).numbers_from(recording.reader)
        assert not len(empty) and not parsed  # page 3 starts at 49.152 s: no page read


def test_a_page_whose_types_disagree_with_the_table_is_an_error(folder: Path) -> None:
    """The per-page types are checked when the page is read."""
    with ArchiveReader(folder / "kinds.nanover.zip") as reader:
        table = reader.pages
        assert table is not None and table.page_types is not None
        table.page_types[0, :] = False
        member = reader._members["nanorec.pages"]
        at, size = table.span(0)
        data = reader._map()[member.data_start + at : member.data_start + at + size]
        with pytest.raises(Exception, match="types disagree with the page table"):
            table.parse(0, data, member.data_start)


def test_a_table_without_page_types_selects_by_time_alone(
    server: RangeServer, folder: Path, parsed: list[int]
) -> None:
    """Archives written before `page_types`: a type reads every page of the time window."""
    with ArchiveReader(server.url("kinds.nanover.zip")) as reader:
        assert reader.pages is not None
        reader.pages.page_types = None
        numbers = Selection.make(start=40, kinds=["rare"]).numbers_from(reader)
        assert numbers.tolist() == list(RARE)
        assert sorted(parsed) == list(range(2, reader.pages.pages))  # 40 s lies in page 2


@pytest.mark.parametrize(
    "selection",
    [
        Selection.make(messages=f"{RARE[2]}:{RARE[5]}", kinds=["rare"]),
        Selection.make(messages="10:20", kinds=["m"]),
        Selection.make(messages=f"{RARE[0]}:", kinds=["rare"]),
    ],
)
def test_a_number_range_with_kinds_keeps_the_range(
    server: RangeServer, folder: Path, selection: Selection
) -> None:
    """A number range narrows a selection by kinds by URL too (page by page, the range was
    once dropped: every message of those kinds in the file came back)."""
    with ArchiveReader(folder / "kinds.nanover.zip") as local:
        expected = selection.numbers(local.index)
    with ArchiveReader(server.url("kinds.nanover.zip")) as reader:
        assert np.array_equal(selection.numbers_from(reader), expected)
