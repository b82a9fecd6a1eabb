"""Crashed, cut, flipped and lying bags: every complete message converted, the rest
reported, the file always given back byte for byte; never a traceback or a huge
allocation."""

from __future__ import annotations

import hashlib
import random
import struct
from pathlib import Path

import pytest

from nanorec import registry
from nanorec.archive.reader import ArchiveReader
from nanorec.contract import ExportRequest
from nanorec.converters.ros.ros1 import compression
from nanorec.converters.ros.ros1.convert import convert
from nanorec.converters.ros.ros1.converter import Ros1ExportOptions
from nanorec.converters.ros.ros1.export import export_exact
from nanorec.converters.ros.ros1.generate import iter_messages
from nanorec.converters.ros.ros1.index import read_index
from nanorec.errors import BadMagicError, NanorecError, UnsupportedError
from nanorec.selection import Selection
from tests.converters.rosbag.bags import make_bag


def _roundtrip(source: Path, work: Path) -> tuple[int, object]:
    archive = work / (source.name + ".zip")
    report = convert(source, archive, overwrite=True)
    back = work / (source.name + ".back")
    with ArchiveReader(archive) as reader:
        assert export_exact(reader, back, overwrite=True).identical
    assert back.read_bytes() == source.read_bytes()
    return report.messages, report


def _written(seconds: float) -> int:
    return sum(1 for _ in iter_messages(seconds, 0, 64))


@pytest.mark.parametrize("kind", ["none", "bz2", "lz4"])
def test_crashed_bag_keeps_more_than_rosbag_reindex(tmp_path: Path, kind: str) -> None:
    if kind == "lz4":
        pytest.importorskip("lz4")
    total = _written(2.0)
    clean = make_bag(tmp_path, f"clean-{kind}.bag", compression=kind)
    crashed = make_bag(tmp_path, f"run-{kind}.bag.active", compression=kind, crash=True, cut=5)
    closed_chunks = len(read_index(clean).chunks)
    messages, report = _roundtrip(crashed, tmp_path)
    assert report.details["unindexed"] and report.cut is not None
    with registry.open(clean) as whole:
        assert len(whole) == total
    if kind == "none":
        # the open chunk's complete records are recovered: all but the cut last one
        assert messages == total - 1
    else:
        # a compressor holds its block: only closed chunks reached the disk, as ROS loses
        assert 0 < messages < total and closed_chunks > 1


def test_crashed_bag_repairs_into_a_bag_rosbags_reads(tmp_path: Path) -> None:
    rosbag1 = pytest.importorskip("rosbags.rosbag1")
    crashed = make_bag(tmp_path, "run.bag.active", crash=True, cut=3)
    archive = tmp_path / "run.zip"
    converter = registry.get("rosbag")
    converter.convert(crashed, archive)
    fixed = tmp_path / "fixed.bag"
    with ArchiveReader(archive) as reader:
        report = converter.export(reader, fixed, ExportRequest(form="indexed"))
        payloads = sorted(
            bytes(reader[n][next(iter(reader[n]))]["data"]) for n in range(len(reader))
        )
    with rosbag1.Reader(fixed) as bag:
        assert bag.message_count == report.messages == len(payloads)
        assert sorted(raw for _, _, raw in bag.messages()) == payloads


@pytest.mark.slow
def test_every_cut_converts_its_complete_prefix(tmp_path: Path) -> None:
    data = make_bag(tmp_path, seconds=0.3, chunk_threshold=4096).read_bytes()
    previous = 0
    for cut in [*range(0, len(data), 211), *range(len(data) - 40, len(data))]:
        source = tmp_path / "cut.bag"
        source.write_bytes(data[:cut])
        try:
            messages, _ = _roundtrip(source, tmp_path)
        except NanorecError as error:
            assert cut < 4117, (cut, error)  # only before the first chunk
            continue
        assert messages >= previous - 1, cut  # cutting later never loses much
        previous = messages


def test_flipped_bytes_still_export_identically(tmp_path: Path) -> None:
    data = make_bag(tmp_path, seconds=0.5, chunk_threshold=8192).read_bytes()
    rng = random.Random(5)
    for trial in range(40):
        damaged = bytearray(data)
        for _ in range(rng.randrange(1, 6)):
            damaged[rng.randrange(13, len(damaged))] ^= 1 << rng.randrange(8)
        source = tmp_path / f"flip{trial}.bag"
        source.write_bytes(bytes(damaged))
        _roundtrip(source, tmp_path)  # damage is reported and kept, never fatal


def test_absurd_lengths_are_not_allocated(tmp_path: Path) -> None:
    data = bytearray(make_bag(tmp_path, seconds=0.2).read_bytes())
    struct.pack_into("<I", data, 4117, 0xFFFFFFF0)  # the first chunk's header length
    source = tmp_path / "absurd.bag"
    source.write_bytes(bytes(data))
    messages, report = _roundtrip(source, tmp_path)
    assert messages == 0 and "not believable" in report.cut.reason  # type: ignore[attr-defined]


def test_lying_bag_header_falls_back_to_a_scan(tmp_path: Path) -> None:
    data = bytearray(make_bag(tmp_path, seconds=0.2).read_bytes())
    header = data.index(b"conn_count=") + len(b"conn_count=")
    struct.pack_into("<I", data, header, 10**9)
    source = tmp_path / "lying.bag"
    source.write_bytes(bytes(data))
    with pytest.raises(NanorecError):
        read_index(source)
    messages, _ = _roundtrip(source, tmp_path)
    assert messages == _written(0.2)


def test_other_versions_and_garbage(tmp_path: Path) -> None:
    old = tmp_path / "old.bag"
    old.write_bytes(b"#ROSBAG V1.2\n" + bytes(100))
    with pytest.raises(UnsupportedError, match=r"1\.2"):
        convert(old, tmp_path / "old.zip")
    png = tmp_path / "x.bag"
    png.write_bytes(b"\x89PNG" + bytes(50))
    with pytest.raises(BadMagicError):
        convert(png, tmp_path / "x.zip")


def test_chunk_that_does_not_recompress_is_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An lz4 chunk written by an older LZ4 (here: every block stored raw) decompresses
    fine but recompresses to other bytes: kept as stored, counted, exported identically."""
    pytest.importorskip("lz4")
    real = compression.roslz4

    def old_lz4(data: bytes) -> bytes:
        packed = real(data)
        raw = struct.pack("<I", len(data) | 0x80000000) + data if data else b""
        return compression.LZ4_HEADER + raw + packed[-8:]

    monkeypatch.setattr(compression, "roslz4", old_lz4)
    bag = make_bag(tmp_path, "old.bag", compression="lz4", seconds=0.5, chunk_threshold=16384)
    monkeypatch.setattr(compression, "roslz4", real)
    messages, report = _roundtrip(bag, tmp_path)
    assert report.details["kept_chunks"] == report.details["chunks"] > 1
    assert messages == _written(0.5)


def test_filter_export_is_a_valid_bag(tmp_path: Path) -> None:
    rosbag1 = pytest.importorskip("rosbags.rosbag1")
    bag = make_bag(tmp_path, seconds=3.0)
    archive = tmp_path / "a.zip"
    converter = registry.get("rosbag")
    converter.convert(bag, archive)
    cut = tmp_path / "cut.bag"
    with ArchiveReader(archive) as reader:
        selection = Selection.make(start=1.0, end=2.2, kinds=["/odom", "/rosout"])
        report = converter.export(
            reader, cut, ExportRequest(selection, options=Ros1ExportOptions("bz2"))
        )
    with rosbag1.Reader(cut) as out:
        topics = {c.topic for c in out.connections}
        stamps = [t for _, t, _ in out.messages()]
        assert topics == {"/odom", "/rosout"} and out.message_count == report.messages > 0
        assert max(stamps) - min(stamps) <= 1_200_000_000 + 3_000_000
    assert hashlib.sha256(cut.read_bytes()).hexdigest() == report.sha256


@pytest.mark.parametrize("lie", [1, 10**9])
def test_chunk_size_field_that_lies(tmp_path: Path, lie: int) -> None:
    """A compressed chunk whose `size` field is wrong still gives its messages (the stream
    says where it ends), and the file still comes back byte for byte."""
    data = bytearray(make_bag(tmp_path, seconds=0.5, compression="bz2").read_bytes())
    field = data.index(b"size=", 4117) + len(b"size=")
    struct.pack_into("<I", data, field, lie)
    source = tmp_path / "lying.bag"
    source.write_bytes(bytes(data))
    messages, report = _roundtrip(source, tmp_path)
    assert messages == _written(0.5) and not report.damaged  # type: ignore[attr-defined]


def test_a_failed_conversion_stops_the_source_hash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The source is hashed from the start, beside the walk: a conversion that fails leaves
    no hashing thread behind, and no output."""
    import threading

    from nanorec.archive.filehash import THREAD_NAME
    from nanorec.converters.ros.ros1 import convert as module

    def failing_walk(*args: object) -> None:
        raise NanorecError("the walk failed")

    monkeypatch.setattr(module, "walk", failing_walk)
    source = tmp_path / "some.bag"
    source.write_bytes(b"x" * (64 << 20))  # (hashing it takes longer than failing)
    with pytest.raises(NanorecError, match="the walk failed"):
        convert(source, tmp_path / "out.zip")
    assert not [t for t in threading.enumerate() if t.name == THREAD_NAME]
    assert not (tmp_path / "out.zip").exists()
