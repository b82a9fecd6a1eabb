"""A `.db3` with its WAL (rosbag2's `resilient` preset) whose writer died before a
checkpoint: the rows only the WAL holds are read as SQLite reads them after a crash (the
oracle: SQLite itself opening a copy of the pair), a transaction never committed is dropped
and reported, a WAL cut anywhere gives what SQLite still gives, and both files export back
byte for byte."""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from nanorec import registry, verify
from nanorec.archive.reader import ArchiveReader
from nanorec.converters.ros.ros2.bag import locate
from nanorec.converters.ros.ros2.db3 import open_db3
from nanorec.converters.ros.ros2.db3_skeleton import join_db3
from nanorec.converters.ros.ros2.sqlite_wal import read_wal
from tests.converters.ros2.test_db3 import V4

Row = tuple[int, int, bytes]


@contextmanager
def live_writer(folder: Path, rows: int, checkpointed: int) -> Iterator[sqlite3.Connection]:
    """A rosbag2-like writer in WAL mode, its first `checkpointed` rows checkpointed into
    the file and the rest committed to the WAL only; kept open (no checkpoint at close)."""
    path = folder / "live.db3"
    con = sqlite3.connect(path, isolation_level=None)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("PRAGMA wal_autocheckpoint=0")
    con.execute("PRAGMA page_size=1024")
    con.execute("BEGIN")
    for stmt in V4:
        con.execute(stmt)
    con.execute("INSERT INTO schema VALUES (4, 'jazzy')")
    con.execute("INSERT INTO topics VALUES (1, '/chatter', 'std_msgs/msg/String', 'cdr', '', '')")
    con.execute("COMMIT")
    for i in range(1, rows + 1):
        data = bytes([i % 251]) * (i * 37 % 1500)
        con.execute("INSERT INTO messages(topic_id, timestamp, data) VALUES (1, ?, ?)", (i, data))
        if i == checkpointed:
            con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    try:
        yield con
    finally:
        con.close()


def crashed(con: sqlite3.Connection, target: Path) -> Path:
    """The files as a crash leaves them: the .db3 and its WAL copied while `con` is open."""
    source = Path(con.execute("PRAGMA database_list").fetchone()[2])
    target.mkdir(parents=True, exist_ok=True)
    shutil.copy(source, target / "bag_0.db3")
    shutil.copy(source.with_name(source.name + "-wal"), target / "bag_0.db3-wal")
    return target / "bag_0.db3"


def sqlite_sees(path: Path, scratch: Path) -> list[Row]:
    """The rows SQLite reads from `path` and its WAL after a crash (a copy: it recovers)."""
    scratch.mkdir(parents=True, exist_ok=True)
    copy = scratch / path.name
    shutil.copy(path, copy)
    wal = path.with_name(path.name + "-wal")
    if wal.exists():
        shutil.copy(wal, scratch / wal.name)
    con = sqlite3.connect(copy)
    try:
        query = "SELECT topic_id, timestamp, data FROM messages ORDER BY id"
        return [(r[0], r[1], bytes(r[2])) for r in con.execute(query)]
    finally:
        con.close()
        shutil.rmtree(scratch)


def ours(path: Path) -> tuple[list[Row], bytes, bytes]:
    """Our rows of the file and its WAL, and the pair joined back from the skeleton."""
    main = path.read_bytes()
    wal_path = path.with_name(path.name + "-wal")
    wal = wal_path.read_bytes() if wal_path.exists() else b""
    f = open_db3(main + wal, len(main))
    msgs = list(f.messages())
    joined = b"".join(join_db3(f.skeleton(), [m.data for m in msgs]))
    return [(m.topic, m.timestamp, bytes(m.data)) for m in msgs], joined, main + wal


def test_rows_only_the_wal_holds_are_read(tmp_path: Path) -> None:
    with live_writer(tmp_path, 300, 100) as con:
        path = crashed(con, tmp_path / "bag")
    rows, joined, pair = ours(path)
    assert joined == pair
    assert rows == sqlite_sees(path, tmp_path / "oracle")
    assert len(rows) == 300
    wal = read_wal(path.with_name("bag_0.db3-wal").read_bytes())
    assert wal is not None and wal.committed == wal.valid > 0
    # without its WAL the file gives only the checkpointed rows
    assert len(list(open_db3(path.read_bytes()).messages())) == 100


def test_a_transaction_never_committed_is_dropped_and_reported(tmp_path: Path) -> None:
    with live_writer(tmp_path, 200, 50) as con:
        con.execute("PRAGMA cache_size=2")  # a small cache spills the open transaction
        con.execute("BEGIN")
        for i in range(1000, 1400):
            con.execute(
                "INSERT INTO messages(topic_id, timestamp, data) VALUES (1, ?, ?)",
                (i, b"x" * 900),
            )
        path = crashed(con, tmp_path / "bag")
        con.execute("ROLLBACK")
    wal = read_wal(path.with_name("bag_0.db3-wal").read_bytes())
    assert wal is not None and wal.valid > wal.committed  # spilled, never committed
    rows, joined, pair = ours(path)
    assert joined == pair
    assert rows == sqlite_sees(path, tmp_path / "oracle") and len(rows) == 200
    converter = registry.for_native(path)
    archive = tmp_path / "bag.nanover.zip"
    report = converter.convert(tmp_path / "bag", archive)
    assert report.messages == 200
    assert any("never committed" in str(region) for region in report.damaged)
    checked = verify(archive)
    assert not checked.ok and "never committed" in str(checked.problems[-1])
    with ArchiveReader(archive) as reader:
        assert converter.export(reader, tmp_path / "back").identical is True
    for name in ("bag_0.db3", "bag_0.db3-wal"):
        assert (tmp_path / "back" / name).read_bytes() == (tmp_path / "bag" / name).read_bytes()


def test_a_cut_wal_gives_what_sqlite_gives(tmp_path: Path) -> None:
    with live_writer(tmp_path, 250, 60) as con:
        path = crashed(con, tmp_path / "bag")
    wal_path = path.with_name("bag_0.db3-wal")
    whole = wal_path.read_bytes()
    for k in range(20):
        cut = len(whole) * k // 19
        wal_path.write_bytes(whole[:cut])
        rows, joined, pair = ours(path)
        assert joined == pair
        assert rows == sqlite_sees(path, tmp_path / "oracle"), cut


@pytest.mark.parametrize("folder", [True, False])
def test_a_bag_with_its_wal_exports_both_files(tmp_path: Path, folder: bool) -> None:
    with live_writer(tmp_path, 120, 30) as con:
        path = crashed(con, tmp_path / "bag")
    (tmp_path / "bag" / "bag_0.db3-shm").write_bytes(b"\0" * 64)  # rebuilt by SQLite: left out
    source = tmp_path / "bag" if folder else path
    assert locate(source).files[0].wal == path.with_name("bag_0.db3-wal")
    converter = registry.for_native(source)
    archive = tmp_path / "bag.nanover.zip"
    report = converter.convert(source, archive)
    assert report.messages == 120 and not report.damaged
    assert verify(archive).ok
    back = tmp_path / ("back" if folder else "back.db3")
    with ArchiveReader(archive) as reader:
        assert converter.export(reader, back).identical is True
    files = back if folder else tmp_path
    prefix = "bag_0" if folder else "back"
    assert (files / f"{prefix}.db3").read_bytes() == path.read_bytes()
    assert (files / f"{prefix}.db3-wal").read_bytes() == (
        tmp_path / "bag/bag_0.db3-wal"
    ).read_bytes()
    if folder:
        assert not (back / "bag_0.db3-shm").exists()


def test_a_cut_file_with_its_wal_gives_the_pages_both_still_hold(tmp_path: Path) -> None:
    """The .db3 cut short, its WAL whole: pages the WAL holds are read past the gap, the rows
    are original ones in order, the loss is counted (not more than the truth)."""
    with live_writer(tmp_path, 300, 100) as con:
        path = crashed(con, tmp_path / "bag")
    original = sqlite_sees(path, tmp_path / "oracle")
    main = path.read_bytes()
    path.write_bytes(main[: len(main) // 2 + 100])
    rows, joined, pair = ours(path)
    assert joined == pair
    it = iter(original)
    assert all(row in it for row in rows)  # none invented, in order
    f = open_db3(pair, len(path.read_bytes()))
    assert len(list(f.messages())) == len(rows) > 200  # the WAL's rows, past the cut
    assert f.damage.cut is not None and f.damage.losses
    assert 0 < f.damage.lost_messages <= len(original) - len(rows)
