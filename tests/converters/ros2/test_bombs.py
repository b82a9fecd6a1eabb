"""Issue #34, round 4: ROS 2 bags under hostile input. Each bomb or zero run is refused
with a `FormatError` saying what and where (the CLI: one `nanorec:` line, exit 2), before
it inflates; honest files are not (their byte-for-byte tests stay in test_bags.py and the
contract)."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from nanorec import registry
from nanorec.archive.reader import ArchiveReader
from nanorec.cli import _register, app
from nanorec.contract import ConvertRequest
from nanorec.converters.ros.ros2 import mcap_records as rec
from nanorec.converters.ros.ros2.mcap_file import open_mcap
from nanorec.converters.ros.ros2.recording import Ros2Recording
from nanorec.converters.ros.ros2.storage import MCAP_MAGIC, SQLITE_MAGIC
from nanorec.errors import FormatError
from tests.conftest import make_runner
from tests.converters.ros2 import hostile

pytest.importorskip("zstandard")
pytest.importorskip("lz4")

_register()


def _run(*args: object) -> tuple[int, str]:
    result = make_runner().invoke(app, [str(a) for a in args])
    return result.exit_code, result.stdout + result.stderr


def _convert(source: Path, tmp_path: Path) -> Path:
    out = tmp_path / (source.name + ".nanover.zip")
    registry.for_native(source).convert(source, out, ConvertRequest(overwrite=True))
    return out


# -- 1. MCAP chunks ---------------------------------------------------------------------------


def test_lz4_chunk_declaring_more_than_lz4_can_give_is_refused_unread() -> None:
    import lz4.frame

    frame = memoryview(lz4.frame.compress(bytes(1 << 16)))
    with pytest.raises(FormatError, match="impossible uncompressed size"):
        rec.decompress("lz4", frame, 16 << 20)  # within zstd's ratio, not lz4's
    assert len(rec.decompress("lz4", frame, 1 << 16)) == 1 << 16  # the honest size reads


def test_lz4_chunk_lie_is_damage_not_a_bomb() -> None:
    found = open_mcap(hostile.lz4_chunk_lie())
    assert not list(found.messages())
    assert "impossible" in found.damage.damaged[0].reason


# -- 2. whole-file compression and runs of zeros ----------------------------------------------


@pytest.mark.parametrize(
    ("name", "content", "why"),
    [
        ("zeros.db3.zstd", hostile.zeros_after(hostile.sqlite_head()), "inflates past 4096"),
        ("page0.db3.zstd", hostile.zeros_after(SQLITE_MAGIC), "page size 0"),
        ("zeros.mcap.zstd", hostile.zeros_after(MCAP_MAGIC), "followed by zeros"),
    ],
)
def test_compressed_files_inflate_no_further_than_they_can_hold(
    name: str, content: bytes, why: str, tmp_path: Path
) -> None:
    source = tmp_path / name
    source.write_bytes(content)
    assert len(content) < 64 << 10
    with pytest.raises(FormatError, match=why):
        _convert(source, tmp_path)
    code, output = _run("info", source)
    assert code == 2 and output.startswith("nanorec: ") and output.count("\n") == 1, output


def test_zeros_where_records_are_due_end_the_walk_as_a_tail() -> None:
    """A file of zeros after the magic is not walked as millions of empty records: the walk
    stops where the zeros begin and takes them as the tail (as it takes a cut record)."""
    found = open_mcap(MCAP_MAGIC + bytes(1 << 26))  # 64 MiB: 7.5 M empty records, not walked
    assert not list(found.messages())
    assert found.damage.cut is not None and found.damage.cut.offset == 8
    assert "zeros" in found.damage.cut.reason
    assert not list(open_mcap(MCAP_MAGIC + bytes(9 * 3)).messages())  # a few: read past


def test_a_crashed_mcap_ending_in_zeros_keeps_every_message(tmp_path: Path) -> None:
    """A killed writer's file often ends in zeros the file system had allotted: every
    message before them is kept, the zeros are the reported tail, export gives it back."""
    from nanorec.converters.ros.ros2.generate import write_mcap

    whole = tmp_path / "whole.mcap"
    count = write_mcap(whole, 5.0)
    data = whole.read_bytes()
    cut = data[: len(data) * 2 // 3]
    source = tmp_path / "zeros-tail.mcap"
    source.write_bytes(cut + bytes(1 << 16))
    kept = len(list(open_mcap(cut).messages()))
    found = open_mcap(source.read_bytes())
    assert len(list(found.messages())) == kept and 0 < kept <= count
    assert found.damage.cut is not None
    archive = _convert(source, tmp_path)
    code, _ = _run("export", archive, "-o", tmp_path / "back.mcap")
    assert code == 0 and (tmp_path / "back.mcap").read_bytes() == source.read_bytes()


# -- 3. per-message zstd frames ---------------------------------------------------------------


def test_a_message_frame_declaring_more_than_it_holds_is_refused(tmp_path: Path) -> None:
    bag = hostile.lying_message_db3(tmp_path / "lying.db3")
    archive = _convert(bag, tmp_path)  # convert keeps the bytes as stored
    with ArchiveReader(archive) as reader:
        recording = Ros2Recording(reader)
        with pytest.raises(FormatError, match=r"message 0: .*declares 1073741824 bytes"):
            recording.serialized(0)
        assert recording.serialized(1)  # the others still read
    code, output = _run("cat", archive)
    assert code == 2 and "declares 1073741824" in output and "Traceback" not in output


def test_a_message_frame_giving_another_size_than_declared_is_refused() -> None:
    import zstandard

    from nanorec.converters.ros.ros2.zstd_bound import inflate_message

    frame = hostile.lying_frame(4096)  # declares 4096, gives 100
    with pytest.raises(FormatError, match="message 3: "):
        inflate_message(zstandard, frame, 3)
    honest = zstandard.ZstdCompressor().compress(b"cdr" * 1000)
    assert inflate_message(zstandard, honest, 3) == b"cdr" * 1000


# -- 4. archive side members ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("member", "data", "why", "verb"),
    [
        ("ros2-time.bin", b"\x00" * 12, "ros2-time.bin holds 12 bytes", "cat"),
        ("ros2-rank.bin", b"", "ros2-rank.bin holds 0 bytes", "export"),
        ("ros2.msgpack.zlib", hostile.zlib_bomb(), "inflates past", "cat"),
    ],
)
def test_a_short_or_hostile_side_member_fails_verify_and_reads(
    member: str, data: bytes, why: str, verb: str, tmp_path: Path
) -> None:
    archive = _convert(hostile.SAMPLE_DB3, tmp_path)
    bad = hostile.with_member(archive, tmp_path / "bad.nanover.zip", member, data)
    code, output = _run("verify", bad)
    assert code == 1 and why in output, output
    args = ["-o", tmp_path / "back.db3"] if verb == "export" else []
    code, output = _run(verb, bad, *args)
    assert code == 2 and why in output and "Traceback" not in output, output


def test_verify_still_passes_an_honest_archive(tmp_path: Path) -> None:
    archive = _convert(hostile.SAMPLE_DB3, tmp_path)
    with zipfile.ZipFile(archive) as zipped:
        assert "ros2-time.bin" in zipped.namelist()
    code, output = _run("verify", archive)
    assert code == 0, output
