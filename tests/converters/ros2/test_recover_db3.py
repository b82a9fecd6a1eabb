"""A crashed `.db3` bag cut anywhere, inside its last page too: every row SQLite itself can
still read from the cut file is recovered, none is invented, the loss is reported (convert,
the archive's `verify`, the file's `verify`) and the cut file exports back byte for byte.

The oracle is SQLite: the cut file padded to its declared size (SQLite reads a short page as
zeros), each original row looked up by rowid; a row counts when it comes back equal to the
original both with zero and with 0xFF padding (a cell whose last bytes are cut but happened
to be zeros is not on disk, only guessed).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from nanorec import registry, verify
from nanorec.archive.reader import ArchiveReader
from nanorec.cli import _register, app
from nanorec.converters.ros.ros2.db3 import open_db3
from nanorec.converters.ros.ros2.db3_skeleton import join_db3
from tests.conftest import REALDATA, make_runner
from tests.converters.ros2.test_db3 import make_db3

Row = tuple[int, int, bytes]
REAL = sorted((REALDATA / "ros2").glob("*/*.db3")) if (REALDATA / "ros2").is_dir() else []


def rows(path: Path) -> dict[int, Row]:
    con = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
    try:
        query = "SELECT id, topic_id, timestamp, data FROM messages"
        return {r[0]: (r[1], r[2], bytes(r[3])) for r in con.execute(query)}
    finally:
        con.close()


def readable(prefix: bytes, original: dict[int, Row], scratch: Path, among: set[int]) -> set[int]:
    """The rowids of `among` SQLite reads back, equal to the original, from the cut file
    `prefix` (one lookup a row: a range scan may stop silently at a damaged page)."""
    page = int.from_bytes(prefix[16:18], "big") if len(prefix) >= 100 else 0
    if not page:
        return set()
    page = 65536 if page == 1 else page
    declared = int.from_bytes(prefix[28:32], "big")
    found: set[int] | None = None
    for fill in (b"\x00", b"\xff"):
        scratch.write_bytes(prefix + fill * max(0, declared * page - len(prefix)))
        try:
            con = sqlite3.connect(f"file:{scratch}?mode=ro&immutable=1", uri=True)
        except sqlite3.Error:
            return set()
        good = set()
        query = "SELECT topic_id, timestamp, data FROM messages WHERE id=?"
        for rowid in among:
            try:
                got = con.execute(query, (rowid,)).fetchone()
            except (sqlite3.Error, UnicodeDecodeError):
                continue
            if got is not None and (got[0], got[1], got[2]) == original[rowid]:
                good.add(rowid)
        con.close()
        found = good if found is None else found & good
    return found or set()


def offsets(size: int, page: int, count: int = 20) -> list[int]:
    """`count` cuts: spread over the file, a quarter inside its last page."""
    inside = count // 4
    spread = [100 + (size - 100) * k // (count - inside) for k in range(count - inside)]
    last = size - page
    spread += [last + 1 + (page - 2) * k // (inside - 1) for k in range(inside)]
    return sorted(set(spread))


def check_cut(prefix: bytes, original: dict[int, Row], scratch: Path) -> int:
    """Found rows include every row SQLite reads, each an original row, in rowid order; a
    cut is a loss; join gives `prefix` back. Returns how many were found."""
    f = open_db3(prefix)
    msgs = list(f.messages())
    found = [(m.topic, m.timestamp, bytes(m.data)) for m in msgs]
    order = [original[k] for k in sorted(original)]
    it = iter(order)
    assert all(row in it for row in found)  # none invented, rowid order
    have = set(found)
    missed = {k for k, row in original.items() if row not in have}
    assert not readable(prefix, original, scratch, missed)  # SQLite reads none we missed
    assert b"".join(join_db3(f.skeleton(), [m.data for m in msgs])) == prefix
    lost = len(original) - len(found)
    assert f.damage.lost_messages <= lost
    if f.damage.cut is not None:
        assert f.damage.losses
    return len(found)


@pytest.mark.slow  # 7 s: a cut in every page of every real bag
@pytest.mark.realdata
@pytest.mark.parametrize("path", REAL, ids=lambda p: p.name)
def test_real_bags_cut_recover_every_row_sqlite_reads(path: Path, tmp_path: Path) -> None:
    data = path.read_bytes()
    original = rows(path)
    page = open_db3(data).page_size
    for cut in offsets(len(data), page):
        check_cut(data[:cut], original, tmp_path / "cut.db3")


def test_realdata_present_or_skipped() -> None:
    if not (REALDATA / "ros2").is_dir():
        pytest.skip("../shared/realdata is not present")
    assert REAL


def test_synthetic_cuts_inside_pages(tmp_path: Path) -> None:
    path = make_db3(tmp_path / "x.db3", [i * 37 % 700 for i in range(600)], page_size=1024)
    data = path.read_bytes()
    original = rows(path)
    found = [
        check_cut(data[:cut], original, tmp_path / "cut.db3")
        for cut in offsets(len(data), 1024, 40)
    ]
    assert max(found[:-1]) > len(original) // 2


def test_a_cut_bag_is_reported_by_convert_and_verify(tmp_path: Path) -> None:
    path = make_db3(tmp_path / "x.db3", [i * 37 % 700 for i in range(600)], page_size=1024)
    data = path.read_bytes()
    source = tmp_path / "cut.db3"
    source.write_bytes(data[: len(data) * 2 // 3 + 300])
    converter = registry.for_native(source)
    archive = tmp_path / "cut.nanover.zip"
    report = converter.convert(source, archive)
    assert report.damaged and "messages lost" in str(report.damaged[0])
    assert 0 < report.details["messages_lost"] <= len(rows(path)) - report.messages
    checked = verify(archive)
    assert not checked.ok and checked.problems[-1].kind == "source-damage"
    assert f"at least {report.details['messages_lost']} message" in str(checked.problems[-1])
    with ArchiveReader(archive) as reader:
        assert converter.export(reader, tmp_path / "back.db3").identical is not False
    assert (tmp_path / "back.db3").read_bytes() == source.read_bytes()
    _register()
    native = make_runner().invoke(app, ["verify", str(source)])
    assert native.exit_code == 1 and "messages lost" in native.stderr
    whole = make_runner().invoke(app, ["verify", str(path)])
    assert whole.exit_code == 0, whole.stderr


@pytest.mark.realdata
@pytest.mark.parametrize("path", REAL, ids=lambda p: p.name)
def test_real_bags_cut_in_their_last_page_convert_verify_export(path: Path, tmp_path: Path) -> None:
    data = path.read_bytes()
    page = open_db3(data).page_size
    source = tmp_path / path.name
    source.write_bytes(data[: len(data) - page // 2])
    converter = registry.for_native(source)
    archive = tmp_path / "cut.nanover.zip"
    report = converter.convert(source, archive)
    checked = verify(archive)
    assert checked.ok == (not report.damaged)
    if report.messages < len(rows(path)):  # messages lost: the report and verify say so
        assert report.damaged and not checked.ok
    with ArchiveReader(archive) as reader:
        assert converter.export(reader, tmp_path / "back.db3").identical is not False
    assert (tmp_path / "back.db3").read_bytes() == source.read_bytes()
