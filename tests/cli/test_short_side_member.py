"""Issue 35's fourth reproduction: a ROS 2 archive with a short `ros2-time.bin` passed `verify`
and made `cat` print a traceback, where the same damage in a ROS1 archive gave one line. Both
go through the core's `ArchiveReader.member_array` now: `verify` names the member and is not
OK, `cat` says one line and exits 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from nanorec import registry
from nanorec.archive.reader import ArchiveReader
from nanorec.cli import _register, app
from nanorec.errors import FormatError
from tests.conftest import SAMPLES, make_runner
from tests.converters.side_members import with_member

_register()

CASES = [("ros2-robot.db3", "ros2-time.bin"), ("rosbag-robot.bag", "rosbag-time.bin")]


def _short(source: str, member: str, tmp_path: Path) -> Path:
    archive = tmp_path / "a.nanover.zip"
    registry.for_native(SAMPLES / source).convert(SAMPLES / source, archive)
    with ArchiveReader(archive) as reader:
        data = reader.member(member)
    return with_member(archive, tmp_path / "short.nanover.zip", member, data[:-4])


@pytest.mark.parametrize(("source", "member"), CASES)
def test_verify_names_a_short_time_member(source: str, member: str, tmp_path: Path) -> None:
    short = _short(source, member, tmp_path)
    result = make_runner().invoke(app, ["verify", str(short)])
    said = result.stdout + result.stderr
    assert result.exit_code == 1 and member in said and "OK" not in said, said


@pytest.mark.parametrize(("source", "member"), CASES)
def test_cat_of_a_short_time_member_is_one_line(source: str, member: str, tmp_path: Path) -> None:
    short = _short(source, member, tmp_path)
    result = make_runner().invoke(app, ["cat", str(short)])
    assert result.exit_code == 2, result.stdout
    assert result.stderr.startswith("nanorec: ") and result.stderr.count("\n") == 1
    assert member in result.stderr and "Traceback" not in result.stderr


def test_member_array_checks_the_count_it_is_given(tmp_path: Path) -> None:
    """`member_array` checks the length against the dtype and the count (the messages' by
    default), and refuses a dtype that cannot come from bytes."""
    archive = tmp_path / "a.nanover.zip"
    registry.for_native(SAMPLES / "ros2-robot.db3").convert(SAMPLES / "ros2-robot.db3", archive)
    with ArchiveReader(archive) as reader:
        count = len(reader)
        assert len(reader.member_array("ros2-time.bin", "<i8")) == count
        assert len(reader.member_array("ros2-time.bin", "<u4", 2 * count)) == 2 * count
        with pytest.raises(FormatError, match=r"ros2-time\.bin holds"):
            reader.member_array("ros2-time.bin", "<i8", count + 1)
        with pytest.raises(FormatError, match="cannot hold"):
            reader.member_array("ros2-time.bin", object)
        with pytest.raises(FormatError, match=r"no nothing\.bin member"):
            reader.member_array("nothing.bin", "<i8")


def test_meta_is_bounded_by_the_source_size(tmp_path: Path) -> None:
    """`ArchiveReader.meta` reads what `ArchiveWriter.add_meta` wrote, and refuses a member
    inflating past the recorded source's size plus slack (a bomb), naming it."""
    import zlib

    from nanorec.archive.wire import META_SLACK
    from nanorec.archive.writer import ArchiveWriter

    archive = tmp_path / "m.nanover.zip"
    with ArchiveWriter(archive, source={"size": 10}) as writer:
        writer.write({"a": 1}, timestamp_us=0)
        writer.add_meta("x.msgpack.zlib", {"k": [1, 2]})
    with ArchiveReader(archive) as reader:
        assert reader.meta("x.msgpack.zlib") == {"k": [1, 2]}
    bomb = zlib.compress(bytes(META_SLACK + 11), 9)
    bombed = with_member(archive, tmp_path / "bomb.nanover.zip", "x.msgpack.zlib", bomb)
    with ArchiveReader(bombed) as reader, pytest.raises(FormatError, match=r"x\.msgpack\.zlib"):
        reader.meta("x.msgpack.zlib")
