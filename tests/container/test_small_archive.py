"""Per-archive fixed costs (issue 33, item 4): a small archive is written without threads
of its own, and with the bytes it always had."""

from __future__ import annotations

import zlib
from pathlib import Path

import pytest

from nanorec.archive import zipout
from nanorec.archive.reader import ArchiveReader
from nanorec.archive.writer import ArchiveWriter


def test_a_small_archive_starts_no_member_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_thread(*args: object, **kwargs: object) -> None:
        raise AssertionError("a thread for a small member")

    monkeypatch.setattr(zipout, "ThreadPoolExecutor", no_thread)
    path = tmp_path / "a.nanover.zip"
    with ArchiveWriter(path, compact=True) as writer:
        for number in range(100):
            writer.write({"n": number}, timestamp_us=number)
        writer.add_member("side.bin", b"x" * 5000)
    with ArchiveReader(path) as reader:
        assert len(reader) == 100 and reader.read(99)["n"] == 99


@pytest.mark.parametrize("sizes", [[10, 20, 30], [300_000] * 8, [1 << 20, 5, 1 << 20, 7]])
def test_streamed_members_deflate_as_one_compressor_would(sizes: list[int]) -> None:
    """Inline or on the thread (past `_INLINE_BYTES`), the compressor gets the chunks in
    order: the output is that of feeding them to it one by one."""
    chunks = [bytes([i % 251]) * size for i, size in enumerate(sizes)]
    expected_compressor = zlib.compressobj(6, zlib.DEFLATED, -15)
    expected = b"".join(expected_compressor.compress(c) for c in chunks)
    expected += expected_compressor.flush()
    got = b"".join(zipout._deflated(chunks, zlib.compressobj(6, zlib.DEFLATED, -15)))
    assert got == expected
    assert zlib.decompress(got, -15) == b"".join(chunks)


def test_a_small_archive_writes_no_index_spool_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from nanorec.archive import spool

    def no_file(*args: object, **kwargs: object) -> None:
        raise AssertionError("a spool file for a small archive")

    monkeypatch.setattr(spool.tempfile, "TemporaryFile", no_file)
    path = tmp_path / "a.nanover.zip"
    with ArchiveWriter(path) as writer:
        for number in range(10):
            writer.write({"n": number}, timestamp_us=number, metadata={"k": number})
    with ArchiveReader(path) as reader:
        assert [reader.metadata(i)["k"] for i in range(10)] == list(range(10))


def test_spooled_and_held_rows_come_back_in_order(tmp_path: Path) -> None:
    from nanorec.archive.spool import IndexSpool

    rows = IndexSpool(tmp_path, chunk_rows=3)
    for number in range(7):
        rows.append((10 + number, number, 0, 0, 0, 1, 1), bytes([number]))
    rows.spill(last=True)  # 6 rows spooled in two chunks, the 7th held
    got = list(rows.chunks())
    rows.close()
    assert [len(columns["length"]) for columns, _ in got] == [3, 3, 1]
    lengths = [int(x) for columns, _ in got for x in columns["length"]]
    assert lengths == list(range(10, 17))
    assert b"".join(extra for _, extra in got) == bytes(range(7))
    assert rows.max_length == 16
