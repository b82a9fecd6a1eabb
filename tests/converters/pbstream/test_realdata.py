"""The real Cartographer files of ../shared/realdata/pbstream (skipped when absent): exact
export by sha256, facts against an independent framing walk, and our wire reader against
the protobuf package on every record."""

from __future__ import annotations

import hashlib
import struct
import zlib
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from nanorec import registry
from nanorec.archive.reader import ArchiveReader
from nanorec.converters.pbstream.decode import decode_record
from nanorec.converters.pbstream.recording import PbstreamRecording
from nanorec.converters.pbstream.records import V2_FIELDS
from tests.conftest import REALDATA

FOLDER = REALDATA / "pbstream"
FILES = sorted(FOLDER.glob("*.pbstream")) if FOLDER.is_dir() else []
pytestmark = [
    pytest.mark.realdata,
    pytest.mark.skipif(not FILES, reason="../shared/realdata/pbstream is not present"),
]


def protobuf() -> tuple[Any, Any, Any]:
    """protobuf's side of the cross-checks (skips where the package is not installed)."""
    pytest.importorskip("google.protobuf")
    from tests.converters.pbstream.protobuf_reference import message_class, ours, plain

    return message_class, ours, plain


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _payloads(data: bytes) -> list[bytes]:
    """An independent walk: size-prefixed gzip members after the 8-byte magic."""
    found, pos = [], 8
    while pos < len(data):
        (size,) = struct.unpack_from("<Q", data, pos)
        found.append(zlib.decompress(data[pos + 8 : pos + 8 + size], 31))
        pos += 8 + size
    return found


@pytest.fixture(scope="module")
def converted(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("pbstream-real")
    converter = registry.get("pbstream")
    out = {}
    for path in FILES:
        archive = folder / (path.name + ".nanover.zip")
        report = converter.convert(path, archive)
        assert report.clean and report.cut is None
        assert report.details["raw_members"] == 0
        out[path.name] = archive
    return out


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_export_is_byte_identical(path: Path, converted: dict[str, Path], tmp_path: Path) -> None:
    converter = registry.get("pbstream")
    back = tmp_path / path.name
    with ArchiveReader(converted[path.name]) as reader:
        report = converter.export(reader, back)
    assert _sha(back.read_bytes()) == _sha(path.read_bytes())
    assert report.identical is True


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_facts_match_an_independent_walk(path: Path, converted: dict[str, Path]) -> None:
    payloads = _payloads(path.read_bytes())
    kinds = Counter(p[0] >> 3 for p in payloads[1:])
    with PbstreamRecording(ArchiveReader(converted[path.name])) as rec:
        summary = rec.summary()
        assert summary["messages"] == len(payloads) == len(rec)
        assert summary["format_version"] == str(payloads[0][1])
        nodes = sum(row["nodes"] for row in summary["trajectories"].values())
        assert nodes == kinds[V2_FIELDS["node"]]
        assert summary["sensor_data"]["odometry_data"] == kinds[V2_FIELDS["odometry_data"]]
        times = rec.reader.index.timestamp_us
        assert (np.diff(times) >= 0).all()
        for number in (0, len(rec) // 2, len(rec) - 1):
            assert rec.payload(number) == payloads[number]


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_wire_reader_matches_protobuf(path: Path, converted: dict[str, Path]) -> None:
    """Every record of every kind (at most 300 per kind) decodes to what protobuf parses."""
    message_class, ours, plain = protobuf()
    serialized = message_class("SerializedData")
    seen: Counter[str] = Counter()
    with PbstreamRecording(ArchiveReader(converted[path.name])) as rec:
        for number in range(1, len(rec)):
            kind, entry = rec.entry(number)
            if seen[kind] >= 300:
                continue
            seen[kind] += 1
            parsed = serialized.FromString(rec.payload(number))
            theirs = plain(parsed)[f"f{V2_FIELDS[kind]}"]
            mine = ours(decode_record(kind, entry))
            assert "_unknown" not in str(mine.keys()), (kind, number)
            assert mine == theirs, (kind, number)
    assert seen["node"] and seen["pose_graph"] == 1


def test_times_are_exact() -> None:
    """Spec §6: ticks 638220896057529180 = 2023-06-11T14:13:25.752918000Z (first node of
    the haicheng12 map)."""
    path = FOLDER / "haicheng12_cartographer_slam_map.pbstream"
    with registry.open(path) as rec:
        assert isinstance(rec, PbstreamRecording)
        poses = rec.trajectory(0)
        assert int(poses.timestamp[0]) == 638220896057529180
        assert int(poses.unix_ns[0]) == 1686492805752918000
        assert rec.summary()["trajectories"]["0"]["start"] == "2023-06-11T14:13:25.7529180Z"
        assert poses.source == "pose_graph" and poses.translation.shape == (220, 3)


def test_ros_map_matches_cartographers_own(tmp_path: Path) -> None:
    """haicheng12/cartographer_slam publishes, beside this .pbstream, the map Cartographer's
    `cartographer_pbstream_to_ros_map` made of it (maps/map.pgm, map.yaml @3ed06c1). Its
    facts: the PGM header below, origin [-1.3, -2.73253, 0.0], and of its 114 x 92 pixels
    7336 are 128 (never observed), 244 are < 50 and 2423 are > 200."""
    path = FOLDER / "haicheng12_cartographer_slam_map.pbstream"
    with registry.open(path) as rec:
        from nanorec.converters.pbstream.rosmap import export_ros_map

        written = export_ros_map(rec, tmp_path / "map", resolution=0.05)
    data = written.pgm.read_bytes()
    header = b"P5\n# Cartographer map; 0.05 m/pixel\n114 92\n255\n"
    assert data.startswith(header)
    image = np.frombuffer(data[len(header) :], np.uint8).reshape(92, 114)
    assert abs(int((image == 128).sum()) - 7336) <= 10
    assert abs(int((image < 50).sum()) - 244) <= 5
    assert abs(int((image > 200).sum()) - 2423) <= 10
    assert written.yaml.read_text() == (
        f"image: {tmp_path / 'map'}.pgm\nresolution: 0.05\norigin: [-1.3, -2.73253, 0.0]\n"
        "negate: 0\noccupied_thresh: 0.65\nfree_thresh: 0.196\n"
    )


@pytest.mark.slow
def test_ros_map_agrees_with_cartographers_occupancy_grid(tmp_path: Path) -> None:
    """artelrobotics/camel_robot publishes, beside unfinished.pbstream, the map that
    `map_saver` saved from Cartographer's /map topic (maps/unfinished_map.pgm/.yaml
    @8098429): 1030 x 787 pixels, origin [-12.013389, -13.319980], of which 3086 occupied
    (0), 201547 free (254), the rest unknown (205); map_saver's thresholds are 65 and 25."""
    path = FOLDER / "artelrobotics_camel_robot_unfinished.pbstream"
    with registry.open(path) as rec:
        from nanorec.converters.pbstream.rosmap import assemble

        grid = assemble(rec, 0.05)
    assert grid.image.shape == (787, 1030)
    assert grid.origin == pytest.approx((-12.013389, -13.319980), abs=1e-5)
    occupancy = np.rint((1 - grid.image / 255.0) * 100)
    unknown = grid.image == 128
    assert abs(int((~unknown & (occupancy >= 65)).sum()) - 3086) <= 30
    assert abs(int((~unknown & (occupancy <= 25)).sum()) - 201547) <= 200


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_dimensions_come_from_what_nodes_hold(path: Path, converted: dict[str, Path]) -> None:
    """All three real maps are 2D. The arti_navigation one has no submaps, so its nodes
    decide: Cartographer writes a 2D node's 3D clouds as present but empty messages."""
    with PbstreamRecording(ArchiveReader(converted[path.name])) as rec:
        assert rec.summary()["dimensions"] == "2D"
