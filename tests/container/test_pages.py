"""The paged index layout (`nanorec.archive.pages`, #36 item 2) read from disk: pages of 100
messages here (the module's size, set small), so that boundaries are many; the same answers as
the unpaged layout (format_version 1) of the same messages; damage to a page or to the table
named by page and byte offset, never a traceback or a huge allocation; NanoVer's reader still
iterates a paged archive."""

from __future__ import annotations

import zipfile
import zlib
from pathlib import Path
from typing import Any

import msgpack
import numpy as np
import pytest

from nanorec import ArchiveReader, ArchiveWriter, verify
from nanorec.archive import pages
from nanorec.errors import ArchiveError, FormatError, PageError
from nanorec.maintain.repack import repack

from .helpers import rebuild_zip, sample_messages, write_archive
from .nanover_reference import NanoverRecordingReader

PER = 100
COUNT = 350  # three full pages and a half
#: Messages on either side of each page boundary, and the ends.
BOUNDARIES = (0, PER - 1, PER, 2 * PER - 1, 2 * PER, 3 * PER, COUNT - 1)


@pytest.fixture(autouse=True)
def small_pages(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pages, "PAGE_MESSAGES", PER)


def _stamps(count: int = COUNT) -> list[int]:
    """Times rising with a run of equal ones across the first page boundary."""
    stamps = [1000 * i for i in range(count)]
    for i in range(PER - 5, min(count, PER + 5)):
        stamps[i] = 1000 * (PER - 5)
    return stamps


def _write(path: Path, count: int = COUNT, **options: Any) -> Path:
    return write_archive(
        path, sample_messages(count), _stamps(count), flags=[i % 3 for i in range(count)], **options
    )


@pytest.mark.parametrize("compact", [True, False])
def test_page_boundaries_read_as_the_unpaged_layout(tmp_path: Path, compact: bool) -> None:
    paged = _write(tmp_path / "paged.zip", compact=compact)
    unpaged = _write(tmp_path / "unpaged.zip", compact=compact, paged=False)
    with ArchiveReader(paged) as reader, ArchiveReader(unpaged) as old:
        assert reader.pages is not None and reader.pages.pages == 4
        assert old.pages is None and reader.index_source == old.index_source == "nanorec.msgpack"
        assert reader.description_problem is None and reader.compact == compact
        for name in ("offset", "length", "timestamp_us", "crc", "flags", "types_code"):
            assert np.array_equal(getattr(reader.index, name), getattr(old.index, name)), name
        expected = sample_messages(COUNT)
        for number in BOUNDARIES:
            assert reader.read(number) == old.read(number) == expected[number]
        assert reader[COUNT - 1] == reader[-1]
    assert verify(paged).ok and verify(unpaged).ok  # nothing wrong with the older layout
    with zipfile.ZipFile(paged) as archive:  # the description last, before the directory
        assert archive.namelist()[-2:] == ["nanorec.pages", "nanorec.msgpack"]
        assert msgpack.unpackb(archive.read("nanorec.msgpack"))["format_version"] == 2


def test_time_lookups_across_pages(tmp_path: Path) -> None:
    stamps = _stamps()
    with ArchiveReader(_write(tmp_path / "a.zip")) as reader:
        assert reader.index_at_time(-1) is None
        tie = 1000 * (PER - 5)  # equal times from message 95 to 104, across the boundary
        assert reader.index_at_time(tie) == PER + 4
        for number in BOUNDARIES:
            if stamps[number] != tie:
                assert reader.index_at_time(stamps[number]) == number
                assert reader.index_at_time(stamps[number] + 1) == number
        assert reader.index_at_time(10**12) == COUNT - 1


@pytest.mark.parametrize("count", [0, 1])
def test_empty_and_one_message_archives(tmp_path: Path, count: int) -> None:
    path = _write(tmp_path / "a.zip", count)
    with ArchiveReader(path) as reader:
        assert len(reader) == count and reader.description_problem is None
        assert reader.pages is not None and reader.pages.pages == count
        assert reader.time_span_us() == (None if not count else (0, 0))
        types = [(tuple(message), 1) for message in sample_messages(count)]
        assert reader.types_counts() == types
        if count:
            assert reader.read(0) == sample_messages(1)[0] and reader.index_at_time(5) == 0
    assert verify(path).ok


def _description(path: Path) -> dict[str, Any]:
    with zipfile.ZipFile(path) as archive:
        described: dict[str, Any] = msgpack.unpackb(archive.read("nanorec.msgpack"))
    return described


def _patch_page_byte(path: Path, page: int, at: int, value: int) -> int:
    """Set byte `at` of page `page` in the file; returns the page's file offset."""
    table = _description(path)["pages"]["table"]
    starts = np.cumsum(np.frombuffer(zlib.decompress(table["at"]["data"]), "<u8"), dtype="<u8")
    with zipfile.ZipFile(path) as archive:
        info = archive.getinfo("nanorec.pages")
    with open(path, "r+b") as handle:
        handle.seek(info.header_offset + 26)
        name_len, extra_len = np.frombuffer(handle.read(4), "<u2").tolist()
        offset = info.header_offset + 30 + name_len + extra_len + int(starts[page])
        handle.seek(offset + at)
        handle.write(bytes([value]))
    return offset


def test_a_damaged_page_is_named_and_the_index_comes_from_index_msgpack(tmp_path: Path) -> None:
    path = _write(tmp_path / "a.zip")
    offset = _patch_page_byte(path, 2, 0, 0xC1)  # a msgpack byte that is never valid
    with ArchiveReader(path) as reader:
        problem = reader.description_problem or ""
        assert f"page 2 at byte {offset}" in problem and "not valid msgpack" in problem
        assert reader.index_source == "index.msgpack"  # the fallback, still every answer
        assert [reader.read(n) for n in BOUNDARIES] == [
            sample_messages(COUNT)[n] for n in BOUNDARIES
        ]
    report = verify(path)  # once, though both the blocks and the columns meet it
    assert sum(f"page 2 at byte {offset}" in p.message for p in report.problems) == 1


@pytest.mark.parametrize(
    ("damage", "says"),
    [
        ("huge page", "claims 1099511627776 bytes"),
        ("not back to back", "back to back"),
        ("times", "its times disagree"),
        ("no table", "no columns"),
        ("huge pages", "page_messages is 1073741824"),
        ("huge block count", "block_count is 1099511627776"),
    ],
)
def test_a_damaged_page_table_is_refused_before_any_page_is_read(
    tmp_path: Path, damage: str, says: str
) -> None:
    path = _write(tmp_path / "a.zip")
    described = _description(path)
    table = described["pages"]["table"]

    def column(name: str, dtype: str) -> np.ndarray[Any, Any]:
        raw = np.frombuffer(zlib.decompress(table[name]["data"]), dtype).copy()
        return np.cumsum(raw, dtype=dtype) if table[name]["encoding"] == "delta-zlib" else raw

    def put(name: str, values: np.ndarray[Any, Any]) -> None:
        if table[name]["encoding"] == "delta-zlib":
            values = np.diff(values, prepend=values.dtype.type(0)).astype(values.dtype)
        table[name]["data"] = zlib.compress(values.tobytes())

    if damage == "huge page":
        size = column("size", "<u8")
        size[1] = 1 << 40
        put("size", size)
    elif damage == "not back to back":
        at = column("at", "<u8")
        at[2] += 1
        put("at", at)
    elif damage == "times":
        low = column("min_us", "<i8")
        low[3] -= 1
        put("min_us", low)
    elif damage == "huge pages":
        described["pages"]["page_messages"] = 1 << 30
    elif damage == "huge block count":
        described["pages"]["block_count"] = 1 << 40
    else:
        del described["pages"]["table"]
    damaged = rebuild_zip(
        path, tmp_path / "bad.zip", replace={"nanorec.msgpack": msgpack.packb(described)}
    )
    with ArchiveReader(damaged) as reader:
        assert says in (reader.description_problem or "")
        assert reader.index_source == "index.msgpack"
        assert reader.read(COUNT - 1) == sample_messages(COUNT)[COUNT - 1]
    assert not verify(damaged).ok


def test_page_error_is_a_format_error_and_an_archive_error() -> None:
    assert issubclass(PageError, FormatError) and issubclass(PageError, ArchiveError)


def test_nanover_iterates_a_paged_archive(tmp_path: Path) -> None:
    path = _write(tmp_path / "a.nanover.zip")
    with NanoverRecordingReader.from_path(path) as reader:
        events = list(reader.iter_message_events())
    assert [event.timestamp for event in events] == _stamps()
    assert [
        {k: v for k, v in event.message.items() if k != "nanorec.t"} for event in events
    ] == sample_messages(COUNT)


def test_repack_moves_an_unpaged_archive_to_pages(tmp_path: Path) -> None:
    old = _write(tmp_path / "old.zip", paged=False)
    new = tmp_path / "new.zip"
    repack(old, new)
    with ArchiveReader(old) as before, ArchiveReader(new) as after:
        assert before.pages is None and after.pages is not None
        assert after.member("index.msgpack") == before.member("index.msgpack")
        assert [after.raw(n) for n in range(COUNT)] == [before.raw(n) for n in range(COUNT)]
    assert verify(new).ok


def test_an_unpaged_writer_still_writes_format_version_1(tmp_path: Path) -> None:
    with ArchiveWriter(tmp_path / "a.zip", paged=False) as writer:
        writer.write({"a": 1}, timestamp_us=0)
    described = _description(tmp_path / "a.zip")
    assert described["format_version"] == 1 and "pages" not in described


def test_a_block_row_past_any_offset_is_a_page_error() -> None:
    """Block rows are joined as int64 arrays (not Python ints): a uint64 row past 2**63 is
    refused by name, not wrapped to a negative offset."""
    from nanorec.archive import pagetable

    with pytest.raises(PageError, match="past any offset"):
        pagetable._int64(np.array([0, 1 << 63], np.uint64))
    assert pagetable._int64(np.array([0, 7], np.uint64)).tolist() == [0, 7]
