"""`.db3` (rosbag2 sqlite3 storage) read by our own SQLite page reader, checked against
Python's sqlite3 module; split into messages + skeleton and joined back byte for byte, also
for cut and damaged files."""

from __future__ import annotations

import hashlib
import mmap
import random
import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from nanorec.converters.ros.ros2.db3 import Db3File, open_db3
from nanorec.converters.ros.ros2.db3_skeleton import _unleb, join_db3, leb128
from nanorec.converters.ros.ros2.storage import StoredMessage
from nanorec.errors import FormatError, NanorecError
from tests.conftest import REALDATA

REAL = sorted((REALDATA / "ros2").glob("*/*.db3")) if (REALDATA / "ros2").is_dir() else []

# rosbag2_storage_sqlite3/src/rosbag2_storage_sqlite3/sqlite_storage.cpp, SqliteStorage::initialize
V4 = [
    "CREATE TABLE schema(schema_version INTEGER PRIMARY KEY,ros_distro TEXT NOT NULL);",
    "CREATE TABLE metadata(id INTEGER PRIMARY KEY,metadata_version INTEGER NOT NULL,"
    "metadata TEXT NOT NULL);",
    "CREATE TABLE topics(id INTEGER PRIMARY KEY,name TEXT NOT NULL,type TEXT NOT NULL,"
    "serialization_format TEXT NOT NULL,offered_qos_profiles TEXT NOT NULL,"
    "type_description_hash TEXT NOT NULL);",
    "CREATE TABLE message_definitions(id INTEGER PRIMARY KEY,topic_type TEXT NOT NULL,"
    "encoding TEXT NOT NULL,encoded_message_definition TEXT NOT NULL,"
    "type_description_hash TEXT NOT NULL);",
    "CREATE TABLE messages(id INTEGER PRIMARY KEY,topic_id INTEGER NOT NULL,"
    "timestamp INTEGER NOT NULL, data BLOB NOT NULL);",
    "CREATE INDEX timestamp_idx ON messages (timestamp ASC);",
]


def make_db3(
    path: Path, sizes: list[int], page_size: int = 4096, delete: str | None = None, seed: int = 0
) -> Path:
    """A schema-4 rosbag2 file as rosbag2 writes it, with messages of the given sizes."""
    rng = random.Random(seed)
    con = sqlite3.connect(path)
    con.execute(f"PRAGMA page_size={page_size}")
    for stmt in V4:
        con.execute(stmt)
    con.execute("INSERT INTO schema VALUES (4, 'jazzy')")
    for k in range(3):
        con.execute(
            "INSERT INTO topics(name, type, serialization_format, offered_qos_profiles, "
            "type_description_hash) VALUES (?, ?, 'cdr', ?, ?)",
            (f"/t{k}", f"pkg/msg/T{k}", "- history: 3\n" * 40 * k, f"RIHS01_{k:064x}"),
        )
        con.execute(
            "INSERT INTO message_definitions(topic_type, encoding, encoded_message_definition, "
            "type_description_hash) VALUES (?, 'ros2msg', ?, '')",
            (f"pkg/msg/T{k}", "int32 x\n" * 300 * k),
        )
    con.executemany(
        "INSERT INTO messages(topic_id, timestamp, data) VALUES (?, ?, ?)",
        [
            (1 + i % 3, 1_700_000_000_000_000_000 + i * 1000, rng.randbytes(n))
            for i, n in enumerate(sizes)
        ],
    )
    con.execute("INSERT INTO metadata(metadata_version, metadata) VALUES (9, 'old')")
    con.execute(
        "INSERT INTO metadata(metadata_version, metadata) VALUES (9, ?)",
        ("rosbag2_bagfile_information:\n" * 200,),
    )
    if delete:
        con.execute(f"DELETE FROM messages WHERE {delete}")
    con.commit()
    con.close()
    return path


def sqlite_rows(path: Path) -> list[tuple[int, int, bytes]]:
    con = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
    try:
        return con.execute("SELECT topic_id, timestamp, data FROM messages ORDER BY id").fetchall()
    finally:
        con.close()


def split(buf: bytes | mmap.mmap) -> tuple[list[StoredMessage], bytes, Db3File]:
    f = open_db3(buf)
    msgs = list(f.messages())
    return msgs, f.skeleton(), f


def rejoin(skeleton: bytes, msgs: list[StoredMessage]) -> bytes:
    return b"".join(join_db3(skeleton, (m.data for m in msgs)))


def check_against_sqlite(path: Path, tmp_path: Path) -> None:
    copy = tmp_path / path.name
    shutil.copyfile(path, copy)
    raw = path.read_bytes()
    msgs, skeleton, f = split(raw)
    assert [(m.topic, m.timestamp, bytes(m.data)) for m in msgs] == sqlite_rows(copy)
    assert hashlib.sha256(rejoin(skeleton, msgs)).digest() == hashlib.sha256(raw).digest()
    con = sqlite3.connect(f"file:{copy}?mode=ro&immutable=1", uri=True)
    tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    cols = [r[1] for r in con.execute("PRAGMA table_info(topics)")]
    topics = con.execute(f"SELECT {', '.join(cols)} FROM topics ORDER BY id").fetchall()
    assert [(t.key, t.name, t.type, t.serialization_format) for t in f.topics] == [
        r[:4] for r in topics
    ]
    if "offered_qos_profiles" in cols:
        assert [t.offered_qos_profiles for t in f.topics] == [r[4] for r in topics]
    if "type_description_hash" in cols:
        assert [t.type_description_hash for t in f.topics] == [r[5] for r in topics]
    if "message_definitions" in tables:
        defs = con.execute(
            "SELECT topic_type, encoding, encoded_message_definition "
            "FROM message_definitions ORDER BY id"
        ).fetchall()
        assert [(d.type, d.encoding, d.text) for d in f.definitions] == defs
    else:
        assert f.definitions == []
    if "metadata" in tables:
        last = con.execute("SELECT metadata FROM metadata ORDER BY id DESC LIMIT 1").fetchone()
        assert f.stored_metadata == (last[0] if last else None)
    else:
        assert f.stored_metadata is None
    if "schema" in tables:
        version, distro = con.execute("SELECT schema_version, ros_distro FROM schema").fetchone()
        assert (f.schema_version, f.ros_distro) == (version, distro)
    else:
        assert f.ros_distro is None
        assert f.schema_version == (2 if "offered_qos_profiles" in cols else 1)
    assert f.page_size == con.execute("PRAGMA page_size").fetchone()[0]
    assert f.damage.cut is None and not f.damage.damaged
    con.close()


@pytest.mark.parametrize("path", REAL, ids=[p.parent.name + "/" + p.name for p in REAL])
def test_real_file_equals_sqlite(path: Path, tmp_path: Path) -> None:
    check_against_sqlite(path, tmp_path)


def test_real_files_present() -> None:
    if not REAL:
        pytest.skip("../shared/realdata/ros2 is not present")
    assert len(REAL) >= 20


SYNTHETIC = {
    "overflow-1k": dict(sizes=[10, 3000, 0, 900, 20000, 1] * 20, page_size=1024),
    "overflow-64k": dict(sizes=[70000, 5, 300000, 65000, 66000], page_size=65536),
    "many-rows": dict(sizes=[i % 200 for i in range(20000)], page_size=1024),
    "deleted-range": dict(
        sizes=[500 + i % 3000 for i in range(400)], delete="id BETWEEN 50 AND 250"
    ),
    "deleted-odd": dict(sizes=[i % 5000 for i in range(300)], page_size=1024, delete="id % 2 = 1"),
    "empty": dict(sizes=[]),
    "all-deleted": dict(sizes=[2000] * 50, delete="1"),
}


@pytest.mark.parametrize("case", SYNTHETIC)
def test_synthetic_equals_sqlite(case: str, tmp_path: Path) -> None:
    path = make_db3(tmp_path / "x.db3", **SYNTHETIC[case])  # type: ignore[arg-type]
    (tmp_path / "copy").mkdir()
    check_against_sqlite(path, tmp_path / "copy")


def test_mmap_input(tmp_path: Path) -> None:
    path = make_db3(tmp_path / "x.db3", [100, 5000, 70000], page_size=1024)
    with path.open("rb") as fh:
        mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    msgs, skeleton, _ = split(mm)  # the memoryviews keep the map open until dropped
    assert [bytes(m.data) for m in msgs] == [r[2] for r in sqlite_rows(path)]
    assert rejoin(skeleton, msgs) == path.read_bytes()


def check_damaged(
    data: bytes, real: set[tuple[int, int, bytes]] | None, exact: bool = True
) -> None:
    """No exception but NanorecError; every message a real row (`exact` False: a flipped
    byte may be inside a blob, only its topic and time must be real; `real` None: bytes
    changed anywhere, nothing to compare); the join gives `data` back."""
    try:
        msgs, skeleton, _ = split(data)
    except NanorecError:
        return
    if real is None:
        pass
    elif exact:
        assert {(m.topic, m.timestamp, bytes(m.data)) for m in msgs} <= real
    else:
        assert {(m.topic, m.timestamp) for m in msgs} <= {r[:2] for r in real}
    assert rejoin(skeleton, msgs) == data


def cut_offsets(size: int, page: int) -> list[int]:
    return sorted({*range(0, size, page), *range(1, size, page * 3 + 7), 99, 100, 101, size - 1})


@pytest.fixture(scope="module")
def crash_files(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    tmp = tmp_path_factory.mktemp("crash")
    files = [
        make_db3(tmp / "a.db3", [i * 37 % 3000 for i in range(120)], page_size=1024),
        make_db3(
            tmp / "b.db3",
            [i * 37 % 3000 for i in range(200)],
            page_size=1024,
            delete="id BETWEEN 20 AND 90",
        ),
    ]
    real = [p for p in REAL if p.name == "wbag_0.db3"] + [
        p for p in REAL if p.name == "topics_and_services.db3"
    ]
    return files + real[:2]


@pytest.mark.slow  # 7 s
def test_cut_at_every_page(crash_files: list[Path]) -> None:
    for path in crash_files:
        raw = path.read_bytes()
        real = set(sqlite_rows(path))
        page = open_db3(raw).page_size
        found = 0
        for cut in cut_offsets(len(raw), page):
            check_damaged(raw[:cut], real)
            if cut >= 100:
                f = open_db3(raw[:cut])
                found += sum(1 for _ in f.messages())
                if cut % page:
                    assert f.damage.cut is not None and f.damage.cut.offset == cut // page * page
        assert found > 0


def test_cut_keeps_rows_of_full_pages(tmp_path: Path) -> None:
    path = make_db3(tmp_path / "x.db3", [300] * 400, page_size=1024)
    raw = path.read_bytes()
    f = open_db3(raw[: len(raw) * 3 // 4 + 17])
    msgs = list(f.messages())
    assert f.damage.cut is not None
    assert len(msgs) > 100


@pytest.mark.slow
def test_flipped_header_bytes(crash_files: list[Path]) -> None:
    for path in crash_files:
        raw = path.read_bytes()
        real = set(sqlite_rows(path))
        page = open_db3(raw).page_size
        for start in range(0, len(raw), page * 13):
            h = 100 if start == 0 else 0
            for k in range(12):
                for value in (0x00, raw[start + h + k] ^ 0x01):
                    bad = bytearray(raw)
                    bad[start + h + k] = value
                    check_damaged(bytes(bad), real, exact=False)


@pytest.mark.slow  # 6 s: 150 damaged copies of each file
def test_random_damage(crash_files: list[Path]) -> None:
    rng = random.Random(7)
    for path in crash_files:
        raw = path.read_bytes()
        for _ in range(150):
            bad = bytearray(raw)
            for _ in range(rng.randint(1, 8)):
                bad[rng.randrange(len(bad))] = rng.randrange(256)
            check_damaged(bytes(bad[: rng.choice([len(bad), rng.randrange(len(bad))])]), None)


def test_not_sqlite() -> None:
    for data in (b"", b"SQLite format 3\x00", b"x" * 4096, b"SQLite format 3\x00" + b"\xff" * 200):
        with pytest.raises(NanorecError):
            open_db3(data)


def test_join_rejects_wrong_datas(tmp_path: Path) -> None:
    path = make_db3(tmp_path / "x.db3", [10, 3000, 0, 40], page_size=1024)
    msgs, skeleton, _ = split(path.read_bytes())
    datas = [bytes(m.data) for m in msgs]
    with pytest.raises(FormatError):
        b"".join(join_db3(skeleton, datas[:-1]))
    with pytest.raises(FormatError):
        b"".join(join_db3(skeleton, [*datas, b""]))
    with pytest.raises(FormatError):
        b"".join(join_db3(skeleton, [datas[0] + b"x", *datas[1:]]))
    with pytest.raises(NanorecError):
        b"".join(join_db3(skeleton[:20], datas))
    with pytest.raises(NanorecError):
        b"".join(join_db3(b"junk", datas))


def test_skeleton_table_codec() -> None:
    values = np.array([0, 1, 127, 128, 300, 2**32, 2**63 - 1], np.uint64)
    assert np.array_equal(_unleb(memoryview(leb128(values)), len(values)), values)
    with pytest.raises(FormatError):
        _unleb(memoryview(b"\x80"), 1)
    with pytest.raises(FormatError):
        _unleb(memoryview(b"\xff" * 9 + b"\x01"), 1)  # values are at most 63 bits


def test_skeleton_is_small(tmp_path: Path) -> None:
    path = make_db3(tmp_path / "x.db3", [1024] * 3000)
    _, skeleton, _ = split(path.read_bytes())
    assert len(skeleton) < path.stat().st_size - 3000 * 1024 + 3000 * 6
