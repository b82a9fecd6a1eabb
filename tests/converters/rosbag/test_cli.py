"""`nanorec info|cat|play|export x.bag` end to end."""

from __future__ import annotations

import csv
import io
import itertools
import json
from pathlib import Path

import pytest

from nanorec import registry
from nanorec.cli import _register, app
from nanorec.contract import ExportRequest
from tests.conftest import SAMPLES, make_runner
from tests.converters.rosbag.bags import make_bag

runner = make_runner()


@pytest.fixture(autouse=True)
def _registered() -> None:
    _register()


def test_info_json_and_yaml(tmp_path: Path) -> None:
    bag = make_bag(tmp_path, seconds=2.0)
    result = runner.invoke(app, ["info", str(bag), "--json"])
    facts = json.loads(result.stdout)
    topics = {t["topic"]: t for t in facts["topics"]}
    assert topics["/rosout"]["connections"] == 2 and topics["/map_name"]["latching"]
    assert topics["/imu"]["frequency"] == pytest.approx(100.0, rel=0.05)
    assert facts["indexed"] and facts["messages"] == sum(t["messages"] for t in facts["topics"])
    text = runner.invoke(app, ["info", str(bag), "--yaml"]).stdout
    assert "indexed: True\n" in text and "    - topic: /imu\n" in text


def test_info_of_a_crashed_bag_says_so(tmp_path: Path) -> None:
    bag = make_bag(tmp_path, "run.bag.active", crash=True, cut=2)
    result = runner.invoke(app, ["info", str(bag), "--tz", "UTC"])
    assert result.exit_code == 0 and "unindexed" in result.stderr
    assert result.stdout.startswith(f"path:        {bag}\nversion:     2.0\n")


def test_cat_csv_of_a_topic(tmp_path: Path) -> None:
    bag = make_bag(tmp_path, seconds=1.0)
    result = runner.invoke(app, ["cat", str(bag), "--topic", "/odom", "--format", "csv"])
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert len(rows) == 50
    assert {"time_ns", "time_s", "pose.pose.position.x", "header.stamp.secs"} <= set(rows[0])
    assert int(rows[1]["time_ns"]) >= int(rows[0]["time_ns"])
    every = runner.invoke(app, ["cat", str(bag)]).stdout.splitlines()
    assert {json.loads(line)["topic"] for line in every} >= {"/imu", "/empty", "/camera/image"}
    wrong = runner.invoke(app, ["cat", str(bag), "--topic", "/nope"])
    assert wrong.exit_code == 2 and wrong.stderr.startswith("nanorec: ")


def test_play_immediate_with_start_replays_latched(tmp_path: Path) -> None:
    bag = make_bag(tmp_path, seconds=2.0)
    result = runner.invoke(
        app,
        [
            "play",
            str(bag),
            "-i",
            "-q",
            "-s",
            "1",
            "-u",
            "0.5",
            "--topics",
            "/odom",
            "--topics",
            "/map_name",
        ],
    )
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert lines[0]["topic"] == "/map_name"  # latched, from before the start
    odom = [line for line in lines if line["topic"] == "/odom"]
    assert 24 <= len(odom) <= 26
    assert all(a["time_ns"] <= b["time_ns"] for a, b in itertools.pairwise(odom))


def test_export_cut_and_repair(tmp_path: Path) -> None:
    bag = make_bag(tmp_path, seconds=2.0)
    out = tmp_path / "odom.bag"
    result = runner.invoke(app, ["export", str(bag), "-o", str(out), "--topic", "/odom"])
    assert result.exit_code == 0 and "a cut of 100 messages" in result.stdout
    again = runner.invoke(app, ["export", str(bag), "-o", str(out), "--topic", "/odom"])
    assert again.exit_code != 0  # never overwritten without --force
    crashed = make_bag(tmp_path, "run.bag.active", crash=True)
    fixed = tmp_path / "fixed.bag"
    result = runner.invoke(app, ["export", str(crashed), "-o", str(fixed), "--format", "indexed"])
    assert result.exit_code == 0
    info = runner.invoke(app, ["info", str(fixed), "--json"])
    assert json.loads(info.stdout)["indexed"] and "unindexed" not in info.stderr


def test_empty_bag(tmp_path: Path) -> None:
    from nanorec.converters.ros.ros1.writer import BagWriter

    bag = tmp_path / "empty.bag"
    with bag.open("wb") as stream:
        BagWriter(stream).close()
    assert bag.stat().st_size == 4117
    result = runner.invoke(app, ["info", str(bag)])
    assert (result.stdout, result.stderr) == (
        f"path:    {bag}\nversion: 2.0\nsize:    4.0 KB\n",
        "",
    )
    same = tmp_path / "same.bag"
    assert runner.invoke(app, ["export", str(bag), "-o", str(same)]).exit_code == 0
    assert same.read_bytes() == bag.read_bytes()


def _overlapping_bag(tmp_path: Path) -> Path:
    """Chunks that overlap in time, as the Python API writes messages given out of order:
    [2 s, 3 s], [1 s, 5 s], [4 s] after 1600000000 s."""
    from nanorec.converters.ros.ros1.generate import connection_fields
    from nanorec.converters.ros.ros1.msgdef import parse_definition
    from nanorec.converters.ros.ros1.serialize import encode
    from nanorec.converters.ros.ros1.stock import STOCK
    from nanorec.converters.ros.ros1.writer import BagWriter

    string = parse_definition("std_msgs/String", STOCK["std_msgs/String"][1])
    bag = tmp_path / "overlap.bag"
    with bag.open("wb") as stream:
        writer = BagWriter(stream)
        writer.add_connection(
            0, "/chatter", connection_fields("/chatter", "std_msgs/String", "/a", False)
        )
        for chunk in ([2, 3], [1, 5], [4]):
            for second in chunk:
                data = encode(string, "std_msgs/String", {"data": str(second)})
                writer.write(0, (1_600_000_000 + second) * 1_000_000_000, data)
            writer.flush_chunk()
        writer.close()
    return bag


def test_info_of_overlapping_chunks_says_what_rosbag_says(tmp_path: Path) -> None:
    """rosbag info takes start and end from the first and last chunk in file order (bag.py
    `__str__`, `_get_yaml_info`); --json gives the true first and last message times."""
    from nanorec import registry

    bag = _overlapping_bag(tmp_path)
    archive = tmp_path / "overlap.nanover.zip"
    registry.get("rosbag").convert(bag, archive)
    for source in (bag, archive):
        lines = runner.invoke(app, ["info", str(source), "--tz", "UTC"]).stdout.splitlines()
        assert lines[2:5] == [
            "duration:    2.0s",
            "start:       Sep 13 2020 12:26:42.00 (1600000002.00)",
            "end:         Sep 13 2020 12:26:44.00 (1600000004.00)",
        ]
        yaml = runner.invoke(app, ["info", str(source), "--yaml"]).stdout.splitlines()
        assert yaml[2:5] == [
            "duration: 2.000000",
            "start: 1600000002.000000",
            "end: 1600000004.000000",
        ]
        facts = json.loads(runner.invoke(app, ["info", str(source), "--json"]).stdout)
        assert (facts["start"], facts["end"], facts["duration"]) == (
            1600000001.0,
            1600000005.0,
            4.0,
        )
        assert facts["start_ns"] == 1_600_000_001_000_000_000


def test_info_of_an_old_bag_is_one_true_line(tmp_path: Path) -> None:
    bag = tmp_path / "old.bag"
    bag.write_bytes(b"#ROSBAG V1.2\n" + bytes(64))
    result = runner.invoke(app, ["info", str(bag)])
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and "reading its records" not in result.stderr
    assert "'#ROSBAG V1.2': only bag format 2.0 is supported" in result.stderr


def _bag_with_an_undecodable_message(tmp_path: Path) -> Path:
    """Five /chatter strings, the third a 2-byte payload (its length prefix cut)."""
    from nanorec.converters.ros.ros1.generate import connection_fields
    from nanorec.converters.ros.ros1.msgdef import parse_definition
    from nanorec.converters.ros.ros1.serialize import encode
    from nanorec.converters.ros.ros1.stock import STOCK
    from nanorec.converters.ros.ros1.writer import BagWriter

    string = parse_definition("std_msgs/String", STOCK["std_msgs/String"][1])
    bag = tmp_path / "bad.bag"
    with bag.open("wb") as stream:
        writer = BagWriter(stream)
        fields = connection_fields("/chatter", "std_msgs/String", "/a", False)
        writer.add_connection(0, "/chatter", fields)
        for i in range(5):
            data = encode(string, "std_msgs/String", {"data": str(i)}) if i != 2 else b"\xff\x00"
            writer.write(0, 1_600_000_000_000_000_000 + i * 100_000_000, data)
        writer.close()
    return bag


def test_cat_and_play_print_an_undecodable_message_as_bytes(tmp_path: Path) -> None:
    """One bad payload is printed as its bytes with one warning line; everything else
    still comes out, and no `struct` wording leaks into the warning."""
    bag = _bag_with_an_undecodable_message(tmp_path)
    for command in (["cat"], ["play", "-i"], ["play", "-i", "-q"]):
        result = runner.invoke(app, [*command, str(bag)])
        assert result.exit_code == 0, result.stderr
        lines = [json.loads(line) for line in result.stdout.splitlines()]
        assert [line["message"] for line in lines] == [
            {"data": "0"},
            {"data": "1"},
            {"base64": "/wA="},
            {"data": "3"},
            {"data": "4"},
        ]
        warnings = [line for line in result.stderr.splitlines() if "warning" in line]
        assert len(warnings) == 1 and "message 2 (/chatter)" in warnings[0]
        assert "unpack" not in result.stderr and "buffer" not in result.stderr
    result = runner.invoke(app, ["cat", str(bag), "--topic", "/chatter", "--format", "csv"])
    assert result.exit_code == 0, result.stderr
    assert [row["data"] for row in csv.DictReader(io.StringIO(result.stdout))] == [
        "0",
        "1",
        '{"base64": "/wA="}',
        "3",
        "4",
    ]


def _refused(args: list[str], says: str) -> None:
    result = runner.invoke(app, args)
    assert result.exit_code == 2 and result.stderr.count("\n") == 1, (args, result.stderr)
    assert result.stderr.startswith("nanorec: ") and says in result.stderr, (args, result.stderr)


def test_cat_takes_the_common_options(tmp_path: Path) -> None:
    """The issue's command lines: --type, -F csv and --messages, as on every format."""
    bag = make_bag(tmp_path, seconds=1.0)
    lines = runner.invoke(app, ["cat", str(bag), "--messages", "0:3"]).stdout.splitlines()
    assert [json.loads(line)["number"] for line in lines] == [0, 1, 2]
    result = runner.invoke(
        app, ["cat", str(bag), "--type", "/odom", "-F", "csv", "--messages", "0:40"]
    )
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert result.exit_code == 0 and rows and all(int(r["number"]) < 40 for r in rows)
    counts = [
        len(runner.invoke(app, ["cat", str(bag), *args]).stdout.splitlines())
        for args in (["-t", "/odom"], ["--topics", "/imu"], ["-t", "/odom", "--topics", "/imu"])
    ]
    assert counts[0] and counts[1] and counts[2] == counts[0] + counts[1]  # --topics merged
    _refused(["cat", str(bag), "-F", "bogus"], "--format")
    _refused(["cat", str(bag), "--start", "1000"], "--start 1000 selects no message")
    _refused(["cat", str(bag), "--messages", "5:2"], "--messages 5:2 selects no message")
    _refused(["cat", str(bag), "--topic", "/odom", "--topic", "/nope"], "/nope")


def test_play_takes_the_common_options(tmp_path: Path) -> None:
    bag = make_bag(tmp_path, seconds=1.0)
    result = runner.invoke(app, ["play", str(bag), "-i", "--messages", "0:2"])
    assert result.exit_code == 0 and len(result.stdout.splitlines()) == 2
    ended = runner.invoke(app, ["play", str(bag), "-i", "-q", "--type", "/odom", "--end", "0.5"])
    times = [json.loads(line)["time_s"] for line in ended.stdout.splitlines()]
    assert ended.exit_code == 0 and 20 <= len(times) <= 30
    assert max(times) - min(times) <= 0.5
    _refused(["play", str(bag), "-i", "--topics", "/nope"], "/nope")
    nope = runner.invoke(app, ["play", str(bag), "-i", "--topics", "/nope"]).stderr
    assert "/odom" in nope and "/imu" in nope  # the topics there are
    _refused(["play", str(bag), "-i", "--start", "1000"], "--start 1000 selects no message")


def test_export_refuses_an_empty_selection(tmp_path: Path) -> None:
    from nanorec import registry
    from nanorec.archive.reader import ArchiveReader
    from nanorec.errors import EmptySelectionError
    from nanorec.selection import Selection

    bag = make_bag(tmp_path, seconds=1.0)
    out = tmp_path / "out.bag"
    _refused(["export", str(bag), "-o", str(out), "--messages", "5:2"], "--messages 5:2")
    _refused(["export", str(bag), "-o", str(out), "--start", "1000"], "--start 1000")
    assert not out.exists()
    archive = tmp_path / "robot.nanover.zip"
    converter = registry.converters()["rosbag"]
    converter.convert(bag, archive)
    with ArchiveReader(archive) as reader, pytest.raises(EmptySelectionError, match="--start"):
        converter.export(reader, out, ExportRequest(Selection.make(start=1000)))
    assert not out.exists()


def test_an_error_mid_play_starts_its_own_line(tmp_path: Path) -> None:
    """The status line ends before the error's one line (not `... / 5.99   nanorec: ...`);
    after a status line the error exits 1, a problem after what was said (#34 item 10:
    exit status 2 is the one line alone)."""
    from nanorec.archive.layout import use_layout
    from nanorec.archive.reader import ArchiveReader

    archive = tmp_path / "robot.nanover.zip"
    with use_layout("stored"):
        registry.get("rosbag").convert(SAMPLES / "rosbag-robot-bz2.bag", archive)
    with ArchiveReader(archive) as reader:
        position = reader._messages_start + int(reader.index.offset[40])
    data = bytearray(archive.read_bytes())
    data[position] = 0xC1  # a byte msgpack never uses: message 40 cannot be read
    archive.write_bytes(bytes(data))
    _register()
    result = runner.invoke(app, ["play", str(archive), "-i"])
    assert result.exit_code == 1 and result.stderr.startswith("\r [RUNNING]")
    last = result.stderr.split("\n")[-2]
    assert last.startswith("nanorec: ") and "message 40" in last, result.stderr[-300:]
