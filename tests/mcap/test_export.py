"""`nanorec.outputs.mcap`: the format-neutral writer (records from `mcap_messages`) and the generic
JSON fallback, read back with the `mcap` package's reader (see `doctor.py`)."""

from __future__ import annotations

import json
import math
import random
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mcap.reader import make_reader

from nanorec import ArchiveReader, ArchiveWriter
from nanorec.errors import FormatError, OutputExistsError, UnsupportedError, UsageError
from nanorec.outputs.mcap import McapRecord, export_mcap, json_bytes
from nanorec.recording import ArchiveRecording
from nanorec.selection import Selection
from tests.conftest import REALDATA
from tests.mcap.conformance import check_mcap_export
from tests.mcap.doctor import doctor

ROS_SCHEMA = b"string data\n"
POINT_SCHEMA = b"float64 x\nfloat64 y\nfloat64 z\n"


def ros_records(count: int = 50, seed: int = 0) -> list[McapRecord]:
    """Records as a ROS1 bag gives them: ros1msg schemas, opaque payloads, metadata."""
    rng = random.Random(seed)
    records = []
    chatter = {"topic": "/chatter", "callerid": "/talker", "latching": "0"}
    latched = {"topic": "/map", "callerid": "/map_server", "latching": "1"}
    for i in range(count):
        topic, schema, name, meta = (
            ("/chatter", ROS_SCHEMA, "std_msgs/String", chatter)
            if i % 3
            else ("/map", POINT_SCHEMA, "geometry_msgs/Point", latched)
        )
        payload = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 40)))
        t = 1_600_000_000_000_000_000 + i * 1_000_000
        records.append(
            McapRecord(topic, name, "ros1msg", schema, "ros1", t, t - 5, payload, meta, i)
        )
    return records


class FakeRecording:
    """The least a recording needs for MCAP export: `mcap_messages`."""

    format = "fake"

    def __init__(self, records: list[McapRecord], fail_at: int | None = None) -> None:
        self.records = records
        self.fail_at = fail_at

    def mcap_messages(self, selection: Selection | None) -> Iterator[McapRecord]:
        for i, record in enumerate(self.records):
            if i == self.fail_at:
                raise FormatError("damaged message", offset=1234)
            yield record

    def summary(self) -> dict[str, Any]:
        return {"format": self.format, "messages": len(self.records), "nan": math.nan}


def test_records_are_written_byte_identical(tmp_path: Path) -> None:
    records = ros_records()
    out = tmp_path / "out.mcap"
    lines = export_mcap(FakeRecording(records), out)
    assert lines[0].startswith(f"{out}: {out.stat().st_size} bytes, 50 messages on 2 channels")
    checked = doctor(out)
    assert [m.data for m in checked.messages] == [r.data for r in records]
    assert [m.log_time for m in checked.messages] == [r.log_time_ns for r in records]
    assert [m.publish_time for m in checked.messages] == [r.publish_time_ns for r in records]
    assert [m.sequence for m in checked.messages] == [r.sequence for r in records]
    by_topic = {c.topic: c for c in checked.channels.values()}
    assert by_topic["/map"].metadata == {
        "topic": "/map",
        "callerid": "/map_server",
        "latching": "1",
    }
    assert by_topic["/chatter"].message_encoding == "ros1"
    schema = checked.schemas[by_topic["/map"].schema_id]
    assert (schema.name, schema.encoding, schema.data) == (
        "geometry_msgs/Point",
        "ros1msg",
        POINT_SCHEMA,
    )
    with out.open("rb") as stream:
        reader = make_reader(stream)
        assert reader.get_header().profile == "ros1"
        metadata = {m.name: m.metadata for m in reader.iter_metadata()}
    assert metadata["nanorec"] == {"format": "fake", "messages": "50", "nan": "null"}


def test_channels_differ_by_metadata_and_schema(tmp_path: Path) -> None:
    base = ros_records(4)
    other = [
        McapRecord(
            "/chatter",
            "std_msgs/String",
            "ros1msg",
            ROS_SCHEMA,
            "ros1",
            9,
            9,
            b"x",
            {"callerid": "/other"},
        ),
        McapRecord("/chatter", "other/String", "ros1msg", b"string s\n", "ros1", 9, 9, b"y"),
    ]
    out = tmp_path / "out.mcap"
    export_mcap(FakeRecording(base + other), out)
    checked = doctor(out)
    assert len(checked.channels) == 4
    assert len(checked.schemas) == 3
    assert checked.topic_counts() == {"/map": 2, "/chatter": 4}


@pytest.mark.parametrize("compression", ["zstd", "lz4", "none"])
def test_compressions_read_back(tmp_path: Path, compression: str) -> None:
    out = tmp_path / "out.mcap"
    records = ros_records(200)
    export_mcap(FakeRecording(records), out, compression=compression, chunk_size=512)
    assert [m.data for m in doctor(out).messages] == [r.data for r in records]


def test_empty_selection_writes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "out.mcap"
    with pytest.raises(UsageError, match="no message"):
        export_mcap(FakeRecording([]), out)
    assert list(tmp_path.iterdir()) == []


def test_existing_output_is_kept_unless_overwrite(tmp_path: Path) -> None:
    out = tmp_path / "out.mcap"
    out.write_bytes(b"mine")
    with pytest.raises(OutputExistsError):
        export_mcap(FakeRecording(ros_records(3)), out)
    assert out.read_bytes() == b"mine"
    export_mcap(FakeRecording(ros_records(3)), out, overwrite=True)
    assert len(doctor(out).messages) == 3


def test_failure_midway_leaves_no_file(tmp_path: Path) -> None:
    out = tmp_path / "out.mcap"
    with pytest.raises(FormatError, match="damaged message"):
        export_mcap(FakeRecording(ros_records(30), fail_at=20), out)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("time_ns", [-1, 2**64])
def test_times_outside_mcap_are_format_errors(tmp_path: Path, time_ns: int) -> None:
    bad = McapRecord("/t", "s", "jsonschema", b"{}", "json", time_ns, 0, b"{}")
    with pytest.raises(FormatError, match="message 3 on /t"):
        export_mcap(FakeRecording([*ros_records(3), bad]), tmp_path / "out.mcap")
    assert list(tmp_path.iterdir()) == []


def test_bad_compression_is_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="compression"):
        export_mcap(FakeRecording(ros_records(3)), tmp_path / "o.mcap", compression="bz2")


def test_without_the_mcap_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "mcap.writer", None)
    with pytest.raises(UnsupportedError, match=r"nanorec\[mcap\]"):
        export_mcap(FakeRecording(ros_records(3)), tmp_path / "o.mcap")


# -- the generic fallback ----------------------------------------------------------------------


MESSAGES: list[dict[str, Any]] = [
    {"state": {"x": 1.5, "bad": math.nan, "inf": -math.inf, "blob": b"\xff\x00", "n": [1, 2]}},
    {"frame": {"positions": [0.0, 1.0], "text": "é"}, "state": {"x": 2}},
    {"frame": {"positions": []}},
    {"state": {"x": 3}},
]


@pytest.fixture
def archive(tmp_path: Path) -> Path:
    path = tmp_path / "plain.nanover.zip"
    with ArchiveWriter(path) as writer:
        for i, message in enumerate(MESSAGES):
            writer.write(message, timestamp_us=1_000_000 + i * 250_000)
    return path


def strict_json(data: bytes) -> Any:
    def refuse(name: str) -> Any:
        raise AssertionError(f"{name} in JSON")

    return json.loads(data, parse_constant=refuse)


def test_generic_json_per_kind(archive: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.mcap"
    with ArchiveRecording(ArchiveReader(archive)) as recording:
        lines = export_mcap(recording, out)
        stamps = recording.reader.index.timestamp_us.tolist()
    assert "4 messages on 2 channels" in lines[0]
    checked = doctor(out)
    assert checked.topic_counts() == {"/state": 2, "/frame": 2}
    for number, message in enumerate(checked.messages):
        assert message.sequence == number
        assert message.log_time == message.publish_time == stamps[number] * 1000
        channel = checked.channels[message.channel_id]
        assert (channel.message_encoding, checked.schemas[channel.schema_id].encoding) == (
            "json",
            "jsonschema",
        )
        schema = json.loads(checked.schemas[channel.schema_id].data)
        assert schema["title"] == channel.topic[1:] and schema["type"] == "object"
    first = strict_json(checked.messages[0].data)
    assert first == {
        "state": {"x": 1.5, "bad": None, "inf": None, "blob": {"base64": "/wA="}, "n": [1, 2]}
    }
    assert strict_json(checked.messages[1].data)["frame"]["text"] == "é"


def test_generic_selection(archive: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.mcap"
    with ArchiveRecording(ArchiveReader(archive)) as recording:
        export_mcap(recording, out, selection=Selection.make(start=0.25, end=0.5))
        assert [m.sequence for m in doctor(out).messages] == [1, 2]
        export_mcap(recording, out, selection=Selection.make(kinds=["state"]), overwrite=True)
        checked = doctor(out)
        assert [m.sequence for m in checked.messages] == [0, 1, 3]
        assert checked.topic_counts() == {"/state": 3}
        with pytest.raises(UsageError, match="no message"):
            export_mcap(recording, out, selection=Selection.make(start=5), overwrite=True)
        with pytest.raises(UsageError, match="recording itself"):
            export_mcap(recording, archive, overwrite=True)


@pytest.mark.realdata
def test_real_nanover_recording(tmp_path: Path) -> None:
    path = REALDATA / "nanover" / "nanotube-example-recording.nanover.zip"
    if not path.is_file():
        pytest.skip(f"{path} is not present")
    with ArchiveRecording(ArchiveReader(path)) as recording:
        kinds = recording.summary()["kinds"]
        count = len(recording)
        checked = check_mcap_export(recording, tmp_path, validate_every=9)
    assert len(checked.messages) == count
    assert set(checked.topic_counts()) == {"/" + kind for kind in kinds if kind}


def test_generic_conformance(archive: Path, tmp_path: Path) -> None:
    with ArchiveRecording(ArchiveReader(archive)) as recording:
        check_mcap_export(recording, tmp_path)


@pytest.mark.parametrize("fast", [True, False], ids=["orjson", "json"])
def test_json_bytes(fast: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """orjson (when installed) and the json module give the same values, NaN as null."""
    import nanorec.outputs.mcap

    if not fast:
        monkeypatch.setattr(nanorec.outputs.mcap, "_orjson", None)
    elif nanorec.outputs.mcap._orjson is None:
        pytest.skip("orjson is not installed")
    value = {
        "a": [1.5, math.nan, -math.inf, 2**70],
        "b": b"\xff",
        "é": "ü",
        "n": {1: None, "t": (1, 2)},
        "x": np.float32(0.5),
    }
    assert strict_json(json_bytes(value)) == {
        "a": [1.5, None, None, 2**70],
        "b": {"base64": "/w=="},
        "é": "ü",
        "n": {"1": None, "t": [1, 2]},
        "x": 0.5,
    }
    assert strict_json(json_bytes({"f": [0.1, math.inf]})) == {"f": [0.1, None]}


@st.composite
def record_lists(draw: st.DrawFn) -> list[McapRecord]:
    """Records over a few topics whose schema, encoding and metadata vary at random."""
    schemas = [b"a", b"b\n", b""]
    metas: list[dict[str, str]] = [{}, {"callerid": "/x"}, {"callerid": "/y", "latching": "1"}]
    count = draw(st.integers(1, 40))
    times = sorted(draw(st.lists(st.integers(0, 2**63), min_size=count, max_size=count)))
    records = []
    for i, time_ns in enumerate(times):
        records.append(
            McapRecord(
                topic=draw(st.sampled_from(["/a", "/b", "c"])),
                schema_name=draw(st.sampled_from(["pkg/A", "pkg/B"])),
                schema_encoding="ros1msg",
                schema_data=draw(st.sampled_from(schemas)),
                message_encoding=draw(st.sampled_from(["ros1", "json"])),
                log_time_ns=time_ns,
                publish_time_ns=draw(st.integers(0, 2**64 - 1)),
                data=draw(st.binary(max_size=64)),
                channel_metadata=draw(st.sampled_from(metas)),
                sequence=i,
            )
        )
    return records


@settings(max_examples=40, deadline=None)
@given(records=record_lists())
def test_any_records_round_trip(records: list[McapRecord], tmp_path_factory: Any) -> None:
    """Whatever the mix, each message comes back on a channel with exactly its record's
    topic, encodings, schema and metadata, with its times, sequence and bytes."""
    out = tmp_path_factory.mktemp("prop") / "out.mcap"
    export_mcap(FakeRecording(records), out, chunk_size=256)
    checked = doctor(out)
    assert len(checked.messages) == len(records)
    for message, record in zip(checked.messages, records, strict=True):
        channel = checked.channels[message.channel_id]
        schema = checked.schemas[channel.schema_id]
        assert (channel.topic, channel.message_encoding, channel.metadata) == (
            record.topic,
            record.message_encoding,
            dict(record.channel_metadata),
        )
        assert (schema.name, schema.encoding, schema.data) == (
            record.schema_name,
            record.schema_encoding,
            record.schema_data,
        )
        assert (message.log_time, message.publish_time, message.sequence, message.data) == (
            record.log_time_ns,
            record.publish_time_ns,
            record.sequence,
            record.data,
        )
    distinct = {
        (
            r.topic,
            r.message_encoding,
            r.schema_name,
            r.schema_data,
            tuple(r.channel_metadata.items()),
        )
        for r in records
    }
    assert len(checked.channels) == len(distinct)
