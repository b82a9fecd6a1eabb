"""ROS1 tables in Arrow form: numeric arrays as Arrow lists (a LaserScan's `ranges`), and a
tf topic as one row per transform (`run_items`), decoded a run at once, equal to the
per-message path and to `rosbags`' own decoding, through Parquet and back."""

from __future__ import annotations

import math
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import nanorec
from nanorec.converters.ros.ros1 import columnar
from nanorec.converters.ros.ros1.stock import STOCK
from nanorec.errors import NanorecError
from nanorec.outputs import arrow
from tests.arrow_same import same_tables, same_values
from tests.conftest import REALDATA
from tests.converters.rosbag import bags
from tests.converters.rosbag.bags import write_bag

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
typesys = pytest.importorskip("rosbags.typesys")

SEP = "=" * 80
TF_TEXT = "\n".join(
    [
        "geometry_msgs/TransformStamped[] transforms",
        SEP,
        "MSG: geometry_msgs/TransformStamped",
        "Header header",
        "string child_frame_id",
        "Transform transform",
        SEP,
        "MSG: std_msgs/Header",
        "uint32 seq",
        "time stamp",
        "string frame_id",
        SEP,
        "MSG: geometry_msgs/Transform",
        "Vector3 translation",
        "Quaternion rotation",
        SEP,
        "MSG: geometry_msgs/Vector3",
        "float64 x",
        "float64 y",
        "float64 z",
        SEP,
        "MSG: geometry_msgs/Quaternion",
        "float64 x",
        "float64 y",
        "float64 z",
        "float64 w",
    ]
)
TYPES = {
    "tf2_msgs/TFMessage": TF_TEXT,
    "tf/tfMessage": TF_TEXT,  # the ROS1 name of the same message: a second connection
    "sensor_msgs/LaserScan": STOCK["sensor_msgs/LaserScan"][1],
    "pkg/Scan64": "float64[] ranges\nint16[3] triple",  # `ranges` of another element type
}


def transform(i: int, k: int) -> dict[str, Any]:
    return {
        "header": {"seq": i, "stamp": {"secs": 100 + i, "nsecs": k}, "frame_id": "map"[: k + 1]},
        "child_frame_id": f"link_{k}" + "é" * (i % 2),
        "transform": {
            "translation": {"x": i + 0.5, "y": -k, "z": 0.25},
            "rotation": {"x": 0.0, "y": 0.0, "z": math.sin(i), "w": math.cos(i)},
        },
    }


def tf(i: int, count: int) -> dict[str, Any]:
    return {"transforms": [transform(i, k) for k in range(count)]}


def scan(i: int) -> dict[str, Any]:
    ranges = np.arange(i % 6, dtype=np.float32) * 0.5
    if i % 5 == 2 and len(ranges):
        ranges[0] = math.nan
    return {
        "header": {"seq": i, "stamp": {"secs": i, "nsecs": 0}, "frame_id": "laser"},
        "angle_min": -1.0,
        "angle_max": 1.0,
        "angle_increment": 0.1,
        "time_increment": 0.0,
        "scan_time": 0.1,
        "range_min": 0.1,
        "range_max": 30.0,
        "ranges": ranges,
        "intensities": np.zeros(i % 3, np.float32),
    }


def payload(type_name: str, value: dict[str, Any]) -> bytes:
    return bags.payload(TYPES, type_name, value)


def write(path: Path, entries: list[tuple[int, bytes]], conns: dict[int, tuple[str, str]]) -> Path:
    return write_bag(path, entries, conns, TYPES)


CONNS = {0: ("/tf", "tf2_msgs/TFMessage"), 1: ("/scan", "sensor_msgs/LaserScan")}


def entries(count: int) -> list[tuple[int, bytes]]:
    """tf messages of 0 to 4 transforms, a scan every other message."""
    out = []
    for i in range(count):
        out.append((0, payload("tf2_msgs/TFMessage", tf(i, i % 5))))
        if i % 2:
            out.append((1, payload("sensor_msgs/LaserScan", scan(i))))
    return out


def tables(rec: Any, kind: str) -> tuple[Any, Any]:
    """`kind`'s table by the per-message path and by columns."""
    slow = pa.Table.from_batches(list(arrow.iter_batches(rec, kind)))
    return slow, arrow.table(rec, kind)


def theirs(path: Path, topic: str) -> list[Any]:
    """`rosbags`' decoding of every message of `topic`."""
    from rosbags.rosbag1 import Reader

    store = typesys.get_typestore(typesys.Stores.ROS1_NOETIC)
    with Reader(path) as reader:
        wanted = [c for c in reader.connections if c.topic == topic]
        for c in wanted:  # the bag's own definitions (Noetic's store has no tf types)
            store.register(typesys.get_types_from_msg(c.msgdef.data, c.msgtype))
        return [store.deserialize_ros1(raw, c.msgtype) for c, _, raw in reader.messages(wanted)]


def assert_tf_is_rosbags(path: Path, table: Any, topic: str = "/tf") -> None:
    """One row per transform of `rosbags`' messages, in order, with every field."""
    messages = theirs(path, topic)
    wanted = [(m, k, t) for m, msg in enumerate(messages) for k, t in enumerate(msg.transforms)]
    assert table.num_rows == len(wanted)
    assert table.column("item").to_pylist() == [k for _, k, _ in wanted]
    got = table.to_pylist()
    for row, (_, _, t) in zip(got, wanted, strict=True):
        assert row["child_frame_id"] == t.child_frame_id
        assert row["header.frame_id"] == t.header.frame_id
        assert row["header.seq"] == t.header.seq
        assert row["header.stamp.secs"] == t.header.stamp.sec
        assert row["header.stamp.nsecs"] == t.header.stamp.nanosec
        translation, rotation = t.transform.translation, t.transform.rotation
        assert row["transform.translation.x"] == translation.x
        assert row["transform.translation.y"] == translation.y
        assert row["transform.rotation.z"] == rotation.z
        assert row["transform.rotation.w"] == rotation.w
    numbers = table.column("number").to_pylist()
    assert numbers == sorted(numbers)  # message by message, element by element


def test_tf_is_a_row_per_transform_decoded_at_once(tmp_path: Path) -> None:
    bag = write(tmp_path / "tf.bag", entries(60), CONNS)
    with nanorec.open(bag) as rec:
        assert columnar.items_field(rec, "/tf") == "transforms"
        assert columnar._plan(rec, 0, "transforms") is not None  # the fast path
        slow, quick = tables(rec, "/tf")
        assert same_tables(slow, quick)
        rows = list(rec.rows("/tf"))
        arrow.export_parquet(rec, tmp_path / "out")
    assert len(rows) == sum(i % 5 for i in range(60))  # empty arrays give no row
    assert "transforms" not in quick.column_names
    assert quick.column_names[:6] == ["recording", "number", "time", "time_ns", "time_s", "item"]
    assert_tf_is_rosbags(bag, quick)
    assert same_tables(pq.read_table(tmp_path / "out" / "tf.parquet"), quick)


def test_one_message_and_only_empty_arrays(tmp_path: Path) -> None:
    one = write(tmp_path / "one.bag", [(0, payload("tf2_msgs/TFMessage", tf(3, 2)))], CONNS)
    with nanorec.open(one) as rec:
        slow, quick = tables(rec, "/tf")
    assert same_tables(slow, quick) and quick.num_rows == 2
    assert_tf_is_rosbags(one, quick)
    empty = [(0, payload("tf2_msgs/TFMessage", tf(i, 0))) for i in range(5)]
    empty.append((1, payload("sensor_msgs/LaserScan", scan(0))))
    with nanorec.open(write(tmp_path / "empty.bag", empty, CONNS)) as rec:
        assert list(rec.rows("/tf")) == []
        lines = arrow.export_parquet(rec, tmp_path / "out")
    assert not (tmp_path / "out" / "tf.parquet").exists()
    assert lines == [f"{tmp_path / 'out' / 'scan.parquet'}: 1 rows"]


def test_mixed_definitions_on_one_topic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """/tf of two connections (tf2_msgs and tf's names) and /scan of two element types:
    runs holding both go message by message, with the same rows; float64 runs of `ranges`
    are cast to the float32 lists of the first run (runs of 4 messages)."""
    monkeypatch.setattr(arrow, "BATCH_ROWS", 4)
    conns = {**CONNS, 2: ("/tf", "tf/tfMessage"), 3: ("/scan", "pkg/Scan64")}
    found = entries(30)
    found.insert(9, (2, payload("tf/tfMessage", tf(99, 2))))
    for i in range(4):
        value = {"ranges": np.arange(i, dtype="f8"), "triple": np.arange(3, dtype="i2")}
        found.append((3, payload("pkg/Scan64", value)))
    bag = write(tmp_path / "mixed.bag", found, conns)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        with nanorec.open(bag) as rec:
            assert columnar.items_field(rec, "/tf") == "transforms"
            for kind in ("/tf", "/scan"):
                slow, quick = tables(rec, kind)
                assert same_tables(slow, quick), kind
            arrow.export_parquet(rec, tmp_path / "out")
    assert_tf_is_rosbags(bag, pq.read_table(tmp_path / "out" / "tf.parquet"))
    scans = pq.read_table(tmp_path / "out" / "scan.parquet")
    assert scans.schema.field("ranges").type == pa.list_(pa.float32())
    assert scans.column("ranges").to_pylist()[-1] == [0.0, 1.0, 2.0]


def test_scan_arrays_are_lists_equal_to_rosbags(tmp_path: Path) -> None:
    bag = write(tmp_path / "scan.bag", entries(40), CONNS)
    with nanorec.open(bag) as rec:
        assert columnar._plan(rec, 1) is not None
        slow, quick = tables(rec, "/scan")
        assert same_tables(slow, quick)
        arrow.export_parquet(rec, tmp_path / "out")
    table = pq.read_table(tmp_path / "out" / "scan.parquet")
    assert same_tables(table, quick)
    assert table.schema.field("ranges").type == pa.list_(pa.float32())
    assert table.schema.field("intensities").type == pa.list_(pa.float32())
    scans = theirs(bag, "/scan")
    ranges = table.column("ranges").to_pylist()
    assert len(ranges) == len(scans) == 20
    for got, msg in zip(ranges, scans, strict=True):
        assert same_values(got, msg.ranges.tolist())  # NaN kept as NaN
    assert [len(v) for v in table.column("intensities").to_pylist()] == [
        len(m.intensities) for m in scans
    ]


def test_more_transforms_than_bytes_fails_as_the_decoder_does(tmp_path: Path) -> None:
    """A count of 2**31 transforms in a short payload: the decoder's error in one line from
    both paths, at once (no loop over the claimed count, no allocation for it)."""
    found = entries(10)
    data = bytearray(found[4][1])
    data[:4] = (2**31).to_bytes(4, "little")
    found[4] = (0, bytes(data))
    with nanorec.open(write(tmp_path / "bomb.bag", found, CONNS)) as rec:
        with pytest.raises(NanorecError) as slow:
            list(arrow.iter_batches(rec, "/tf"))
        with pytest.raises(NanorecError) as quick:
            arrow.table(rec, "/tf")
    assert type(quick.value) is type(slow.value) and str(quick.value) == str(slow.value)


def _real_bags() -> list[Path]:
    folder = REALDATA / "rosbag"
    return sorted(folder.glob("*.bag")) if folder.is_dir() else []


@pytest.mark.realdata
@pytest.mark.parametrize("path", _real_bags(), ids=lambda p: p.name)
def test_real_tf_and_arrays_equal_rosbags(path: Path, tmp_path: Path) -> None:
    """Every real tf topic is a row per transform equal to `rosbags`; every numeric array
    column a list."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        with nanorec.open(path) as rec:
            kinds = rec.table_kinds()
            tf_topics = [k for k in kinds if columnar.items_field(rec, k)]
            found = {kind: tables(rec, kind) for kind in tf_topics}
    for kind, (slow, quick) in found.items():
        assert same_tables(slow, quick), kind
        assert_tf_is_rosbags(path, quick, kind)


def test_duckdb_reads_transforms_and_ranges_without_parsing(tmp_path: Path) -> None:
    """What the new forms are for: tf rows selected by frame, ranges as numeric lists."""
    duckdb = pytest.importorskip("duckdb")
    bag = write(tmp_path / "tf.bag", entries(20), CONNS)
    with nanorec.open(bag) as rec:
        arrow.export_parquet(rec, tmp_path / "out")
    tf_file, scan_file = tmp_path / "out" / "tf.parquet", tmp_path / "out" / "scan.parquet"
    rows = duckdb.sql(
        f"""SELECT child_frame_id, "transform.translation.x" FROM '{tf_file}'
        WHERE child_frame_id LIKE 'link_2%' ORDER BY number"""
    ).fetchall()
    assert rows == [("link_2" + "é" * (i % 2), i + 0.5) for i in range(20) if i % 5 > 2]
    lengths = duckdb.sql(f"SELECT len(ranges) FROM '{scan_file}' ORDER BY number").fetchall()
    assert [n for (n,) in lengths] == [i % 6 for i in range(20) if i % 2]
