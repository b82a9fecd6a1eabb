"""ROS1-encoded MCAP (profile `ros1`: `ros1msg` schemas, `ros1` messages), as our own
`export X.bag --format mcap` and `mcap-ros1-support`'s writer write it: the ROS 2 converter takes
it, every message decodes to the very value the ROS1 converter gives for the same message of
the original bag, and `export --format ros1` gives a bag of every message, payloads verbatim,
ROS's md5sums, the definitions and latching as they were. And an export that would write none
of its messages is an error, not an empty bag."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("mcap")

from nanorec import registry
from nanorec.cli import _register, app
from nanorec.converters.ros.ros1.md5 import md5sum
from nanorec.converters.ros.ros1.writer import BagWriter
from tests.conftest import REALDATA, make_runner

REAL_BAGS = sorted((REALDATA / "rosbag").glob("*.bag")) if REALDATA.is_dir() else []
_runner = make_runner()


def nanorec(*args: object) -> tuple[int, str, str]:
    _register()
    result = _runner.invoke(app, [str(a) for a in args])
    assert isinstance(result.exception, SystemExit | None), (args, result.exception)
    return result.exit_code, result.stdout, result.stderr


def opened(path: Path) -> Any:
    """`registry.open(path)`, typed loosely: these tests use each format's own recording."""
    return registry.open(path)


def same(a: Any, b: Any) -> bool:
    """Equal values of equal kinds: numpy arrays by dtype and elements, not by truthiness."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (
            isinstance(a, np.ndarray)
            and isinstance(b, np.ndarray)
            and a.dtype == b.dtype
            and np.array_equal(a, b)
        )
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(map(same, a, b))
    return type(a) is type(b) and bool(a == b)


def assert_same_messages(original: Any, other: Any) -> None:
    """`other` holds `original`'s messages in its order: topic, type, time, decoded value and
    payload bytes, message by message."""
    assert len(other) == len(original)
    for number in range(len(original)):
        want, got = original.decoded(number), other.decoded(number)
        assert isinstance(got["message"], dict), (number, got["topic"])
        assert (got["topic"], got["type"], got["time"]) == (
            want["topic"],
            want["type"],
            want["time"],
        ), number
        assert same(got["message"], want["message"]), (number, want["topic"])
        assert other.raw(number) == original.raw(number), number


def connections_by_topic(recording: Any) -> dict[str, set[tuple[str, str, str, bool]]]:
    """Per topic, its connections' (type, md5sum, definition, latching)."""
    found: dict[str, set[tuple[str, str, str, bool]]] = {}
    for c in recording.meta.connections.values():
        found.setdefault(c.topic, set()).add((c.type, c.md5sum, c.definition, c.latching))
    return found


def assert_back_as_the_bag(bag: Path, mcap: Path, tmp_path: Path) -> None:
    """`export --format ros1` of `mcap` gives every message of `bag` again, with its
    connections' types, md5sums, definitions and latching."""
    back = tmp_path / "back.bag"
    code, out, err = nanorec("export", mcap, "--format", "ros1", "-o", back)
    assert code == 0, err
    assert "left out" not in out
    with opened(bag) as original, opened(back) as again:
        assert again.format == "rosbag"
        assert_same_messages(original, again)
        before, after = connections_by_topic(original), connections_by_topic(again)
        assert after.keys() == before.keys()
        for topic, (connection,) in after.items():  # one connection per topic
            kind, md5, text, latched = connection
            assert md5 == md5sum(kind, text)
            assert (kind, md5, text) in {c[:3] for c in before[topic]}, topic
            assert latched == any(c[3] for c in before[topic]), topic


# -- our own ROS1 -> MCAP export --------------------------------------------------------------


@pytest.mark.parametrize("bag", REAL_BAGS, ids=[p.stem for p in REAL_BAGS])
@pytest.mark.realdata
@pytest.mark.usefixtures("realdata_dir")
def test_our_mcap_of_a_real_bag_decodes_and_comes_back(bag: Path, tmp_path: Path) -> None:
    mcap = tmp_path / "x.mcap"
    code, _, err = nanorec("export", bag, "--format", "mcap", "-o", mcap)
    assert code == 0, err
    archive = tmp_path / "x.nanover.zip"
    code, _, err = nanorec("convert", mcap, "-o", archive)
    assert code == 0, err
    with opened(bag) as original, opened(archive) as converted:
        assert converted.format == "ros2"
        assert_same_messages(original, converted)
    assert_back_as_the_bag(bag, archive, tmp_path)


@pytest.mark.parametrize("bag", REAL_BAGS[:1], ids=[p.stem for p in REAL_BAGS[:1]])
@pytest.mark.realdata
@pytest.mark.usefixtures("realdata_dir")
def test_info_and_cat_of_a_ros1_mcap(bag: Path, tmp_path: Path) -> None:
    mcap = tmp_path / "x.mcap"
    assert nanorec("export", bag, "--format", "mcap", "-o", mcap)[0] == 0
    with opened(bag) as original:
        count = len(original)
    code, text, err = nanorec("info", mcap)
    assert code == 0, err
    assert f"Messages:          {count}\n" in text
    assert "Serialization Format: ros1" in text and "Serialization Format: cdr" not in text
    code, text, err = nanorec("info", mcap, "--json")
    assert code == 0, err
    assert '"serialization_format": "ros1"' in text
    code, text, err = nanorec("cat", mcap)
    assert code == 0 and "warning" not in err, err
    assert text == nanorec("cat", bag)[1]  # the same lines as the bag's own


# -- a second writer: mcap-ros1-support (genpy serializes each message again) -----------------


def write_with_mcap_ros1(bag: Path, output: Path) -> None:
    """Every message of `bag` through `mcap_ros1.writer.Writer`: genpy classes made from each
    connection's definition, each payload deserialized and written by the writer."""
    writer_module = pytest.importorskip("mcap_ros1.writer")
    dynamic = pytest.importorskip("mcap_ros1._vendor.genpy.dynamic")
    with opened(bag) as original, output.open("wb") as stream:
        writer = writer_module.Writer(stream)
        classes: dict[str, Any] = {}
        for number in range(len(original)):
            conn = int(original.meta.conn[number])
            connection = original.meta.connections[conn]
            if connection.type not in classes:
                made = dynamic.generate_dynamic(connection.type, connection.definition)
                classes[connection.type] = made[connection.type]
            message = classes[connection.type]().deserialize(original.raw(number))
            time = original.time_ns(number)
            writer.write_message(connection.topic, message, log_time=time, publish_time=time)
        writer.finish()


@pytest.mark.parametrize("bag", REAL_BAGS, ids=[p.stem for p in REAL_BAGS])
@pytest.mark.realdata
@pytest.mark.usefixtures("realdata_dir")
def test_mcap_ros1_support_file_decodes_and_comes_back(bag: Path, tmp_path: Path) -> None:
    mcap = tmp_path / "genpy.mcap"
    write_with_mcap_ros1(bag, mcap)
    with opened(bag) as original, opened(mcap) as converted:
        assert converted.format == "ros2"
        assert converted.meta.files[0]["extra"]["profile"] == "ros1"
        assert_same_messages(original, converted)
    back = tmp_path / "back.bag"
    code, out, err = nanorec("export", mcap, "--format", "ros1", "-o", back)
    assert code == 0 and "left out" not in out, err
    with opened(bag) as original, opened(back) as again:
        assert_same_messages(original, again)
        before = connections_by_topic(original)
        for topic, (connection,) in connections_by_topic(again).items():
            kind, md5, text, latched = connection
            assert (kind, md5, text) in {c[:3] for c in before[topic]}, topic
            assert not latched  # this writer keeps no connection header


# -- synthetic and broken input ---------------------------------------------------------------


def ros1_mcap(path: Path, messages: Iterator[tuple[str, str, str, bytes, int]]) -> Path:
    """An MCAP of profile `ros1` from (topic, type, definition, payload, time) tuples, with a
    connection header (latching "1") as channel metadata."""
    from mcap.writer import Writer

    with path.open("wb") as stream:
        writer = Writer(stream)
        writer.start(profile="ros1", library="test")
        schemas: dict[str, int] = {}
        channels: dict[str, int] = {}
        for topic, kind, definition, data, time in messages:
            if kind not in schemas:
                schemas[kind] = writer.register_schema(kind, "ros1msg", definition.encode())
            if topic not in channels:
                metadata = {"callerid": "/talker", "latching": "1"}
                channels[topic] = writer.register_channel(topic, "ros1", schemas[kind], metadata)
            writer.add_message(channels[topic], time, data, time)
        writer.finish()
    return path


def test_synthetic_ros1_mcap_latched_and_decoded(tmp_path: Path) -> None:
    text = "int32 a\nstring b\n"
    payloads = [(i).to_bytes(4, "little") + b"\x02\x00\x00\x00hi" for i in range(3)]
    mcap = ros1_mcap(
        tmp_path / "x.mcap",
        (("/t", "pkg/Thing", text, p, 10**9 + i) for i, p in enumerate(payloads)),
    )
    with opened(mcap) as converted:
        assert [converted.decode(n) for n in range(3)] == [{"a": i, "b": "hi"} for i in range(3)]
    back = tmp_path / "back.bag"
    code, _, err = nanorec("export", mcap, "--format", "ros1", "-o", back)
    assert code == 0, err
    with opened(back) as again:
        assert [again.raw(n) for n in range(3)] == payloads
        (connection,) = again.meta.connections.values()
        assert connection.latching and connection.callerid == "/talker"
        assert connection.definition == text
        assert connection.md5sum == md5sum("pkg/Thing", text)


def test_mcap_export_of_a_ros1_mcap_keeps_its_encoding_and_header(tmp_path: Path) -> None:
    from mcap.reader import make_reader

    text = "int32 a\n"
    mcap = ros1_mcap(
        tmp_path / "x.mcap",
        (("/t", "pkg/Thing", text, i.to_bytes(4, "little"), 10**9 + i) for i in range(2)),
    )
    again = tmp_path / "again.mcap"
    code, _, err = nanorec("export", mcap, "--format", "mcap", "-o", again)
    assert code == 0, err
    with again.open("rb") as stream:
        reader = make_reader(stream)
        assert reader.get_header().profile == "ros1"
        found = [(s.encoding, s.data, c.message_encoding, c.metadata, m.data)
                 for s, c, m in reader.iter_messages()]  # fmt: skip
    header = {"callerid": "/talker", "latching": "1"}
    assert found == [("ros1msg", text.encode(), "ros1", header, i.to_bytes(4, "little"))
                     for i in range(2)]  # fmt: skip


def test_undecodable_ros1_mcap_exports_nothing_and_says_why(tmp_path: Path) -> None:
    """A definition naming a type it does not hold: its messages stay bytes (said once), and
    an export to ROS1 would hold none of them: exit 2, one line, no file."""
    mcap = ros1_mcap(
        tmp_path / "x.mcap",
        (("/t", "pkg/Thing", "pkg/Missing m\n", b"\x00" * 4, 10**9 + i) for i in range(3)),
    )
    with opened(mcap) as converted:
        converted.on_undecodable = lambda error: None
        assert converted.decode(0) == b"\x00" * 4
    back = tmp_path / "back.bag"
    code, _, err = nanorec("export", mcap, "--format", "ros1", "-o", back)
    assert code == 2
    assert err.startswith("nanorec: 0 of 3 messages: no topic maps to ROS1 (/t (pkg/Thing): ")
    assert len(err.strip().splitlines()) == 1
    assert not back.exists() and not list(tmp_path.glob(".back.bag*"))


def test_ros1_bag_that_maps_to_nothing_in_ros2_is_an_error(tmp_path: Path) -> None:
    """A ROS1 type whose field name ROS 2 refuses: `export --format ros2` would write 0 of 2."""
    bag = tmp_path / "x.bag"
    stream = io.BytesIO()
    writer = BagWriter(stream)
    fields = (
        (b"md5sum", b"0" * 32),
        (b"message_definition", b"int32 Bad\n"),
        (b"topic", b"/odd"),
        (b"type", b"pkg/Odd"),
    )
    writer.add_connection(0, "/odd", fields)
    for i in range(2):
        writer.write(0, 10**9 + i, i.to_bytes(4, "little"))
    writer.close()
    bag.write_bytes(stream.getvalue())
    out_dir = tmp_path / "ros2"
    code, _, err = nanorec("export", bag, "--format", "ros2", "-o", out_dir)
    assert code == 2
    assert err.startswith("nanorec: 0 of 2 messages: no topic maps to ROS 2 (/odd (pkg/Odd): ")
    assert len(err.strip().splitlines()) == 1
    assert not out_dir.exists()
