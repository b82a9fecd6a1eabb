"""What comes out of a pbstream: pose arrays, tables, `nanorec info/cat/plot/export` on the
command line, subsets that are valid streams, ROS maps and MCAP."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from nanorec import registry
from nanorec.cli import _register, app
from nanorec.converters.pbstream.generate import START_TICKS, Plan, generate
from nanorec.converters.pbstream.recording import PbstreamRecording
from nanorec.converters.pbstream.records import UNIX_EPOCH_TICKS
from tests.conftest import SAMPLES, make_runner

SAMPLE = SAMPLES / "pbstream-small.pbstream"
_runner = make_runner()


def _cli(*args: str) -> str:
    _register()
    result = _runner.invoke(app, list(args))
    assert result.exit_code == 0, (args, result.stdout, result.stderr)
    return result.stdout


@pytest.fixture
def rec() -> Iterator[PbstreamRecording]:
    with registry.open(SAMPLE) as opened:
        assert isinstance(opened, PbstreamRecording)
        yield opened


def test_pose_arrays(rec: PbstreamRecording) -> None:
    trajectories = rec.trajectories()
    assert sorted(trajectories) == [0, 1]
    poses = trajectories[1]
    assert poses.source == "pose_graph" and poses.translation.shape == (40, 3)
    assert poses.rotation.shape == (40, 4) and np.allclose(
        np.linalg.norm(poses.rotation, axis=1), 1
    )
    assert poses.index.tolist() == list(range(40))
    assert int(poses.timestamp[0]) == START_TICKS + 250_000_000
    assert poses.time[0] == (START_TICKS + 250_000_000 - UNIX_EPOCH_TICKS) / 1e7
    local = rec.local_poses()[1]
    assert np.allclose(local.translation, poses.translation)  # the generator optimises nothing
    graph = rec.pose_graph()
    assert len(graph.constraints) and set(graph.constraints["tag"].tolist()) == {0, 1}
    assert len(graph.landmarks) == 3


def test_info_json(rec: PbstreamRecording) -> None:
    summary = json.loads(_cli("info", str(SAMPLE), "--json"))
    assert summary["format_version"] == "2" and summary["dimensions"] == "2D"
    assert (
        summary["trajectories"]["0"]["nodes"] == 40 and summary["trajectories"]["1"]["submaps"] == 2
    )
    assert summary["constraints"]["inter"] > 0 and summary["sensor_data"]["imu_data"] == 160
    assert summary["landmarks"] == 3 and summary["sensor_data"]["landmark_data"] == 9
    text = _cli("info", str(SAMPLE))
    assert "format version 2" in text and "inter-submap" in text


def test_cat_trajectory_tum_and_csv() -> None:
    lines = _cli("cat", str(SAMPLE), "--type", "trajectory", "--format", "tum").splitlines()
    assert len(lines) == 80
    first = lines[0].split()
    assert first[0] == "1704067200.0000000" and len(first) == 8
    assert float(first[-1]) == pytest.approx(np.cos((0.25 * 0 + 0 + np.pi / 2) / 2))
    csv = _cli("cat", str(SAMPLE), "--type", "trajectory", "--format", "csv", "--trajectory", "1")
    header, *rows = csv.splitlines()
    assert header.startswith("trajectory_id,node_index,timestamp,unix_ns,x,y,z,qx,qy,qz,qw")
    assert len(rows) == 40 and all(row.startswith("1,") for row in rows)


def test_cat_tables(rec: PbstreamRecording) -> None:
    constraints = list(rec.rows("constraint"))
    assert {row["tag"] for row in constraints} == {"intra", "inter"}
    imu = list(rec.rows("imu_data"))
    assert len(imu) == 160 and imu[0]["linear_acceleration_z"] == 9.81
    odometry = list(rec.rows("odometry_data"))
    assert len(odometry) == 80 and {"x", "qw", "unix_ns"} <= set(odometry[0])
    landmarks = list(rec.rows("landmark_data"))
    assert landmarks[0]["landmark_id"] == b"landmark_0"
    submaps = list(rec.rows("submap"))
    assert submaps[0]["num_x_cells"] == 60 and submaps[0]["dims"] == 2
    assert set(rec.table_kinds()) >= {"trajectory", "constraint", "imu_data", "node"}


def test_cat_every_record_as_ndjson(rec: PbstreamRecording) -> None:
    lines = _cli("cat", str(SAMPLE)).splitlines()
    assert len(lines) == len(rec)
    records = [json.loads(line) for line in lines]
    assert [r["kind"] for r in records[:3]] == [
        "header",
        "pose_graph",
        "all_trajectory_builder_options",
    ]
    node = next(r["value"] for r in records if r["kind"] == "node")  # the generic line
    assert node["data"]["node_data"]["timestamp"] == node["timestamp"] == START_TICKS


def test_subset_is_a_valid_stream(tmp_path: Path) -> None:
    out = tmp_path / "one.pbstream"
    _cli("export", str(SAMPLE), "-o", str(out), "--trajectory", "1", "--nodes", "0:10")
    with registry.open(out) as cut:
        assert isinstance(cut, PbstreamRecording)
        summary = cut.summary()
        assert list(summary["trajectories"]) == ["1"]
        assert summary["trajectories"]["1"]["nodes"] == 10
        assert summary["trajectories"]["1"]["pose_graph_nodes"] == 10
        assert summary["sensor_data"]["imu_data"] == 80  # trajectory 1's
        assert all(c[0] == 1 or c[2] == 1 for c in cut.pose_graph().constraints.tolist())
        options = list(cut.numbers_of("all_trajectory_builder_options"))
        from nanorec.converters.pbstream.decode import decode_record

        body = decode_record("all_trajectory_builder_options", cut.entry(int(options[0]))[1])
        assert len(body["options_with_sensor_ids"]) == 1
    whole = tmp_path / "time.pbstream"
    _cli("export", str(SAMPLE), "-o", str(whole), "--start", "0", "--end", "10")
    with registry.open(whole) as cut:
        assert isinstance(cut, PbstreamRecording)
        assert cut.summary()["trajectories"]["0"]["nodes"] == 21  # 0 .. 10 s every 0.5 s


def test_ros_map(tmp_path: Path) -> None:
    _cli(
        "export",
        str(SAMPLE),
        "--format",
        "ros-map",
        "-o",
        str(tmp_path / "map"),
        "--resolution",
        "0.05",
    )
    data = (tmp_path / "map.pgm").read_bytes()
    assert data.startswith(b"P5\n# Cartographer map; 0.05 m/pixel\n")
    text = (tmp_path / "map.yaml").read_text()
    assert text.startswith(f"image: {tmp_path / 'map'}.pgm\nresolution: 0.05\n")
    header = data.split(b"\n", 4)
    width, height = map(int, header[2].split())
    image = np.frombuffer(header[4], np.uint8).reshape(height, width)
    # the room is 6 m wide: free cells inside, occupied walls, unknown outside
    assert (image > 200).sum() * 0.05**2 > 8 and (image < 60).any() and (image == 128).any()
    origin = [float(v) for v in text.split("origin: [")[1].split("]")[0].split(",")]
    assert -6 < origin[0] < -2.5 and -6 < origin[1] < -2.5


def test_plot(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    out = tmp_path / "map.png"
    _cli("plot", str(SAMPLE), "-o", str(out))
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_mcap_conformance(rec: PbstreamRecording, tmp_path: Path) -> None:
    pytest.importorskip("mcap")
    from tests.mcap.conformance import check_mcap_export

    checked = check_mcap_export(rec, tmp_path)
    topics = {channel.topic for channel in checked.channels.values()}
    assert {"/pbstream/node_pose", "/tf", "/pbstream/map", "/pbstream/trajectories"} <= topics


def test_generated_layouts_differ_only_in_framing(tmp_path: Path) -> None:
    plan = Plan(trajectories=1, nodes=5, grid_cells=10)
    v1 = generate(tmp_path / "v1.pbstream", plan, "1")
    with registry.open(v1) as rec:
        assert isinstance(rec, PbstreamRecording)
        assert rec.format_version == "1" and "trajectory_data" not in rec.kinds()


def test_bundled_samples_regenerate(tmp_path: Path) -> None:
    from nanorec.converters.pbstream.generate import SAMPLES as PLANS
    from nanorec.converters.pbstream.generate import main

    assert main([str(tmp_path)]) == 0
    for name in PLANS:
        assert (tmp_path / name).read_bytes() == (SAMPLES / name).read_bytes(), name
        twin = SAMPLES / (name + ".json")
        assert (tmp_path / twin.name).read_text() == twin.read_text(), twin.name


@pytest.mark.parametrize("name", ["pbstream-small.pbstream", "pbstream-legacy-small.pbstream"])
def test_samples_hold_what_their_json_twin_says(name: str) -> None:
    import hashlib

    twin = json.loads((SAMPLES / (name + ".json")).read_text())
    data = (SAMPLES / name).read_bytes()
    assert twin["size"] == len(data) and twin["sha256"] == hashlib.sha256(data).hexdigest()
    with registry.open(SAMPLES / name) as rec:
        assert isinstance(rec, PbstreamRecording)
        summary = rec.summary()
        assert summary["kinds"] == twin["records_by_kind"]
        assert summary["messages"] == twin["records"]
        assert summary["format_version"] == twin["format_version"]
        assert summary["dimensions"] == twin["dimensions"]
        assert summary["landmarks"] == twin["landmarks"]
        for tid, facts in twin["trajectories"].items():
            row = summary["trajectories"][tid]
            assert (row["nodes"], row["submaps"]) == (facts["nodes"], facts["submaps"])
            poses = rec.trajectory(int(tid))
            assert int(poses.timestamp[0]) == facts["first_node_ticks"]
            assert int(poses.timestamp[-1]) == facts["last_node_ticks"]


def test_3d_state(tmp_path: Path) -> None:
    """3D submaps (hybrid grids, sint32 indices) and nodes: summary, byte-exact round trip,
    and the x-ray ROS map of the walls (as Cartographer projects 3D submaps)."""
    from nanorec.converters.pbstream.rosmap import assemble

    source = generate(tmp_path / "three.pbstream", Plan(trajectories=1, nodes=20, dims=3))
    converter = registry.get("pbstream")
    archive = tmp_path / "three.zip"
    converter.convert(source, archive)
    from nanorec.archive.reader import ArchiveReader

    with ArchiveReader(archive) as reader:
        report = converter.export(reader, tmp_path / "back.pbstream")
        assert report.identical
        rec = converter.open_archive(reader)
        assert isinstance(rec, PbstreamRecording)
        assert rec.summary()["dimensions"] == "3D"
        submap = rec.decode(int(rec.numbers_of("submap")[0]))["data"]["submap_3d"]
        grid = submap["high_resolution_hybrid_grid"]
        assert grid["z_indices"].min() == 0 and grid["x_indices"].min() < 0
        occupancy = assemble(rec)
        assert (occupancy.image < 100).sum() > 50 and occupancy.submaps == 1


def test_time_ranges_use_each_records_own_time(rec: PbstreamRecording) -> None:
    """IMU data follows the nodes in the file (its index time is clamped to the last node's),
    yet `--start/--end` select it by its own time: trajectory 0's first 5 s."""
    from nanorec.selection import Selection

    rows = list(rec.rows("imu_data", Selection.make(start=0, end=5)))
    assert rows and {row["trajectory_id"] for row in rows} == {0}
    assert len(rows) == 21  # every 0.25 s from 0 to 5 s inclusive
    assert all(row["unix_ns"] <= rec.start_time * 1e9 + 5e9 for row in rows)


def test_node_dimensions_as_cartographer_writes_them() -> None:
    """`TrajectoryNodeData` ToProto sets every cloud (`mutable_*`): a 2D node has empty
    high/low resolution clouds and no histogram; a 3D one an empty filtered cloud."""
    from nanorec.converters.pbstream.trajectory import node_dims
    from nanorec.converters.pbstream.wire import field_bytes, field_varint

    def node(clouds: dict[int, bytes], histogram: bytes = b"") -> bytes:
        data = field_varint(1, START_TICKS)
        for number in (3, 4, 5):
            data += field_bytes(number, clouds.get(number, b""), keep_empty=True)
        data += field_bytes(6, histogram) + field_bytes(7, b"", keep_empty=True)
        return field_bytes(1, field_varint(2, 4)) + field_bytes(5, data)

    cloud = field_varint(1, 1) + field_bytes(3, b"\x01\x02\x03")
    two = node({3: cloud})
    three = node({4: cloud, 5: cloud}, histogram=bytes(8))
    assert node_dims(two, 0, len(two)) == 2
    assert node_dims(three, 0, len(three)) == 3
    bare = node({})
    assert node_dims(bare, 0, len(bare)) is None  # nothing to tell by: the options decide
