"""A local paged archive opened with `paged_index=True` (#33 item 2, export's bounded memory):
`raw_run` walks the pages (100 messages here) instead of loading the whole index, gives the
same bytes as the whole index does, and names a damaged message by its CRC."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from nanorec import ArchiveReader
from nanorec.archive import pages
from nanorec.errors import ChecksumError

from .helpers import sample_messages, write_archive

PER = 100
COUNT = 350
RUNS = ((0, COUNT), (0, 1), (PER - 1, PER + 1), (PER - 3, 3 * PER + 7), (3 * PER, COUNT))


@pytest.fixture(autouse=True)
def small_pages(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pages, "PAGE_MESSAGES", PER)


@pytest.mark.parametrize("compact", [True, False])
def test_runs_through_pages_are_the_whole_index_runs(tmp_path: Path, compact: bool) -> None:
    path = write_archive(tmp_path / "a.zip", sample_messages(COUNT), compact=compact)
    with ArchiveReader(path) as whole, ArchiveReader(path, paged_index=True) as paged:
        assert len(paged) == COUNT and paged.compact == compact
        for first, stop in RUNS:
            data, starts = paged.raw_run(first, stop)
            expected, expected_starts = whole.raw_run(first, stop)
            assert data == expected and np.array_equal(starts, expected_starts)
        paged.advise_sequential()  # a pass: still no whole index
        assert paged._index is None
        assert paged.raw(PER + 1) == whole.raw(PER + 1)


def test_a_damaged_message_is_named_by_a_paged_run(tmp_path: Path) -> None:
    path = write_archive(tmp_path / "a.zip", sample_messages(COUNT), compact=False)
    bad = 2 * PER + 5
    with ArchiveReader(path) as reader:
        at = reader._messages_start + int(reader.index.offset[bad]) + 3
    raw = bytearray(path.read_bytes())
    raw[at] ^= 0xFF
    path.write_bytes(bytes(raw))
    with ArchiveReader(path, paged_index=True) as reader:
        assert reader.raw_run(0, PER)[0]  # the pages before it are sound
        with pytest.raises(ChecksumError, match=f"message {bad} "):
            reader.raw_run(PER, COUNT)
        data, _ = reader.raw_run(PER, COUNT, verify=False)
        assert len(data) > 0


def test_finding_an_archives_format_reads_no_page(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every verb asks an archive's format (twice a command): its description says, and the
    index of millions of messages is not read for it (it was: ~0.5 GB at 9 M messages)."""
    from nanorec.archive.archive_file import ArchiveFile
    from nanorec.cli.dispatch import format_of

    path = write_archive(tmp_path / "a.zip", sample_messages(COUNT))

    def whole(self: ArchiveFile) -> None:
        raise AssertionError("the whole index was read")

    monkeypatch.setattr(ArchiveFile, "_whole_pages", whole)
    assert format_of(path) is None  # a plain archive: no converter wrote it
    with ArchiveReader(path, paged_index=True) as reader:
        assert reader.raw(3) and reader.description is not None
