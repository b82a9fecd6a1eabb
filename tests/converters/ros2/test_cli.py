"""The `ros2 bag` commands on ROS 2 bags, end to end through the CLI: `play` (topic filters,
offsets, durations, play-until to the nanosecond, clock lines), `cat` (CSV, NDJSON, a bag
without definitions and `--msg-path`), `info` (JSON, releases, options refused), `export`
(MCAP as rosbag2 writes it, cuts read back by rosbags and by nanorec), and `nanorec.open`.

The expected messages come from the storage files themselves (the `mcap` package, sqlite3),
never from nanorec."""

from __future__ import annotations

import base64
import contextlib
import csv
import io
import json
import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest

pytest.importorskip("yaml")
pytest.importorskip("mcap")

import nanorec
from nanorec.cli import _register, app
from nanorec.converters.ros.ros2.generate import QOS, messages
from nanorec.converters.ros.ros2.recording import Ros2Recording
from nanorec.converters.ros.ros2.writer import SCHEMA
from tests.conftest import REALDATA, SAMPLES, make_runner

BAG = SAMPLES / "ros2-robot"
DB3 = SAMPLES / "ros2-robot.db3"
MCAP = SAMPLES / "ros2-robot.mcap"
REAL = sorted(
    p
    for p in (REALDATA / "ros2").glob("*")
    if p.is_dir() and (p / "metadata.yaml").is_file() and any(p.glob("*.db3"))
)

_register()

Stamp = tuple[str, int]  # (topic, receive time in ns)


def _run(*args: object) -> tuple[int, str, str]:
    result = make_runner().invoke(app, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


def _lines(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


def _stored(path: Path) -> list[Stamp]:
    """(topic, time) of every message of a storage file or a bag folder, read by sqlite3
    or the mcap package."""
    if path.is_dir():
        return sorted((s for f in sorted(path.iterdir()) for s in _stored_file(f)), key=_by_time)
    return sorted(_stored_file(path), key=_by_time)


def _by_time(stamp: Stamp) -> tuple[int, str]:
    return stamp[1], stamp[0]


def _stored_file(path: Path) -> list[Stamp]:
    if path.suffix == ".db3":
        with sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True) as db:
            rows = db.execute(
                "SELECT topics.name, messages.timestamp FROM messages "
                "JOIN topics ON messages.topic_id = topics.id"
            ).fetchall()
        return [(str(name), int(time)) for name, time in rows]
    if path.suffix == ".mcap":
        from mcap.reader import make_reader

        with path.open("rb") as stream:
            return [
                (channel.topic, message.log_time)
                for _, channel, message in make_reader(stream).iter_messages()
            ]
    return []


@contextlib.contextmanager
def _open(path: Path) -> Iterator[Ros2Recording]:
    """`nanorec.open(path)`, a ROS 2 recording (installed as `nanorec.converters.ros.ros2`: its
    class is compared by name)."""
    with nanorec.open(path) as rec:
        assert type(rec).__name__ == "Ros2Recording" and rec.format == "ros2"
        yield cast(Ros2Recording, rec)


def _played(*args: object) -> list[Stamp]:
    code, stdout, stderr = _run("play", *args, "-i", "-q")
    assert code == 0, stderr
    return sorted(((line["topic"], line["time_ns"]) for line in _lines(stdout)), key=_by_time)


# -- play -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "topics"),
    [
        ((), {"/odom", "/status"}),
        (("--topics", "/status"), {"/status"}),
        (("--topic", "/odom", "--topics", "/status"), {"/odom", "/status"}),
        (("-e", "/od.*"), {"/odom"}),
        (("-e", "od"), None),  # no topic matches whole: refused
        (("-x", "/od.*"), {"/status"}),
        (("-x", "od"), {"/odom", "/status"}),
        (("--exclude-topics", "/odom"), {"/status"}),
        (("--topics", "/status", "-e", "/odom"), {"/odom", "/status"}),
        (("-e", "/.*", "-x", "/s.*"), {"/odom"}),
        (("-e", "/.*", "--exclude-topics", "/odom", "--exclude-topics", "/status"), None),
    ],
)
def test_play_topic_filters(options: tuple[str, ...], topics: set[str] | None) -> None:
    if topics is None:
        code, stdout, stderr = _run("play", BAG, *options, "-i", "-q")
        assert code == 2 and stdout == ""
        assert stderr.count("\n") == 1 and "select no topic" in stderr
        return
    assert _played(BAG, *options) == [s for s in _stored(BAG) if s[0] in topics]


@pytest.mark.parametrize("option", ["-e", "-x"])
def test_play_bad_regex(option: str) -> None:
    code, stdout, stderr = _run("play", BAG, option, "[unclosed", "-i", "-q")
    assert code == 2 and stdout == ""
    assert stderr.count("\n") == 1 and "regular expression" in stderr


@pytest.mark.slow
def test_play_start_offset_and_duration() -> None:
    stored = _stored(BAG)
    times = sorted(t for _, t in stored)
    origin = times[0]
    for first, last in [(0, 10), (25, 400), (100, 101), (300, len(times) - 1)]:
        offset = (times[first] - origin) / 1e9
        duration = (times[last] - times[first]) / 1e9
        want = [s for s in stored if times[first] <= s[1] <= times[last]]
        got = _played(BAG, "--start-offset", offset, "--playback-duration", duration)
        assert got == want, (first, last)
        assert _played(BAG, "--start", offset, "--duration", duration) == want


@pytest.mark.slow
@pytest.mark.parametrize("bag", [BAG, DB3, MCAP], ids=lambda p: p.name)
def test_play_until_nanoseconds(bag: Path) -> None:
    """rosbag2 plays every message stamped <= the until time, to the nanosecond."""
    stored = _stored(bag)
    for _, time in stored[:: max(1, len(stored) // 5)][1:]:
        for until in (time - 1, time, time + 1):
            want = [s for s in stored if s[1] <= until]
            assert _played(bag, "--playback-until-nsec", until) == want, until
    time = stored[len(stored) // 2][1]
    until = round((time / 1e9) * 1e9)
    want = [s for s in stored if s[1] <= until]
    assert _played(bag, "--playback-until-sec", repr(time / 1e9)) == want


def test_play_until_refusals() -> None:
    first = _stored(BAG)[0][1]
    code, _, stderr = _run("play", BAG, "-i", "-q", "--playback-until-nsec", first - 1)
    assert code == 2 and stderr.count("\n") == 1
    both = ("--playback-until-sec", "1.0", "--playback-until-nsec", "1")
    code, _, stderr = _run("play", BAG, "-i", "-q", *both)
    assert code == 2 and "not both" in stderr


@pytest.mark.skipif(not REAL, reason="../shared/realdata/ros2 is not present")
@pytest.mark.parametrize("bag", REAL[:4], ids=lambda p: p.name)
def test_play_until_real_bags(bag: Path) -> None:
    stored = _stored(bag)
    if len(stored) < 3:
        pytest.skip("too few messages")
    time = stored[len(stored) // 2][1]
    for until in (time - 1, time):
        assert _played(bag, "--playback-until-nsec", until) == [s for s in stored if s[1] <= until]


def test_play_clock_lines() -> None:
    code, stdout, stderr = _run(
        "play",
        BAG,
        "-q",
        "--topics",
        "/status",
        "--playback-duration",
        "3",
        "--rate",
        "10",  # 0.3 s of waits: clock ticks fall in them even on a loaded machine
        "--clock",
        "--hz",
        "400",
    )
    assert code == 0, stderr
    lines = _lines(stdout)
    clocks = [line["clock"] for line in lines if "clock" in line]
    played = [line for line in lines if "clock" not in line]
    assert [line["topic"] for line in played] == ["/status"] * 3
    assert clocks, "no clock line"
    assert clocks == sorted(clocks)
    start, end = played[0]["time_s"], played[-1]["time_s"]
    assert all(start - 1e-6 <= c <= end + 1e-6 for c in clocks)
    code, stdout, _ = _run("play", BAG, "-i", "-q", "--topics", "/status")
    assert code == 0 and all("clock" not in line for line in _lines(stdout))


# -- cat ------------------------------------------------------------------------------


def test_cat_csv_columns() -> None:
    code, stdout, stderr = _run("cat", BAG, "--topic", "/odom", "--format", "csv")
    assert code == 0, stderr
    rows = list(csv.DictReader(io.StringIO(stdout)))
    assert list(rows[0]) == [
        "number",
        "time",
        "time_ns",
        "time_s",
        "header.stamp.sec",
        "header.stamp.nanosec",
        "header.frame_id",
        *(f"pose.position.{a}" for a in "xyz"),
        *(f"pose.orientation.{a}" for a in "xyzw"),
    ]
    stored = [t for topic, t in _stored(BAG) if topic == "/odom"]
    assert [int(r["time_ns"]) for r in rows] == stored
    for row in rows:  # the generator stamps each pose with its receive time
        stamp = int(row["header.stamp.sec"]) * 10**9 + int(row["header.stamp.nanosec"])
        assert stamp == int(row["time_ns"]) and row["header.frame_id"] == "map"
    code, _, stderr = _run("cat", BAG, "--format", "csv")
    assert code == 2 and "one --topic" in stderr


@pytest.mark.parametrize("bag", [BAG, DB3, MCAP], ids=lambda p: p.name)
def test_cat_ndjson_every_topic(bag: Path) -> None:
    code, stdout, stderr = _run("cat", bag)
    assert code == 0, stderr
    lines = _lines(stdout)
    assert [(line["topic"], line["time_ns"]) for line in lines] == _stored(bag)
    assert [line["number"] for line in lines] == list(range(len(lines)))
    status = [line for line in lines if line["topic"] == "/status"]
    assert status[0]["type"] == "std_msgs/msg/String"
    assert status[0]["message"] == {"data": "lap 0: all systems nominal"}


def test_cat_unknown_topic() -> None:
    code, stdout, stderr = _run("cat", BAG, "--topic", "/nope")
    assert code == 2 and stdout == ""
    assert stderr.count("\n") == 1 and "/nope" in stderr and "/odom" in stderr


def _bag_without_definitions(path: Path, odom: str, status: str) -> Path:
    """A .db3 as rosbag2 humble wrote it: no message_definitions table; the two topics of
    types `odom` (a PoseStamped) and `status` (a String)."""
    with sqlite3.connect(path) as db:
        for statement in SCHEMA:
            if "message_definitions" not in statement:
                db.execute(statement)
        db.execute("INSERT INTO schema VALUES (3, 'humble')")
        db.execute("INSERT INTO topics VALUES (1, '/odom', ?, 'cdr', ?, '')", (odom, QOS))
        db.execute("INSERT INTO topics VALUES (2, '/status', ?, 'cdr', ?, '')", (status, QOS))
        db.executemany(
            "INSERT INTO messages (timestamp, topic_id, data) VALUES (?, ?, ?)",
            ((ns, key, data) for key, ns, data in messages(2.0)),
        )
    db.close()
    return path


def _msg_path(root: Path) -> Path:
    files = {
        "std_msgs/msg/String.msg": "string data\n",
        "std_msgs/msg/Header.msg": "builtin_interfaces/Time stamp\nstring frame_id\n",
        "builtin_interfaces/msg/Time.msg": "int32 sec\nuint32 nanosec\n",
        "geometry_msgs/msg/PoseStamped.msg": "std_msgs/Header header\nPose pose\n",
        "geometry_msgs/msg/Pose.msg": "Point position\nQuaternion orientation\n",
        "geometry_msgs/msg/Point.msg": "float64 x\nfloat64 y\nfloat64 z\n",
        "geometry_msgs/msg/Quaternion.msg": "float64 x 0\nfloat64 y 0\nfloat64 z 0\nfloat64 w 1\n",
        "robot_msgs/msg/Status.msg": "string data\n",
        "robot_msgs/msg/Odom.msg": "std_msgs/Header header\ngeometry_msgs/Pose pose\n",
    }
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def _payload(value: Any) -> bytes:
    if isinstance(value, str):
        return value.encode()
    assert set(value) == {"base64"}
    return base64.b64decode(value["base64"])


def test_cat_without_definitions_and_msg_path(tmp_path: Path) -> None:
    """Types nanorec does not bundle (robot_msgs) come out as bytes until --msg-path."""
    bag = _bag_without_definitions(
        tmp_path / "humble.db3", "robot_msgs/msg/Odom", "robot_msgs/msg/Status"
    )
    code, stdout, stderr = _run("cat", bag)
    assert code == 0, stderr
    lines = _lines(stdout)
    assert len(lines) == 42
    warnings = [line for line in stderr.splitlines() if "warning" in line]
    assert len(warnings) == 2  # one per type, not one per message
    assert any("robot_msgs/msg/Status" in w for w in warnings)
    assert all("--msg-path" in w for w in warnings)
    from converters.ros.ros2.generate import string

    # the bytes as stored: text when they are UTF-8, {"base64": ...} otherwise
    payloads = [data for _, _, data in messages(2.0)]
    assert [_payload(line["message"]) for line in lines] == payloads
    assert _payload(lines[1]["message"]) == string("lap 0: all systems nominal")
    folder = _msg_path(tmp_path / "msgs")
    code, stdout, stderr = _run("cat", bag, "--msg-path", folder)
    assert code == 0 and "warning" not in stderr, stderr
    lines = _lines(stdout)
    assert lines[1]["message"] == {"data": "lap 0: all systems nominal"}
    assert lines[0]["message"]["pose"]["position"]["x"] == 10.0
    code, stdout, stderr = _run("cat", bag, "--topic", "/status", "--msg-path", folder)
    assert code == 0 and [r["data"] for r in _lines(stdout)] == [
        "lap 0: all systems nominal",
        "lap 1: all systems nominal",
    ]


def test_cat_without_definitions_of_common_types(tmp_path: Path) -> None:
    """Humble's std_msgs and geometry_msgs are bundled: decoded without --msg-path, no
    warning, as with the .msg files."""
    bag = _bag_without_definitions(
        tmp_path / "humble.db3", "geometry_msgs/msg/PoseStamped", "std_msgs/msg/String"
    )
    code, stdout, stderr = _run("cat", bag)
    assert code == 0 and "warning" not in stderr, stderr
    lines = _lines(stdout)
    assert lines[1]["message"] == {"data": "lap 0: all systems nominal"}
    assert lines[0]["message"]["pose"]["position"]["x"] == 10.0
    code, given, stderr = _run("cat", bag, "--msg-path", _msg_path(tmp_path / "msgs"))
    assert code == 0 and given == stdout, stderr


# -- info -----------------------------------------------------------------------------


def test_info_json() -> None:
    code, stdout, stderr = _run("info", BAG, "--json")
    assert code == 0, stderr
    facts = json.loads(stdout)
    assert facts["metadata_from"] == "metadata.yaml"
    assert facts["bag"]["message_count"] == len(_stored(BAG))
    assert [f["name"] for f in facts["files"]] == ["ros2-robot_0.mcap"]
    assert facts["files"][0]["storage"] == "mcap"
    assert facts["bag_size"] == sum(p.stat().st_size for p in BAG.iterdir())
    code, stdout, _ = _run("info", DB3, "--json")
    assert code == 0 and json.loads(stdout)["metadata_from"] == "storage"


@pytest.mark.parametrize("distro", ["humble", "jazzy", "rolling"])
def test_info_distros_from_folder_and_archive(distro: str, tmp_path: Path) -> None:
    archive = tmp_path / "a.nanover.zip"
    assert _run("convert", BAG, "-o", archive)[0] == 0
    extra = ("--sort", "count") if distro == "rolling" else ()
    native = _run("info", BAG, "--tz", "UTC", "--distro", distro, *extra)
    archived = _run("info", archive, "--tz", "UTC", "--distro", distro, *extra)
    assert native[0] == archived[0] == 0
    assert native[1] == archived[1]
    assert "Messages:          630" in native[1]


@pytest.mark.slow
def test_info_options_refused() -> None:
    for distro in ("humble", "jazzy"):
        code, stdout, stderr = _run("info", BAG, "--distro", distro, "--sort", "name")
        assert code == 2 and stdout == "" and "--sort" in stderr
    code, _, stderr = _run("info", BAG, "--distro", "humble", "-v")
    assert code == 2 and "verbose" in stderr
    code, _, stderr = _run("info", BAG, "--distro", "iron")
    assert code == 2
    code, _, stderr = _run("info", BAG, "--sort", "size")
    assert code == 2
    assert _run("info", BAG, "--distro", "jazzy", "-v", "--tz", "UTC")[0] == 0


@pytest.mark.parametrize("storage", [DB3, MCAP], ids=lambda p: p.suffix)
def test_info_single_storage_file(storage: Path) -> None:
    code, stdout, stderr = _run("info", storage, "--tz", "UTC")
    assert code == 0, stderr
    # the path as typed, as rosbag2's plugins print it (test_info_files_line.py: each case)
    assert f"\nFiles:             {storage}\n" in stdout
    assert f"Messages:          {len(_stored(storage))}" in stdout
    assert "Topic: /odom" in stdout and "Topic: /status" in stdout


def test_info_pre_2024_fraction_changes_only_the_fraction() -> None:
    args = ("info", BAG, "--tz", "UTC", "--distro", "jazzy")
    new, old = _run(*args)[1], _run(*args, "--pre-2024-fraction")[1]
    assert new != old
    new_lines, old_lines = new.splitlines(), old.splitlines()
    assert len(new_lines) == len(old_lines)
    for a, b in zip(new_lines, old_lines, strict=True):
        if a != b:
            assert re.sub(r"\.\d+", ".F", a) == re.sub(r"\.\d+", ".F", b)


# -- export ---------------------------------------------------------------------------


@pytest.mark.parametrize("bag", [BAG, DB3], ids=lambda p: p.name)
def test_export_mcap_as_rosbag2_writes_it(bag: Path, tmp_path: Path) -> None:
    from mcap.reader import make_reader

    out = tmp_path / "out.mcap"
    code, _, stderr = _run("export", bag, "-o", out, "--format", "mcap")
    assert code == 0, stderr
    with out.open("rb") as stream, _open(bag) as rec:
        reader = make_reader(stream)
        assert reader.get_header().profile == "ros2"
        got = list(reader.iter_messages())
        assert len(got) == len(rec)
        for number, (schema, channel, message) in enumerate(got):
            assert schema is not None
            assert channel.message_encoding == "cdr"
            assert schema.encoding == "ros2msg" and schema.data
            assert channel.topic == rec.kind_of(number)
            assert schema.name == rec.type_of(channel.topic)
            assert message.log_time == message.publish_time == rec.time_ns(number)
            assert message.data == rec.serialized(number)
            assert "offered_qos_profiles" in channel.metadata


def _cut_stamps(out: Path) -> list[Stamp]:
    if out.is_dir():
        from rosbags.rosbag2 import Reader

        with Reader(out) as reader:
            return sorted(((c.topic, t) for c, t, _ in reader.messages()), key=_by_time)
    return _stored(out)


@pytest.mark.parametrize("source", [BAG, DB3, MCAP], ids=lambda p: p.name)
@pytest.mark.parametrize(
    "cut", [("--messages", "5:50"), ("--topic", "/status"), ("--start", "2", "--end", "4.5")]
)
def test_export_cuts(source: Path, cut: tuple[str, ...], tmp_path: Path) -> None:
    if source.is_dir():
        pytest.importorskip("rosbags.rosbag2")
    stored = _stored(source)
    out = tmp_path / ("cut" if source.is_dir() else f"cut{source.suffix}")
    code, stdout, stderr = _run("export", source, "-o", out, *cut)
    assert code == 0, stdout + stderr
    assert out.is_dir() == source.is_dir()
    if cut[0] == "--messages":
        want = stored[5:50]
    elif cut[0] == "--topic":
        want = [s for s in stored if s[0] == "/status"]
    else:
        origin = stored[0][1]
        want = [s for s in stored if origin + 2e9 <= s[1] <= origin + 4.5e9]
    assert _cut_stamps(out) == want
    with _open(out) as rec:
        assert [(rec.kind_of(n), rec.time_ns(n)) for n in range(len(rec))] == want
    with _open(source) as whole, _open(out) as part:
        by_time = {(whole.kind_of(n), whole.time_ns(n)): whole.raw(n) for n in range(len(whole))}
        for n in range(len(part)):
            assert part.raw(n) == by_time[(part.kind_of(n), part.time_ns(n))]


# -- Python ---------------------------------------------------------------------------


def test_open_a_bag_folder() -> None:
    with _open(BAG) as rec:
        assert type(rec).__name__ == "Ros2Recording" and rec.format == "ros2"
        assert rec.table_kinds() == ["/odom", "/status"]
        rows = list(rec.rows("/status"))
        assert len(rows) == 30
        assert rows[0]["data"] == "lap 0: all systems nominal"
        assert {"number", "time", "time_ns", "time_s"} <= set(rows[0])
        latest = rec.at(1.5)
        assert set(latest) == {"/odom", "/status"}
        assert latest["/status"]["data"] == "lap 1: all systems nominal"
        last_odom = max(
            n for n in range(len(rec)) if rec.kind_of(n) == "/odom" and rec.time_of(n) <= 1.5
        )
        assert latest["/odom"]["header"]["stamp"] == rec.decode(last_odom)["header"]["stamp"]
        summary = rec.summary()
        again = json.loads(json.dumps(summary))
        assert again["metadata_from"] == "metadata.yaml"
        assert again["bag"]["message_count"] == len(rec) == 630


@pytest.mark.parametrize("storage", ["sqlite3", "mcap"])
def test_a_generated_empty_bag_has_its_metadata(storage: str, tmp_path: Path) -> None:
    """`generate --seconds 0` writes a bag folder of no messages, metadata.yaml included
    (it failed on the min() of no time stamps)."""
    from nanorec.converters.ros.ros2.generate import generate

    bag = generate(tmp_path / "empty", seconds=0, storage=storage)
    _register()
    result = make_runner().invoke(app, ["info", str(bag), "--json"])
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["bag"]["message_count"] == 0
