"""MCAP storage files (converters/ros/ros2/mcap_file.py): messages as the `mcap` package reads
them, and skeleton + datas joining back to the file byte for byte, also for files cut short
or damaged (the bytes we cannot read are kept, never lost)."""

from __future__ import annotations

import hashlib
import io
import struct
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

pytest.importorskip("mcap")

from mcap.reader import make_reader
from mcap.stream_reader import StreamReader
from mcap.writer import CompressionType, Writer

from nanorec.converters.ros.ros2 import mcap_records as rec
from nanorec.converters.ros.ros2.mcap_file import McapFile, open_mcap
from nanorec.converters.ros.ros2.mcap_skeleton import join_mcap
from nanorec.errors import NanorecError
from tests.conftest import REALDATA

Message = tuple[int, int, bytes]


def real_files() -> list[Path]:
    folder = REALDATA / "ros2"
    return sorted(folder.glob("*/*.mcap")) if folder.is_dir() else []


def oracle(data: bytes) -> list[Message]:
    """The messages of a whole file in file order, as the `mcap` package reads them."""
    reader = StreamReader(io.BytesIO(data), skip_magic=False)
    return [
        (r.channel_id, r.log_time, bytes(r.data))
        for r in reader.records
        if type(r).__name__ == "Message"
    ]


def split(data: bytes) -> tuple[McapFile, list[Message], bytes]:
    """open + messages + skeleton, checking join gives `data` back."""
    f = open_mcap(data)
    found = [(m.topic, m.timestamp, bytes(m.data)) for m in f.messages()]
    skeleton = f.skeleton()
    joined = b"".join(join_mcap(skeleton, [m[2] for m in found]))
    assert hashlib.sha256(joined).digest() == hashlib.sha256(data).digest()
    return f, found, skeleton


def write_mcap(
    compression: CompressionType = CompressionType.ZSTD,
    *,
    chunked: bool = True,
    finish: bool = True,
    messages: int = 300,
    chunk_size: int = 4096,
) -> bytes:
    """A ros2-profile MCAP from the Python writer: three channels, two schemas, rosbag2
    metadata (twice: the last one counts), messages of varied sizes (empty ones too)."""
    out = io.BytesIO()
    w = Writer(out, chunk_size=chunk_size, compression=compression, use_chunking=chunked)
    w.start(profile="ros2", library="test")
    w.add_metadata("rosbag2", {"serialized_metadata": "old", "ROS_DISTRO": "humble"})
    s1 = w.register_schema("std_msgs/msg/String", "ros2msg", b"string data\n")
    s2 = w.register_schema("sensor_msgs/msg/Image", "ros2msg", b"uint32 height\n")
    qos = "- history: 3\n  depth: 0\n"
    c1 = w.register_channel("/chatter", "cdr", s1, {"offered_qos_profiles": qos})
    c2 = w.register_channel("/image", "cdr", s2, {"topic_type_hash": "RIHS01_ab"})
    c3 = w.register_channel("/none", "cdr", 0)
    for i in range(messages):
        channel = (c1, c2, c3)[i % 3]
        size = (i * 37) % 900 if i % 11 else 0
        payload = bytes((i + k) % 251 for k in range(size))
        w.add_message(channel, log_time=1_000 + i * 10, data=payload, publish_time=i, sequence=i)
    w.add_metadata("rosbag2", {"serialized_metadata": "version: 9\n", "ROS_DISTRO": "jazzy"})
    if finish:
        w.finish()
    else:
        w.flush()  # a killed writer: chunks on disk, no data end, summary nor footer
    return out.getvalue()


SYNTHETIC: dict[str, Callable[[], bytes]] = {
    "zstd": lambda: write_mcap(CompressionType.ZSTD),
    "lz4": lambda: write_mcap(CompressionType.LZ4),
    "none": lambda: write_mcap(CompressionType.NONE),
    "unchunked": lambda: write_mcap(chunked=False),
    "zstd-killed": lambda: write_mcap(CompressionType.ZSTD, finish=False),
    "lz4-killed": lambda: write_mcap(CompressionType.LZ4, finish=False),
    "unchunked-killed": lambda: write_mcap(chunked=False, finish=False),
    "zstd-bigchunks": lambda: write_mcap(CompressionType.ZSTD, chunk_size=1 << 20),
}


@pytest.fixture(scope="module", params=sorted(SYNTHETIC))
def synthetic(request: pytest.FixtureRequest) -> tuple[str, bytes]:
    name: str = request.param
    return name, SYNTHETIC[name]()


# --- real rosbag2 files --------------------------------------------------------------------


@pytest.mark.realdata
@pytest.mark.parametrize("path", real_files(), ids=lambda p: p.name)
def test_real_file_matches_mcap_reader(path: Path) -> None:
    data = path.read_bytes()
    f, found, skeleton = split(data)
    assert found == oracle(data)
    reader = make_reader(io.BytesIO(data))
    summary = reader.get_summary()
    assert summary is not None
    assert {t.key: t.name for t in f.topics} == {c.id: c.topic for c in summary.channels.values()}
    for topic in f.topics:
        channel = summary.channels[topic.key]
        assert topic.type == summary.schemas[channel.schema_id].name
        assert topic.serialization_format == channel.message_encoding
        assert topic.offered_qos_profiles == channel.metadata.get("offered_qos_profiles", "")
        assert topic.type_description_hash == channel.metadata.get("topic_type_hash", "")
    assert {(d.type, d.encoding, d.text.encode()) for d in f.definitions} == {
        (s.name, s.encoding, s.data) for s in summary.schemas.values()
    }
    rosbag2 = [m.metadata for m in reader.iter_metadata() if m.name == "rosbag2"]
    assert f.stored_metadata == (rosbag2[-1]["serialized_metadata"] if rosbag2 else None)
    assert summary.statistics is not None and f.statistics is not None
    assert f.statistics.message_count == summary.statistics.message_count == len(found)
    assert f.statistics.channel_message_counts == summary.statistics.channel_message_counts
    assert f.profile == "ros2"
    assert f.damage.cut is None and not f.damage.damaged
    # libmcap chunks (rosbag2 writes them uncompressed) rebuild; Go-written zstd ones are kept
    assert f.chunks + f.kept_chunks == len(summary.chunk_indexes)
    if f.library.startswith("mcap go"):
        assert f.kept_chunks == len(summary.chunk_indexes)
    else:
        assert f.kept_chunks == 0
        assert len(skeleton) < len(data)


def test_realdata_present_or_skipped() -> None:
    if not real_files():
        pytest.skip("../shared/realdata/ros2 is not present")
    assert len(real_files()) >= 10


# --- synthetic files from the Python writer ------------------------------------------------


def test_synthetic_round_trip(synthetic: tuple[str, bytes]) -> None:
    name, data = synthetic
    f, found, skeleton = split(data)
    if "killed" in name:
        # the mcap reader stops with an error at the missing footer: compare with the whole file
        assert found and found == [m for m in found_in_finished(name) if m in found][: len(found)]
        assert f.damage.notes
    else:
        assert found == oracle(data)
        assert f.damage.cut is None and not f.damage.damaged
        assert f.statistics is not None and f.statistics.message_count == len(found)
    assert f.kept_chunks == 0, f.rebuilt_by  # every Python-written chunk rebuilds
    assert [t.name for t in f.topics] == ["/chatter", "/image", "/none"]
    assert [t.type for t in f.topics] == ["std_msgs/msg/String", "sensor_msgs/msg/Image", ""]
    assert f.topics[0].offered_qos_profiles.startswith("- history")
    assert f.topics[1].type_description_hash == "RIHS01_ab"
    assert [d.type for d in f.definitions] == ["std_msgs/msg/String", "sensor_msgs/msg/Image"]
    assert f.stored_metadata == "version: 9\n"  # the last rosbag2 record
    assert f.ros_distro == "jazzy"
    data_bytes = sum(len(m[2]) for m in found)
    if name in ("none", "unchunked"):  # the skeleton is the file less its data, plus the ops
        assert len(skeleton) < len(data) - data_bytes + 64 + 9 * 4 * (len(found) + f.chunks)


def found_in_finished(name: str) -> list[Message]:
    return oracle(SYNTHETIC[name.replace("-killed", "")]())


def test_join_rejects_wrong_datas() -> None:
    data = write_mcap(CompressionType.ZSTD, messages=30)
    f = open_mcap(data)
    datas = [bytes(m.data) for m in f.messages()]
    skeleton = f.skeleton()
    with pytest.raises(NanorecError):
        b"".join(join_mcap(skeleton, datas[:-1]))
    with pytest.raises(NanorecError):
        b"".join(join_mcap(skeleton, [*datas, b""]))
    longer = [d + b"x" for d in datas]
    with pytest.raises(NanorecError):
        b"".join(join_mcap(skeleton, longer))
    with pytest.raises(NanorecError):
        b"".join(join_mcap(skeleton[:-1], datas))


def test_libmcap_lz4_settings_rebuild() -> None:
    """A chunk compressed as libmcap does (LZ4F frame, level 9, no content size) is found."""
    records = bytes(range(256)) * 300
    for method, (kind, _, compress) in rec.REBUILDERS.items():
        compressed = compress(records)
        order = list(rec.REBUILDERS)
        assert rec.find_rebuilder(kind, memoryview(compressed), records, order) is not None
        assert rec.rebuild(order[0], records) == compressed, method


# --- crashes and damage --------------------------------------------------------------------


def record_starts(data: bytes) -> list[int]:
    out, pos = [], 8
    while pos + 9 <= len(data):
        out.append(pos)
        pos += 9 + struct.unpack_from("<Q", data, pos + 1)[0]
    return out


def check_damaged(data: bytes, real: list[Message]) -> McapFile | None:
    """Only NanorecError; every message found is a real one, in order; join gives `data`."""
    try:
        f, found, _ = split(data)
    except NanorecError:
        return None
    it = iter(real)
    assert all(m in it for m in found)  # a subsequence of the real messages
    return f


def cuts(data: bytes, count: int = 60, per_kind: int = 8) -> Iterator[int]:
    """At, 1 and 10 bytes past record starts: of each opcode its first, its last and up to
    `per_kind` between (a file's hundreds of message indexes end alike), and the file's last
    four records; then `count` cuts spread over the file."""
    starts = record_starts(data)
    kinds: dict[int, list[int]] = {}
    for start in starts:
        kinds.setdefault(data[start], []).append(start)
    chosen = {*starts[-4:]}
    for group in kinds.values():
        chosen.update(group[:: max(1, len(group) // per_kind)], group[-1:])
    yield from sorted({*chosen, *(s + 1 for s in chosen), *(s + 10 for s in chosen)})
    yield from range(1, len(data), max(1, len(data) // count) | 1)


def crash_inputs() -> list[tuple[str, bytes]]:
    out = [(name, make()) for name, make in sorted(SYNTHETIC.items()) if "big" not in name]
    out += [(p.name, p.read_bytes()) for p in real_files()]
    return out


@pytest.mark.slow
@pytest.mark.parametrize("name,data", crash_inputs(), ids=lambda v: v if isinstance(v, str) else "")
def test_cut_anywhere(name: str, data: bytes) -> None:
    real = oracle(data) if "killed" not in name else found_in_finished(name)
    for cut in cuts(data):
        f = check_damaged(data[:cut], real)
        if cut >= 8:
            assert f is not None
        if f is not None and cut < len(data) and (f.damage.cut is None):
            # a cut exactly at a record boundary leaves no tail, but no footer either
            assert f.damage.notes


@pytest.mark.parametrize("name,data", crash_inputs(), ids=lambda v: v if isinstance(v, str) else "")
def test_flipped_byte_in_chunk(name: str, data: bytes) -> None:
    real = oracle(data) if "killed" not in name else found_in_finished(name)
    chunks = [s for s in record_starts(data) if data[s] == rec.CHUNK]
    for start in chunks[:3]:
        length, crc = struct.unpack_from("<Q16xQI", data, start + 1)[0::2]
        for where in (start + 9, start + 9 + 16, start + 40, start + 9 + length // 2):
            for bit in (0x01, 0x80):
                bad = bytearray(data)
                bad[where] ^= bit
                if not crc and where > start + 40:
                    # rosbag2 writes uncompressed chunks without CRC: a flipped byte in a
                    # message's data cannot be told; the structure must still hold
                    f, found, _ = split(bytes(bad))
                    changed = [m for m, r in zip(found, real, strict=False) if m != r]
                    assert f.damage.damaged or (len(found) == len(real) and len(changed) <= 1)
                    continue
                f = check_damaged(bytes(bad), real)
                assert f is not None
                if where == start + 9 + length // 2:  # inside the records: detected
                    assert f.damage.damaged or f.damage.cut


def test_hostile_chunk_sizes() -> None:
    """Declared sizes beyond reason are damage, never an allocation or an exception."""
    data = write_mcap(CompressionType.ZSTD, messages=20)
    start = next(s for s in record_starts(data) if data[s] == rec.CHUNK)
    for usize in (1 << 40, 1 << 63, 0):
        bad = bytearray(data)
        struct.pack_into("<Q", bad, start + 9 + 16, usize)
        f = check_damaged(bytes(bad), oracle(data))
        assert f is not None and f.damage.damaged
    bad = bytearray(data)
    struct.pack_into("<Q", bad, start + 1, (1 << 64) - 1)  # record length
    f = check_damaged(bytes(bad), oracle(data))
    assert f is not None and f.damage.cut is not None


@pytest.mark.parametrize("data", [b"", b"\x89MC", b"not an mcap file", b"\x89MCAP0\r\n"])
def test_tiny_inputs(data: bytes) -> None:
    try:
        split(data)
    except NanorecError:
        assert data in (b"", b"not an mcap file")
