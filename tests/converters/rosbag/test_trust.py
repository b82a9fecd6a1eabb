"""Issue 18, "Trust, round 3": legal types that would never end, lying indexes, damage in a
chunk, decompression bombs; each gives a `NanorecError` (or its messages), never a traceback
or a huge allocation."""

from __future__ import annotations

import bz2
import io
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from nanorec.archive.reader import ArchiveReader
from nanorec.cli import _register, app
from nanorec.converters.ros.ros1.convert import convert
from nanorec.converters.ros.ros1.export import export_exact
from nanorec.converters.ros.ros1.index import read_index
from nanorec.converters.ros.ros1.meta import BagMeta
from nanorec.converters.ros.ros1.msgdef import Decoder
from nanorec.converters.ros.ros1.records import pack_u32, record
from nanorec.converters.ros.ros1.writer import BagWriter, bag_header
from nanorec.errors import FormatError, UnknownNameError, UnsupportedError, UsageError
from tests.conftest import REALDATA, REPO, make_runner
from tests.converters.rosbag.bags import make_bag

runner = make_runner()
EMPTY = "\n================\nMSG: std_msgs/Empty\n"


def _bag_of(path: Path, type_name: str, definition: str, payload: bytes) -> Path:
    """A one-message bag of a connection of `type_name` defined by `definition`."""
    with path.open("wb") as stream:
        bag = BagWriter(stream)
        bag.add_connection(
            0,
            "/x",
            (
                (b"md5sum", b"0" * 32),
                (b"message_definition", definition.encode()),
                (b"topic", b"/x"),
                (b"type", type_name.encode()),
            ),
        )
        bag.write(0, 1_000_000_000, payload)
        bag.close()
    return path


# -- 8: arrays bounded by the bytes left, zero-size elements by a cap -----------------------


def test_array_of_empty_messages_is_capped() -> None:
    decoder = Decoder("pkg/Bomb", "std_msgs/Empty[] a" + EMPTY)
    with pytest.raises(FormatError, match="std_msgs/Empty"):
        decoder.decode(struct.pack("<I", 1 << 20))
    assert decoder.decode(struct.pack("<I", 3)) == {"a": [{}, {}, {}]}


@pytest.mark.parametrize(
    ("definition", "payload"),
    [
        ("std_msgs/Empty[] a" + EMPTY, b"\xff\xff\xff\xff"),
        ("std_msgs/Empty[4294967295] a" + EMPTY, b""),
        ("pkg/Z[65536] a\n====\nMSG: pkg/Z\nstd_msgs/Empty[65536] b" + EMPTY, b""),
        ("geometry_msgs/Point[] p\n====\nMSG: geometry_msgs/Point\nfloat64 x", b"\xff" * 4),
        ("string[] s", b"\xff\xff\xff\x7f" + b"\x00" * 8),
    ],
)
def test_arrays_never_outgrow_the_payload(definition: str, payload: bytes) -> None:
    with pytest.raises(FormatError, match="array"):
        Decoder("pkg/Bomb", definition).decode(payload)


def test_cat_of_an_empty_array_bomb_is_one_line(tmp_path: Path) -> None:
    _register()
    bag = _bag_of(tmp_path / "bomb.bag", "pkg/Bomb", "std_msgs/Empty[] a" + EMPTY, b"\xff" * 4)
    result = runner.invoke(app, ["cat", str(bag)])
    # the undecodable message is printed as its bytes, with one warning naming it
    assert result.exit_code == 0 and '"base64": "/////w=="' in result.stdout
    assert result.stderr.startswith("nanorec: warning: message 0 (/x)")
    assert len(result.stderr.strip().splitlines()) == 1 and "65536" in result.stderr


# -- 9: a type that contains itself ---------------------------------------------------------


def test_self_referencing_type_is_a_format_error() -> None:
    with pytest.raises(FormatError, match="contains itself"):
        Decoder("pkg/A", "int32 x\npkg/A next")
    with pytest.raises(FormatError, match="contains itself"):
        Decoder("pkg/A", "pkg/B b\n====\nMSG: pkg/B\npkg/A[2] a")
    # through a variable array it ends (an empty array): legal, and decodes
    tree = Decoder("pkg/T", "int8 v\npkg/T[] kids")
    assert tree.decode(b"\x01\x01\x00\x00\x00\x02\x00\x00\x00\x00") == {
        "v": 1,
        "kids": [{"v": 2, "kids": []}],
    }
    with pytest.raises(FormatError):  # nested deeper than Python recurses
        tree.decode(b"\x01\x01\x00\x00\x00" * 100_000)


def test_cat_of_a_self_referencing_type_has_no_traceback(tmp_path: Path) -> None:
    _register()
    bag = _bag_of(tmp_path / "self.bag", "pkg/A", "int32 x\npkg/A next", bytes(40_000))
    result = runner.invoke(app, ["cat", str(bag)])
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert "Traceback" not in result.stderr and "RecursionError" not in result.stderr


# -- 10: an index pointing at a record that is not a chunk -----------------------------------


def test_index_pointing_at_a_non_chunk_is_a_format_error(tmp_path: Path) -> None:
    data = bytearray(make_bag(tmp_path, seconds=0.2).read_bytes())
    field = data.index(b"chunk_pos=") + len(b"chunk_pos=")
    struct.pack_into("<Q", data, field, 13)  # the bag header record
    source = tmp_path / "lying.bag"
    source.write_bytes(bytes(data))
    with pytest.raises(FormatError, match="op 0x05"):
        read_index(source)
    _register()
    result = runner.invoke(app, ["info", str(source)])
    assert result.exit_code == 0 and "reading its records instead" in result.stderr


# -- 11: one damaged record inside an uncompressed chunk -------------------------------------


def _damaged_waypoints(tmp_path: Path) -> Path:
    bag = REALDATA / "rosbag" / "waypoint_follower_test.bag"
    if not bag.is_file():
        pytest.skip("../shared/realdata/rosbag absent")
    data = bytearray(bag.read_bytes())
    struct.pack_into("<I", data, 21294, 0)  # the header length of the chunk's 9th connection
    source = tmp_path / "damaged.bag"
    source.write_bytes(bytes(data))
    return source


def test_damaged_record_in_a_chunk_resynchronises(tmp_path: Path) -> None:
    source = _damaged_waypoints(tmp_path)
    archive = tmp_path / "a.zip"
    report = convert(source, archive)
    assert report.messages == 1118 and report.damaged
    assert "21294" in str(report.damaged[0].offset)
    back = tmp_path / "back.bag"
    with ArchiveReader(archive) as reader:
        assert export_exact(reader, back, overwrite=True).identical
    assert back.read_bytes() == source.read_bytes()


def test_damaged_record_in_a_synthetic_chunk_resynchronises(tmp_path: Path) -> None:
    """The next plausible record is found by its own bytes (the index is not needed)."""
    bag = make_bag(tmp_path, seconds=1.0)
    data = bytearray(bag.read_bytes())
    start = data.index(b"op=\x02", 4117 + 20_000) - 21  # a message record: conn, op, time
    struct.pack_into("<I", data, start, 0)
    source = tmp_path / "damaged.bag"
    source.write_bytes(bytes(data))
    report = convert(source, tmp_path / "d.zip")
    assert report.messages == convert(bag, tmp_path / "clean.zip").messages - 1
    assert [r.offset for r in report.damaged] == [start]


def test_info_of_a_damaged_native_bag_says_so(tmp_path: Path) -> None:
    source = _damaged_waypoints(tmp_path)
    _register()
    result = runner.invoke(app, ["info", str(source), "--tz", "UTC"])
    assert result.exit_code == 0 and "messages:    1118" in result.stdout
    assert "damaged" in result.stderr and "21294" in result.stderr


# -- 12: decompression bombs stream, never held whole ----------------------------------------


def _bomb(path: Path, mib: int) -> Path:
    """A bag whose one bz2 chunk inflates to `mib` MiB of zeros, its size field 0xFFFFFFFF."""
    packer = bz2.BZ2Compressor(9)
    zero = bytes(1 << 20)
    stored = b"".join(packer.compress(zero) for _ in range(mib)) + packer.flush()
    chunk_header = (
        (b"compression", b"bz2"),
        (b"op", b"\x05"),
        (b"size", pack_u32(0xFFFFFFFF)),
    )
    with path.open("wb") as out:
        out.write(b"#ROSBAG V2.0\n" + bag_header(0, 0, 0) + record(chunk_header, stored))
    return path


@pytest.mark.slow  # 5 s: 256 MiB inflated in a child
def test_decompression_bomb_is_streamed(tmp_path: Path) -> None:
    bomb = _bomb(tmp_path / "bomb.bag", 256)
    script = (
        "import sys\n"
        "from pathlib import Path\n"
        "from nanorec.converters.ros.ros1.convert import convert\n"
        "report = convert(Path(sys.argv[1]), Path(sys.argv[2]))\n"
        "print(report.messages, len(report.damaged))\n"
        "status = Path('/proc/self/status').read_text()\n"
        "print([int(l.split()[1]) for l in status.splitlines() if l.startswith('VmHWM')][0])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(bomb), str(tmp_path / "bomb.zip")],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    counts, peak_kib = done.stdout.splitlines()
    assert counts == "0 1"
    assert int(peak_kib) < 200 * 1024, f"peak RSS {int(peak_kib) >> 10} MiB"


# -- 17: the right NanorecError subclasses ---------------------------------------------------


def test_writer_and_meta_raise_nanorec_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(UsageError, match="compression"):
        BagWriter(io.BytesIO(), compression="zip")
    bag = BagWriter(io.BytesIO())
    with pytest.raises(UnknownNameError, match="connection 3"):
        bag.write(3, 0, b"")
    archive = tmp_path / "a.zip"
    convert(make_bag(tmp_path, seconds=0.2), archive)
    monkeypatch.setattr("nanorec.converters.ros.ros1.meta.META_VERSION", 99)
    with ArchiveReader(archive) as reader, pytest.raises(UnsupportedError) as caught:
        BagMeta(reader)
    assert "layout version" in str(caught.value) and "ValueError" not in str(caught.value)
