"""ROS 2 tables in Arrow form: a tf topic as one row per transform (`run_items`) decoded a
run at once from CDR (alignment counted from each message's start, not the element's),
numeric sequences as Arrow lists; equal to the per-message path and to `rosbags`."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import nanorec
from nanorec.converters.ros.ros2 import columnar
from nanorec.converters.ros.ros2.bundle import bundled
from nanorec.converters.ros.ros2.cdr_pack import Packer
from nanorec.converters.ros.ros2.storage import Definition, Topic
from nanorec.converters.ros.ros2.writer import NewBag, write_bag
from nanorec.errors import NanorecError
from nanorec.outputs import arrow
from tests.arrow_same import same_tables

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
typesys = pytest.importorskip("rosbags.typesys")

TF = "tf2_msgs/msg/TFMessage"
SCAN = "sensor_msgs/msg/LaserScan"
DEFINITIONS = {name: bundled("humble", name) for name in (TF, SCAN)}


def transform(i: int, k: int) -> dict[str, Any]:
    return {
        "header": {"stamp": {"sec": i, "nanosec": k}, "frame_id": "odom"[: 1 + (i + k) % 4]},
        "child_frame_id": "base" * (k % 3),  # 0 to 8 bytes: elements of changing alignment
        "transform": {
            "translation": {"x": i * 1.5, "y": -k, "z": 0.0},
            "rotation": {"x": 0.0, "y": 0.0, "z": math.sin(i + k), "w": math.cos(i + k)},
        },
    }


def scan(i: int) -> dict[str, Any]:
    ranges = np.arange(i % 7, dtype=np.float32)
    if i % 4 == 1 and len(ranges):
        ranges[0] = math.inf
    return {
        "header": {"stamp": {"sec": i, "nanosec": 0}, "frame_id": "laser"},
        "angle_min": -1.0,
        "angle_max": 1.0,
        "angle_increment": 0.1,
        "time_increment": 0.0,
        "scan_time": 0.1,
        "range_min": 0.1,
        "range_max": 30.0,
        "ranges": ranges,
        "intensities": np.ones(i % 2, np.float32),
    }


def make_bag(folder: Path, count: int, tf_bytes: dict[int, bytes] | None = None) -> Path:
    """/tf of 0 to 3 transforms a message and /scan; `tf_bytes` replaces some /tf payloads."""
    packer = Packer(DEFINITIONS)  # type: ignore[arg-type]
    topics = [Topic(1, "/tf", TF, "cdr"), Topic(2, "/scan", SCAN, "cdr")]
    bag = NewBag(
        topics=topics,
        definitions=[Definition(t, *DEFINITIONS[t]) for t in (TF, SCAN)],  # type: ignore[misc]
        storage="mcap",
        distro="humble",
    )
    messages = []
    for i in range(count):
        data = packer.encode(TF, {"transforms": [transform(i, k) for k in range(i % 4)]})
        messages.append(("/tf", 10**18 + i * 10**7, (tf_bytes or {}).get(i, data)))
        messages.append(("/scan", 10**18 + i * 10**7 + 1, packer.encode(SCAN, scan(i))))
    write_bag(folder, bag, messages, folder=True, overwrite=False)
    return folder


def tables(rec: Any, kind: str) -> tuple[Any, Any]:
    slow = pa.Table.from_batches(list(arrow.iter_batches(rec, kind)))
    return slow, arrow.table(rec, kind)


def theirs(bag: Path, topic: str) -> list[Any]:
    from rosbags.rosbag2 import Reader

    store = typesys.get_typestore(typesys.Stores.ROS2_HUMBLE)
    with Reader(bag) as reader:
        wanted = [c for c in reader.connections if c.topic == topic]
        return [store.deserialize_cdr(raw, c.msgtype) for c, _, raw in reader.messages(wanted)]


def test_tf_is_a_row_per_transform_equal_to_rosbags(tmp_path: Path) -> None:
    bag = make_bag(tmp_path / "bag", 50)
    with nanorec.open(bag) as rec:
        assert columnar.items_field(rec, "/tf") == "transforms"
        assert columnar._plan(rec, "/tf", "transforms") is not None
        slow, quick = tables(rec, "/tf")
        assert same_tables(slow, quick)
        arrow.export_parquet(rec, tmp_path / "out")
    table = pq.read_table(tmp_path / "out" / "tf.parquet")
    assert same_tables(table, quick)
    wanted = [(k, t) for msg in theirs(bag, "/tf") for k, t in enumerate(msg.transforms)]
    assert table.num_rows == len(wanted) == sum(i % 4 for i in range(50))
    for row, (k, t) in zip(table.to_pylist(), wanted, strict=True):
        assert row["item"] == k
        assert row["child_frame_id"] == t.child_frame_id
        assert row["header.frame_id"] == t.header.frame_id
        assert (row["header.stamp.sec"], row["header.stamp.nanosec"]) == (
            t.header.stamp.sec,
            t.header.stamp.nanosec,
        )
        assert row["transform.translation.x"] == t.transform.translation.x
        assert row["transform.rotation.w"] == t.transform.rotation.w


def test_scan_sequences_are_float_lists_equal_to_rosbags(tmp_path: Path) -> None:
    bag = make_bag(tmp_path / "bag", 30)
    with nanorec.open(bag) as rec:
        slow, quick = tables(rec, "/scan")
    assert same_tables(slow, quick)
    assert quick.schema.field("ranges").type == pa.list_(pa.float32())
    scans = theirs(bag, "/scan")
    assert quick.column("ranges").to_pylist() == [m.ranges.tolist() for m in scans]  # inf kept
    assert quick.column("intensities").to_pylist() == [m.intensities.tolist() for m in scans]


def test_a_short_tf_payload_fails_as_the_per_message_path_does(tmp_path: Path) -> None:
    packer = Packer(DEFINITIONS)  # type: ignore[arg-type]
    data = packer.encode(TF, {"transforms": [transform(3, k) for k in range(3)]})
    with nanorec.open(make_bag(tmp_path / "bag", 12, {5: data[:-20]})) as rec:
        with pytest.raises(NanorecError) as slow:
            list(arrow.iter_batches(rec, "/tf"))
        with pytest.raises(NanorecError) as quick:
            arrow.table(rec, "/tf")
    assert type(quick.value) is type(slow.value) and str(quick.value) == str(slow.value)
