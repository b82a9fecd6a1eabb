"""The Parquet export of every format: the values are the decoded messages (ROS `uint8[]`
payloads as Arrow binary, equal to what `rosbags` decodes; other numeric arrays as Arrow
lists; every other column the `rows` values, maps and lists as JSON text), row groups
bounded in bytes, empty selections."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import nanorec
from nanorec import registry
from nanorec.cli import _register, app
from nanorec.outputs import arrow
from nanorec.outputs.tables import dumps
from nanorec.selection import Selection
from tests.arrow_same import same_values
from tests.conftest import REALDATA, SAMPLES, make_runner

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
typesys = pytest.importorskip("rosbags.typesys")


@pytest.fixture(scope="module")
def ros2_bag(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from nanorec.converters.ros.ros2.generate import generate

    folder = tmp_path_factory.mktemp("ros2") / "images"
    generate(folder, seconds=3, storage="sqlite3", image=64)
    return folder


@pytest.fixture(scope="module")
def ros1_bag(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from nanorec.converters.ros.ros1.generate import generate

    path = tmp_path_factory.mktemp("ros1") / "images.bag"
    generate(path, seconds=3, image=64)
    return path


def expected(value: Any) -> Any:
    """What a Parquet cell holds for a `rows` value: byte strings and `uint8` arrays as
    bytes, other 1-D numeric arrays as lists (NaN kept), other arrays, lists and maps as
    `dumps` text, numpy scalars as Python ones."""
    if isinstance(value, np.ndarray) and value.dtype == np.uint8 and value.ndim == 1:
        return value.tobytes()
    if isinstance(value, np.ndarray) and value.ndim == 1 and value.dtype.kind in "biuf":
        return value.tolist()
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    if isinstance(value, np.ndarray | list | tuple | dict):
        return dumps(value.tolist() if isinstance(value, np.ndarray) else value)
    if isinstance(value, np.generic):
        return value.item()
    return value


def same(a: Any, b: Any) -> bool:
    return same_values(a, b)


def assert_parquet_is_rows(rec: Any, folder: Path, selection: Selection | None = None) -> int:
    """Every table file holds `rows` of its kind, cell for cell; returns the rows seen."""
    seen = 0
    for kind in rec.table_kinds():
        rows = list(rec.rows(kind, selection))
        path = folder / arrow._file(kind)
        if not rows:
            assert not path.exists(), kind
            continue
        table = pq.read_table(path)
        assert table.num_rows == len(rows), kind
        assert table.column("recording").to_pylist() == [arrow.recording_name(rec)] * len(rows)
        for number, (row, cells) in enumerate(zip(rows, table.to_pylist(), strict=True)):
            for key, value in row.items():
                assert same(cells[key], expected(value)), (kind, number, key)
        seen += len(rows)
    return seen


def test_ros2_image_data_is_binary_and_equals_rosbags(ros2_bag: Path, tmp_path: Path) -> None:
    from rosbags.rosbag2 import Reader

    with nanorec.open(ros2_bag) as rec:
        arrow.export_parquet(rec, tmp_path / "out")
        assert assert_parquet_is_rows(rec, tmp_path / "out") == len(rec)
    table = pq.read_table(tmp_path / "out" / "camera.parquet")
    assert table.schema.field("data").type == pa.binary()
    assert table.schema.field("encoding").type == pa.string()
    store = typesys.get_typestore(typesys.Stores.ROS2_HUMBLE)
    with Reader(ros2_bag) as reader:
        camera = [c for c in reader.connections if c.topic == "/camera"]
        images = [store.deserialize_cdr(raw, c.msgtype) for c, _, raw in reader.messages(camera)]
    assert len(images) == table.num_rows > 0
    assert table.column("data").to_pylist() == [bytes(image.data) for image in images]
    assert table.column("height").to_pylist() == [image.height for image in images]


def test_ros1_byte_arrays_are_binary_and_equal_rosbags(ros1_bag: Path, tmp_path: Path) -> None:
    from rosbags.rosbag1 import Reader

    with nanorec.open(ros1_bag) as rec:
        arrow.export_parquet(rec, tmp_path / "out")
        assert assert_parquet_is_rows(rec, tmp_path / "out") == len(rec)
    store = typesys.get_typestore(typesys.Stores.ROS1_NOETIC)
    for topic, name in (("/camera/image", "camera_image"), ("/points", "points")):
        table = pq.read_table(tmp_path / "out" / f"{name}.parquet")
        assert table.schema.field("data").type == pa.binary()
        with Reader(ros1_bag) as reader:
            wanted = [c for c in reader.connections if c.topic == topic]
            theirs = [
                bytes(store.deserialize_ros1(raw, c.msgtype).data)
                for c, _, raw in reader.messages(wanted)
            ]
        assert table.column("data").to_pylist() == theirs and theirs, topic
    scan = pq.read_table(tmp_path / "out" / "scan.parquet")
    assert scan.schema.field("ranges").type == pa.list_(pa.float32())  # other arrays: lists
    with Reader(ros1_bag) as reader:
        wanted = [c for c in reader.connections if c.topic == "/scan"]
        theirs = [
            store.deserialize_ros1(raw, c.msgtype).ranges.tolist()
            for c, _, raw in reader.messages(wanted)
        ]
    assert scan.column("ranges").to_pylist() == theirs and len(theirs[0]) == 360


SAMPLE_FILES = [
    SAMPLES / "carla-0.9.16-town03.log",
    SAMPLES / "pbstream-small.pbstream",
    SAMPLES / "rosbag-robot.bag",
    SAMPLES / "ros2-robot.mcap",
]


@pytest.mark.parametrize("path", SAMPLE_FILES, ids=lambda p: p.name)
def test_every_format_holds_its_rows(path: Path, tmp_path: Path) -> None:
    with nanorec.open(path) as rec:
        lines = arrow.export_parquet(rec, tmp_path / "out")
        assert assert_parquet_is_rows(rec, tmp_path / "out") > 0
    assert all(line.endswith(" rows") for line in lines)


def _real_files() -> list[Path]:
    """One real file of each kind of ../shared/realdata (none when it is absent)."""
    found = [
        *sorted(p for p in (REALDATA / "ros2").glob("*") if registry.for_directory(p)),
        *sorted((REALDATA / "rosbag").glob("*.bag")),
        *sorted((REALDATA / "pbstream").glob("*.pbstream")),
        *sorted((REALDATA / "carla").glob("*.log"))[:1],
    ]
    return found if REALDATA.is_dir() else []


@pytest.mark.parametrize("path", _real_files(), ids=lambda p: p.name)
def test_every_real_file_holds_its_rows(path: Path, tmp_path: Path) -> None:
    """Real recordings (undecodable ROS 2 types come out as bytes: binary too)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # definitions a bag lacks
        with nanorec.open(path) as rec:
            arrow.export_parquet(rec, tmp_path / "out")
            assert_parquet_is_rows(rec, tmp_path / "out")


def test_a_plain_archive_and_a_cut(tmp_path: Path) -> None:
    from tests.converters.fake_plugin import sample

    with nanorec.open(sample(tmp_path / "x.fakelog", 30)) as rec:
        cut = Selection.make(messages="5:12")
        arrow.export_parquet(rec, tmp_path / "out", selection=cut)
        assert assert_parquet_is_rows(rec, tmp_path / "out", cut) == 7


def test_an_empty_selection(ros2_bag: Path, tmp_path: Path) -> None:
    """Nothing selected: no table file, one line saying so; the CLI refuses it as every
    verb does (one `nanorec:` line, exit 2)."""
    with nanorec.open(ros2_bag) as rec:
        nothing = Selection.make(kinds=["/no/such/topic"])
        assert arrow.export_parquet(rec, tmp_path / "out", selection=nothing) == [
            f"{tmp_path / 'out'}: no rows"
        ]
    assert not list((tmp_path / "out").iterdir())
    _register()
    result = make_runner().invoke(
        app,
        ["export", str(ros2_bag), "-F", "parquet", "-o", str(tmp_path / "cli"), "--start", "99"],
    )
    assert result.exit_code == 2
    assert result.stderr.startswith("nanorec: ") and len(result.stderr.splitlines()) == 1
    assert not (tmp_path / "cli").exists()


def test_row_groups_end_at_batch_bytes(
    ros2_bag: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A table of images is written in row groups of about `BATCH_BYTES`, not held whole
    until `BATCH_ROWS` rows (a 200 MB bag of images would be one 200 MB row group)."""
    monkeypatch.setattr(arrow, "BATCH_BYTES", 20_000)  # ~6 images of 64x48
    with nanorec.open(ros2_bag) as rec:
        arrow.export_parquet(rec, tmp_path / "out")
        images = len(list(rec.rows("/camera")))
    meta = pq.ParquetFile(tmp_path / "out" / "camera.parquet").metadata
    groups = [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]
    assert sum(groups) == images and len(groups) >= images // 7 and max(groups) <= 7
    assert pq.ParquetFile(tmp_path / "out" / "odom.parquet").metadata.num_row_groups == 1
