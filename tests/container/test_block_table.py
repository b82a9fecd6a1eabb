"""A compact archive's block table is checked before any block is read: offsets and starts
increasing from 0 inside their member, checked with numpy (a 1 GB archive's table has
hundreds of thousands of rows), and a value no file offset can be is an error, not an
overflow."""

from __future__ import annotations

import pytest

from nanorec.archive.blockread import BlockReader
from nanorec.errors import ArchiveError


def _reader(offsets: list[int], starts: list[int]) -> BlockReader:
    return BlockReader.from_rows(
        b"\0" * 4096, offsets, starts, data_start=0, data_size=4096, messages_size=10_000
    )


def test_an_increasing_table_is_taken() -> None:
    assert _reader([0, 100, 5000], [0, 10, 300]).block_count == 3


@pytest.mark.parametrize(
    ("offsets", "starts", "says"),
    [
        ([0, 100, 100], [0, 10, 20], "offsets are not increasing"),
        ([0, 100, 50], [0, 10, 20], "offsets are not increasing"),
        ([0, 100, 200], [0, 30, 20], "starts are not increasing"),
        ([0, 2**70, 2**71], [0, 10, 20], "offsets"),
        ([0, 100, 200], [0, -(2**70), 20], "starts"),
        ([5, 100], [0, 10], "do not start at 0"),
    ],
)
def test_a_bad_table_is_one_error(offsets: list[int], starts: list[int], says: str) -> None:
    with pytest.raises(ArchiveError, match=says):
        _reader(offsets, starts)
