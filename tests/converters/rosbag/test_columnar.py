"""The ROS1 Parquet fast path (`ros1/columnar.py`, `ros1/datas.py`, `run_columns.py` with
ROS1's layout): a topic decoded a run at once gives the very table the per-message path
(`nanorec.outputs.arrow.iter_batches`) gives, on generated and real bags, messages changing size,
types that force the fallback, a topic of two connections, and broken payloads."""

from __future__ import annotations

import math
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import nanorec
from nanorec.converters.ros.ros1 import columnar
from nanorec.converters.ros.ros1.datas import locate
from nanorec.converters.ros.ros1.generate import generate
from nanorec.errors import NanorecError
from nanorec.outputs import arrow
from tests.arrow_same import same_tables
from tests.conftest import REALDATA
from tests.converters.rosbag import bags
from tests.converters.rosbag.bags import write_bag

pa = pytest.importorskip("pyarrow")

MIXED = "pkg/Mixed"
MIXED_TEXT = "\n".join(
    [
        "Header header",
        "bool flag",
        "byte small",
        "char letter",
        "uint64 big",
        "float32 ratio",
        "duration wait",
        "string name",
        "float64[3] triple",
        "uint8[4] quad",
        "byte[] signed",
        "int16[] shorts",
        "float64[] values",
        "uint8[] blob",
        "=" * 80,
        "MSG: std_msgs/Header",
        "uint32 seq",
        "time stamp",
        "string frame_id",
    ]
)
LISTY = "pkg/Listy"
LISTY_TEXT = "string[] names\nfloat64 x"
TYPES = {MIXED: MIXED_TEXT, LISTY: LISTY_TEXT}


def mixed(i: int) -> dict[str, Any]:
    """A Mixed message whose strings and arrays change length with `i`."""
    values = np.arange(i % 5, dtype="f8") * 0.5
    if i % 7 == 3 and len(values):
        values[0] = math.nan
    return {
        "header": {"seq": i, "stamp": {"secs": 1000 + i, "nsecs": i}, "frame_id": "f" * (i % 4)},
        "flag": i % 3 == 0,
        "small": -(i % 100),
        "letter": 65 + i % 26,
        "big": 2**62 + i,
        "ratio": i / 3,
        "wait": {"secs": -i, "nsecs": i},
        "name": "é" * (i % 3),
        "triple": np.array([i, -i, 0.25]),
        "quad": np.array([i % 256, 1, 2, 3], "u1"),
        "signed": np.arange(i % 4, dtype="i1") - 2,
        "shorts": np.arange(i % 6, dtype="i2") - 3,
        "values": values,
        "blob": np.arange(i % 9, dtype="u1"),
    }


def write(path: Path, entries: list[tuple[int, bytes]], conns: dict[int, tuple[str, str]]) -> Path:
    return write_bag(path, entries, conns, TYPES)


def payload(type_name: str, value: dict[str, Any]) -> bytes:
    return bags.payload(TYPES, type_name, value)


def entries(count: int) -> list[tuple[int, bytes]]:
    out = []
    for i in range(count):
        out.append((0, payload(MIXED, mixed(i))))
        if i % 4 == 0:
            out.append((1, payload(LISTY, {"names": ["a"] * (i % 3), "x": i * 0.1})))
    return out


CONNS = {0: ("/mixed", MIXED), 1: ("/listy", LISTY)}


def tables(rec: Any, kind: str) -> tuple[Any, Any]:
    slow = pa.Table.from_batches(list(arrow.iter_batches(rec, kind)))
    return slow, arrow.table(rec, kind)


def assert_same_tables(path: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        with nanorec.open(path) as rec:
            for kind in rec.table_kinds():
                slow, quick = tables(rec, kind)
                assert same_tables(slow, quick), kind


def test_messages_changing_size_give_the_per_message_table(tmp_path: Path) -> None:
    bag = write(tmp_path / "mixed.bag", entries(120), CONNS)
    with nanorec.open(bag) as rec:
        assert columnar._plan(rec, 0) is not None  # the fast path
        assert columnar._plan(rec, 1) is None  # string[]: message by message
        for kind in ("/mixed", "/listy"):
            slow, quick = tables(rec, kind)
            assert same_tables(slow, quick), kind
        quick = arrow.table(rec, "/mixed")
    assert quick.schema.field("blob").type == pa.binary()  # uint8[]
    assert quick.schema.field("signed").type == pa.list_(pa.int8())  # ROS1 byte is int8
    assert quick.schema.field("values").type == pa.list_(pa.float64())
    assert quick.schema.field("triple").type == pa.list_(pa.float64())  # fixed: lists too
    assert quick.column("wait.secs").to_pylist()[:3] == [0, -1, -2]
    assert quick.column("header.stamp.nsecs").to_pylist()[:3] == [0, 1, 2]


def test_a_topic_of_two_connections_and_the_whole_export(tmp_path: Path) -> None:
    """Two connections of one topic, of different types: each run of the topic holding
    both goes message by message; the export holds every table as before."""
    conns = {**CONNS, 2: ("/mixed", LISTY)}
    mixed_entries = entries(40)
    mixed_entries.insert(7, (2, payload(LISTY, {"names": ["z"], "x": 1.5})))
    bag = write(tmp_path / "two.bag", mixed_entries, conns)
    assert_same_tables(bag)
    with nanorec.open(bag) as rec:
        arrow.export_parquet(rec, tmp_path / "fast")
        rec.table_columns = None  # type: ignore[assignment, method-assign]
        arrow.export_parquet(rec, tmp_path / "slow")
    pq = pytest.importorskip("pyarrow.parquet")
    for name in ("mixed.parquet", "listy.parquet"):
        assert same_tables(
            pq.read_table(tmp_path / "fast" / name), pq.read_table(tmp_path / "slow" / name)
        )


def test_declined_and_broken_payloads(tmp_path: Path) -> None:
    """A string that is not UTF-8 goes message by message (the decoder gives bytes); a cut
    payload fails as the per-message path fails."""
    latin = bytearray(payload(MIXED, dict(mixed(1), name="ab")))
    latin[latin.index(b"ab")] = 0xE9
    found = entries(20)
    found[4] = (0, bytes(latin))
    assert_same_tables(write(tmp_path / "latin.bag", found, CONNS))
    found = entries(20)
    found[5] = (0, found[5][1][:-3])
    with nanorec.open(write(tmp_path / "cut.bag", found, CONNS)) as rec:
        with pytest.raises(NanorecError) as slow:
            list(arrow.iter_batches(rec, "/mixed"))
        with pytest.raises(NanorecError) as quick:
            arrow.table(rec, "/mixed")
    assert type(quick.value) is type(slow.value) and str(quick.value) == str(slow.value)


def test_locate_finds_every_payload(tmp_path: Path) -> None:
    """The numpy locator agrees with msgpack on every message it accepts; a connection's
    first message (its header kept beside) is not accepted and is decoded instead."""
    import msgpack

    with nanorec.open(write(tmp_path / "bag.bag", entries(30), CONNS)) as rec:
        buffer, starts = rec.reader.raw_run(0, len(rec))
        ends = starts + rec.reader.index.length[: len(rec)].astype(np.int64)
        data, size, ok = locate(buffer, starts, ends)
        assert ok.sum() >= len(rec) - 2
        for k in range(len(rec)):
            message = msgpack.unpackb(buffer[starts[k] : ends[k]])
            inner = next(v for v in message.values() if isinstance(v, dict))
            if ok[k]:
                assert buffer[data[k] : data[k] + size[k]] == inner["data"]


def test_generated_bags_take_the_fast_path(tmp_path: Path) -> None:
    bag = generate(tmp_path / "robot.bag", seconds=3, image=32)
    assert_same_tables(bag)
    with nanorec.open(bag) as rec:
        fast = {
            kind
            for kind in rec.table_kinds()
            if all(columnar._plan(rec, c) for c in columnar._ids(rec, kind).tolist())
        }
    assert {"/imu", "/odom", "/camera/image", "/scan", "/chatter"} <= fast


def _real_bags() -> list[Path]:
    folder = REALDATA / "rosbag"
    return sorted(folder.glob("*.bag")) if folder.is_dir() else []


@pytest.mark.realdata
@pytest.mark.parametrize("path", _real_bags(), ids=lambda p: p.name)
def test_real_bags_give_the_per_message_tables(path: Path) -> None:
    assert_same_tables(path)
