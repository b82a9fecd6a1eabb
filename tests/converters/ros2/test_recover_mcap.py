"""A crashed MCAP bag cut anywhere, its last chunk too (zstd, lz4, uncompressed): every
message a streaming reader still gets from the bytes on disk is recovered, in order, none is
invented, the loss is reported (convert, the archive's `verify`, the file's `verify`) and the
cut file exports back byte for byte.

The oracle is independent of `mcap_file`/`mcap_salvage`: the `mcap` package's StreamReader
over the complete records before the cut, then the cut chunk decompressed here with a plain
zstd/lz4 decompressor fed every byte on disk, and its complete message records.
"""

from __future__ import annotations

import io
import struct
from pathlib import Path

import pytest

pytest.importorskip("mcap")
pytest.importorskip("zstandard")
pytest.importorskip("lz4")

import lz4.frame as lz4_frame
import zstandard
from mcap.exceptions import McapError
from mcap.records import Message as McapMessage
from mcap.stream_reader import StreamReader
from mcap.writer import CompressionType, Writer

from nanorec import registry, verify
from nanorec.archive.reader import ArchiveReader
from nanorec.cli import _register, app
from nanorec.contract import ConvertRequest, ExportRequest
from nanorec.converters.ros.ros2.mcap_file import open_mcap
from nanorec.converters.ros.ros2.mcap_skeleton import join_mcap
from tests.conftest import REALDATA, make_runner

Message = tuple[int, int, bytes]
_HEAD = struct.Struct("<BQ")
_MESSAGE = struct.Struct("<HIQQ")


def real_files() -> list[Path]:
    folder = REALDATA / "ros2"
    return sorted(folder.glob("*/*.mcap")) if folder.is_dir() else []


def starts(data: bytes) -> list[int]:
    """Offsets of the top-level records (the last one may run past the end)."""
    out, pos = [], 8
    while pos + 9 <= len(data):
        out.append(pos)
        pos += 9 + _HEAD.unpack_from(data, pos)[1]
    return out


def _records(records: bytes) -> list[Message]:
    out, pos = [], 0
    while pos + 9 <= len(records):
        opcode, length = _HEAD.unpack_from(records, pos)
        end = pos + 9 + length
        if end > len(records):
            break
        if opcode == 0x05 and length >= _MESSAGE.size:
            channel, _, log_time, _ = _MESSAGE.unpack_from(records, pos + 9)
            out.append((channel, log_time, records[pos + 9 + _MESSAGE.size : end]))
        pos = end
    return out


def _inflated(compression: str, data: bytes) -> bytes:
    """All a decompressor gives from `data` (a cut frame: its whole blocks)."""
    if compression == "zstd":
        return bytes(zstandard.ZstdDecompressor().decompressobj().decompress(data))
    if compression == "lz4":
        return bytes(lz4_frame.LZ4FrameDecompressor().decompress(data))
    return data


def streamed(prefix: bytes) -> list[Message]:
    """What a streaming reader gets back from the cut file `prefix` (see the docstring)."""
    found: list[Message] = []
    try:
        for record in StreamReader(io.BytesIO(prefix), skip_magic=False).records:
            if isinstance(record, McapMessage):
                found.append((record.channel_id, record.log_time, bytes(record.data)))
    except (McapError, EOFError, struct.error):
        pass  # the cut record
    heads = starts(prefix)
    if not heads:
        return found
    last = heads[-1]
    if last + 9 + _HEAD.unpack_from(prefix, last)[1] <= len(prefix):
        return found  # no record cut (or cut inside its opcode and length)
    if prefix[last] != 0x06 or last + 9 + 36 > len(prefix):
        return found
    name_size = struct.unpack_from("<I", prefix, last + 9 + 28)[0]
    at = last + 9 + 32 + name_size
    if at + 8 > len(prefix):
        return found
    compression = prefix[last + 9 + 32 : at].decode()
    return found + _records(_inflated(compression, prefix[at + 8 :]))


def write_mcap(compression: CompressionType, messages: int = 4000) -> bytes:
    """A bag as rosbag2's MCAP writer leaves it, with chunks of many zstd/lz4 blocks (1 MiB;
    rosbag2's own default is 768 KiB): one topic, messages of varied sizes."""
    out = io.BytesIO()
    w = Writer(out, chunk_size=1 << 20, compression=compression)
    w.start(profile="ros2", library="test")
    schema = w.register_schema("std_msgs/msg/String", "ros2msg", b"string data\n")
    channel = w.register_channel("/chatter", "cdr", schema)
    for i in range(messages):
        payload = f"hello {i} ".encode() * (1 + i % 40)
        w.add_message(channel, log_time=1_000 + i, data=payload, publish_time=i, sequence=i)
    w.finish()
    return out.getvalue()


def offsets(data: bytes, count: int = 20) -> list[int]:
    """`count` cuts: spread over the file, half of them inside its last chunk."""
    chunks = [s for s in starts(data) if data[s] == 0x06]
    inside = count // 2 if chunks else 0
    spread = [8 + (len(data) - 8) * k // (count - inside) for k in range(count - inside)]
    if chunks:
        first = chunks[-1]
        end = first + 9 + _HEAD.unpack_from(data, first)[1]
        spread += [first + 1 + (end - first - 2) * k // (inside - 1) for k in range(inside)]
    return sorted(set(spread))


def _check_file(prefix: bytes, original: list[Message]) -> int:
    """Messages found in the cut file `prefix` are the streamed ones, the original's first
    ones; a loss is reported; join gives the file back. Returns how many were lost."""
    f = open_mcap(prefix)
    found = [(m.topic, m.timestamp, bytes(m.data)) for m in f.messages()]
    assert found == streamed(prefix)
    assert found == original[: len(found)]  # none invented, none out of order
    assert b"".join(join_mcap(f.skeleton(), [m[2] for m in found])) == prefix
    lost = len(original) - len(found)
    assert f.damage.lost_messages <= lost
    if lost and f.damage.cut is not None and prefix[f.damage.cut.offset] in (0x05, 0x06):
        assert f.damage.losses  # a message or chunk cut: reported
    return lost


SYNTHETIC = {
    "zstd": lambda: write_mcap(CompressionType.ZSTD),
    "lz4": lambda: write_mcap(CompressionType.LZ4),
    "none": lambda: write_mcap(CompressionType.NONE, 1500),
}


@pytest.mark.parametrize("name", sorted(SYNTHETIC))
def test_synthetic_cuts_recover_every_streamed_message(name: str) -> None:
    data = SYNTHETIC[name]()
    original = streamed(data)
    assert len(original) > 1000
    recovered = []
    for cut in offsets(data):
        lost = _check_file(data[:cut], original)
        recovered.append(len(original) - lost)
    # inside the last chunk a compressed stream still gives messages back
    assert max(recovered[:-1]) > len(original) // 2


@pytest.mark.realdata
@pytest.mark.parametrize("path", real_files(), ids=lambda p: p.name)
def test_real_bags_cut_recover_every_streamed_message(path: Path) -> None:
    data = path.read_bytes()
    original = streamed(data)
    for cut in offsets(data):
        _check_file(data[:cut], original)


def test_realdata_present_or_skipped() -> None:
    if not REALDATA.is_dir():
        pytest.skip("../shared/realdata is not present")
    assert real_files()


def _convert_verify_export(source: Path, tmp_path: Path) -> tuple[int, str, str]:
    """convert, the archive's verify, export: (messages, verify's problems, native verify's
    stderr); export must give `source` back."""
    converter = registry.for_native(source)
    archive = tmp_path / f"{source.stem}.nanover.zip"
    report = converter.convert(source, archive, ConvertRequest(overwrite=True))
    checked = verify(archive)
    with ArchiveReader(archive) as reader:
        back = tmp_path / f"back{source.suffix}"
        assert converter.export(reader, back, ExportRequest(overwrite=True)).identical is not False
    assert back.read_bytes() == source.read_bytes()
    _register()
    native = make_runner().invoke(app, ["verify", str(source)])
    assert native.exit_code == (1 if report.damaged else 0), native.stderr
    assert checked.ok == (not report.damaged)
    return report.messages, " ".join(map(str, checked.problems)), native.stderr


@pytest.mark.parametrize("name", sorted(SYNTHETIC))
def test_a_cut_chunk_is_reported_by_convert_and_verify(name: str, tmp_path: Path) -> None:
    data = SYNTHETIC[name]()
    original = streamed(data)
    chunk = [s for s in starts(data) if data[s] == 0x06][-1]
    source = tmp_path / "cut.mcap"
    source.write_bytes(data[: chunk + (len(data) - chunk) // 3])
    count, problems, native = _convert_verify_export(source, tmp_path)
    assert count == len(streamed(source.read_bytes())) < len(original)
    assert "source-damage" in problems and " lost: " in problems
    assert f"{count} messages recovered" in problems and f"{count} messages recovered" in native
    source.write_bytes(data)  # the whole file: clean, verify OK
    assert _convert_verify_export(source, tmp_path)[0] == len(original)


@pytest.mark.realdata
@pytest.mark.parametrize("path", real_files(), ids=lambda p: p.name)
def test_real_bags_cut_in_their_last_chunk_convert_verify_export(
    path: Path, tmp_path: Path
) -> None:
    data = path.read_bytes()
    original = streamed(data)
    chunk = [s for s in starts(data) if data[s] == 0x06][-1]
    source = tmp_path / path.name
    source.write_bytes(data[: chunk + (len(data) - chunk) // 4])
    count, problems, native = _convert_verify_export(source, tmp_path)
    assert count == len(streamed(source.read_bytes())) <= len(original)
    if count < len(original):  # messages lost: said by the archive's and the file's verify
        assert "source-damage" in problems and "messages recovered" in native


def _flipped_late_in_chunk(data: bytes) -> bytes:
    chunk = [s for s in starts(data) if data[s] == 0x06][-1]
    name_size = struct.unpack_from("<I", data, chunk + 9 + 28)[0]
    records = chunk + 9 + 32 + name_size + 8
    end = chunk + 9 + _HEAD.unpack_from(data, chunk)[1]
    bad = bytearray(data)
    bad[records + (end - records) * 9 // 10] ^= 0xFF
    return bytes(bad)


@pytest.mark.parametrize("name", ["zstd", "lz4"])
def test_a_damaged_chunk_gives_nothing(name: str) -> None:
    """A byte flipped late in a whole chunk's stream: what it decompresses to may be wrong
    well before the decoder (or only the chunk's CRC) notices, so none of its messages is
    given back (never an invented one); the chunk is damaged, the file joins back whole."""
    bad = _flipped_late_in_chunk(SYNTHETIC[name]())
    f = open_mcap(bad)
    assert not list(f.messages())
    assert b"".join(join_mcap(f.skeleton(), [])) == bad
    (region,) = f.damage.damaged
    assert "messages are lost" in region.reason
