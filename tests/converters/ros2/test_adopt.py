"""A ROS 2 conversion killed mid-way: `nanorec recover` gives back a ROS 2 archive.

The first archive message of each topic says what the topic is, and the first message what
the bag was, so the recovered messages (the bag's first ones in time: conversion writes
them in time order) decode, and `export` writes them as a new bag that nanorec and
`rosbags` both read, every message, and says it is not the original's bytes (the storage
files' skeletons are written only when the conversion closes). The expected messages come
from the whole conversion, the bags' own readers (`rosbags`) check the export.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from nanorec import registry
from nanorec.archive.reader import ArchiveReader
from nanorec.archive.writer import ArchiveWriter
from nanorec.cli import _register, app
from nanorec.converters.ros.ros2.adopt import rebuild_members
from nanorec.converters.ros.ros2.generate import write_db3, write_mcap
from nanorec.converters.ros.ros2.recording import Ros2Recording
from nanorec.outputs.tables import dumps
from tests.conftest import REALDATA, make_runner

pytest.importorskip("yaml")
pytest.importorskip("zstandard")
pytest.importorskip("mcap")
rosbag2 = pytest.importorskip("rosbags.rosbag2")

_register()

#: The writer of a conversion killed after its first N messages: the messages are flushed
#: (as the writer does at least every MiB / second), nothing written at close.
_WRITER = """
import os, sys
from nanorec.archive.reader import ArchiveReader
from nanorec.archive.writer import ArchiveWriter
with ArchiveReader(sys.argv[1]) as reader:
    writer = ArchiveWriter(sys.argv[2], source_format="ros2")
    for number in range(int(sys.argv[3])):
        writer.write(reader.read(number), timestamp_us=int(reader.index.timestamp_us[number]))
    writer.flush(fsync=True)
    os._exit(0)  # killed: nothing written at close
"""


def _run(*args: object) -> tuple[int, str, str]:
    result = make_runner().invoke(app, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


def _killed(bag: Path, tmp_path: Path, after: int) -> tuple[Path, Path]:
    """The whole archive of `bag`, and the archive `recover` makes of a conversion killed
    after `after` messages."""
    archive = tmp_path / "whole.nanover.zip"
    registry.get("ros2").convert(bag, archive)
    out = tmp_path / "killed.nanover.zip"
    subprocess.run([sys.executable, "-c", _WRITER, str(archive), str(out), str(after)], check=True)
    partial = tmp_path / ".killed.nanover.zip.partial"
    assert partial.exists() and not out.exists()
    recovered = tmp_path / "recovered.nanover.zip"
    code, stdout, stderr = _run("recover", partial, "-o", recovered)
    assert code == 0, stderr
    assert stdout.rstrip().endswith("a ros2 archive again"), stdout
    return archive, recovered


def _check(bag: Path, tmp_path: Path, after: int, back: Path) -> set[str]:
    """Recovered: decoded as the whole's first messages; exported: a bag both readers read
    with every recovered message, its topics and types. The types the recovered archive
    has no definition of (those of a bag carrying none)."""
    archive, recovered = _killed(bag, tmp_path, after)
    with registry.open(archive) as whole:
        assert isinstance(whole, Ros2Recording)
        expected = [(whole.kind_of(n), whole.time_ns(n), whole.raw(n)) for n in range(after)]
        decoded = [dumps(whole.decoded(n)) for n in range(after)]
        types = {topic: whole.type_of(topic) for topic, _, _ in expected}
    with registry.open(recovered) as rec:
        assert isinstance(rec, Ros2Recording) and len(rec) == after
        assert [dumps(rec.decoded(n)) for n in range(after)] == decoded
        undefined = {rec.type_of(t) for t in types if rec.undefined(rec.type_of(t))}
    code, stdout, stderr = _run("cat", recovered, "--messages", "0:3")
    assert code == 0 and stdout.count("\n") == 3 and "data" not in stderr, stderr
    code, stdout, stderr = _run("verify", recovered)  # no skeletons: not due (#39 item 6)
    assert code == 0, stdout + stderr
    code, stdout, stderr = _run("export", recovered, "-o", back)
    assert code == 0, stderr
    lines = stdout.splitlines()
    assert len(lines) == 2 and lines[1].startswith("note: recovered from a killed conversion")
    assert "not byte-exact" in lines[1]
    with registry.open(back) as again:
        assert isinstance(again, Ros2Recording)
        got = [(again.kind_of(n), again.time_ns(n), again.raw(n)) for n in range(len(again))]
    assert got == expected
    with rosbag2.Reader(back) as reader:
        read = [(c.topic, t, bytes(d)) for c, t, d in reader.messages()]
        assert reader.message_count == after
        assert {c.topic: c.msgtype for c in reader.connections} == types
    assert sorted(read, key=lambda m: m[1]) == sorted(expected, key=lambda m: m[1])
    return undefined


@pytest.mark.parametrize("storage", ["sqlite3", "mcap"])
def test_killed_conversion_of_a_synthetic_file_recovers(storage: str, tmp_path: Path) -> None:
    bag = tmp_path / ("bag.db3" if storage == "sqlite3" else "bag.mcap")
    count = (write_db3 if storage == "sqlite3" else write_mcap)(bag, 6.0)
    back = tmp_path / f"back{bag.suffix}"  # rosbags knows a storage file by its suffix
    assert _check(bag, tmp_path, count * 2 // 3, back) == set()  # definitions kept
    assert back.is_file()  # one storage file gives one storage file, of its storage
    assert back.read_bytes()[:4] == (b"SQLi" if storage == "sqlite3" else b"\x89MCA")


@pytest.mark.realdata
@pytest.mark.parametrize(
    "name", ["rosbag2_py_sqlite3_wbag", "rosbag2_py_mcap_wbag", "rosbag2_humble_py_talker"]
)
def test_killed_conversion_of_a_real_bag_recovers(name: str, tmp_path: Path) -> None:
    bag = REALDATA / "ros2" / name
    if not bag.is_dir():
        pytest.skip(f"{bag} is not present")
    with registry.open(bag) as whole:
        after = len(whole) * 2 // 3
    back = tmp_path / "back"
    _check(bag, tmp_path, after, back)
    assert (back / "metadata.yaml").is_file()  # a folder gives a folder


def test_messages_of_another_kind_are_not_adopted(tmp_path: Path) -> None:
    path = tmp_path / "other.nanover.zip"
    with ArchiveWriter(path) as writer:  # a ROS 2 message, but no bag description
        writer.write({"/x": {"timestamp": 1, "data": b"\0\1\0\0"}}, timestamp_us=0)
    with ArchiveReader(path) as reader:
        assert rebuild_members(reader) is None


_ONE = """
import os, sys
from nanorec.archive.writer import ArchiveWriter
writer = ArchiveWriter(sys.argv[1], source_format="ros2")
writer.write(eval(sys.argv[2]), timestamp_us=0)
writer.flush(fsync=True)
os._exit(0)
"""
_BAG = {"storage": "mcap", "distro": "", "compression": ["", ""], "folder": False, "file": "x"}


@pytest.mark.parametrize(
    ("bag", "topic"),
    [
        ({**_BAG, "storage": "floppy"}, None),
        ({"storage": "mcap"}, None),
        (_BAG, {"type": 7}),
        (_BAG, {"type": "std_msgs/msg/String"}),
    ],
    ids=["storage", "fields", "type", "topic fields"],
)
def test_a_damaged_description_is_one_line(bag: object, topic: object, tmp_path: Path) -> None:
    message = {"/x": {"timestamp": 1, "data": b"\0\1\0\0", "topic": topic, "bag": bag}}
    out = tmp_path / "bad.nanover.zip"
    subprocess.run([sys.executable, "-c", _ONE, str(out), repr(message)], check=True)
    partial = tmp_path / ".bad.nanover.zip.partial"
    code, stdout, stderr = _run("recover", partial, "-o", tmp_path / "r.nanover.zip")
    assert code == 2 and stdout == "", stdout
    assert stderr.count("\n") == 1 and stderr.startswith("nanorec: "), stderr
    assert "recovered message 0" in stderr and "Traceback" not in stderr
