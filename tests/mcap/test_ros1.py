"""ROS1 bags -> MCAP (the rosbag converter's `mcap_messages`, through
`nanorec.outputs.mcap.ros1_record`): compared with an independent reader (`rosbags`), every payload
byte-identical in the MCAP, topic counts and times as ROS's own `rosbag info` printed them,
and every message decodable by the `mcap-ros1-support` decoder from our schema alone."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from nanorec import registry
from nanorec.outputs.mcap import export_mcap, ros1_record
from tests.conftest import REALDATA, SAMPLES
from tests.mcap.conformance import check_mcap_export
from tests.mcap.doctor import doctor

rosbag1 = pytest.importorskip("rosbags.rosbag1")
decoder = pytest.importorskip("mcap_ros1.decoder")

BAGS = sorted((REALDATA / "rosbag").glob("*.bag")) if (REALDATA / "rosbag").is_dir() else []


def ros1_type(msgtype: str) -> str:
    """rosbags names types the ROS 2 way (`std_msgs/msg/String`); a bag says `std_msgs/String`."""
    return msgtype.replace("/msg/", "/")


def info_yaml(path: Path) -> tuple[float, float, dict[str, int]]:
    """start, end and messages per topic from ROS's `rosbag info --yaml` printout."""
    text = path.with_suffix(".rosbag-info.yaml").read_text()
    start = float(re.search(r"^start: (\S+)", text, re.M).group(1))  # type: ignore[union-attr]
    end = float(re.search(r"^end: (\S+)", text, re.M).group(1))  # type: ignore[union-attr]
    topics = dict(re.findall(r"- topic: (\S+)\n\s+type: \S+\n\s+messages: (\d+)", text))
    return start, end, {topic: int(count) for topic, count in topics.items()}


@pytest.mark.slow
@pytest.mark.realdata
@pytest.mark.parametrize("bag", BAGS, ids=[b.name for b in BAGS])
def test_real_bag_to_mcap(bag: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.mcap"
    with registry.open(bag) as recording:
        export_mcap(recording, out)
    checked = doctor(out)
    with rosbag1.Reader(bag) as reader:
        payloads = [bytes(data) for _, _, data in reader.messages()]
        types = {c.topic: ros1_type(c.msgtype) for c in reader.connections}
        digests = {c.topic: c.digest for c in reader.connections}
    assert sorted(m.data for m in checked.messages) == sorted(payloads)
    start, end, topics = info_yaml(bag)
    assert checked.topic_counts() == topics
    times = [m.log_time for m in checked.messages]
    assert times[0] / 1e9 == pytest.approx(start, abs=1e-6)
    assert times[-1] / 1e9 == pytest.approx(end, abs=1e-6)
    for channel in checked.channels.values():
        assert channel.metadata["md5sum"] == digests[channel.topic]
        assert channel.metadata["topic"] == channel.topic
        assert set(channel.metadata) <= {"topic", "md5sum", "callerid", "latching"}
        schema = checked.schemas[channel.schema_id]
        assert (schema.encoding, channel.message_encoding) == ("ros1msg", "ros1")
        assert schema.name == types[channel.topic]
    factory = decoder.DecoderFactory()
    for message in checked.messages:
        channel = checked.channels[message.channel_id]
        decode = factory.decoder_for("ros1", checked.schemas[channel.schema_id])
        assert decode is not None
        decode(message.data)


def test_ros1_record_metadata() -> None:
    record = ros1_record(
        topic="/map",
        datatype="nav_msgs/OccupancyGrid",
        message_definition="int8[] data\n",
        data=b"\x00\x00\x00\x00",
        time_ns=5,
        connection_header={"callerid": b"/map_server", "latching": b"1", "md5sum": b"x"},
    )
    assert record.channel_metadata == {"callerid": "/map_server", "latching": "1", "md5sum": "x"}
    assert record.schema_data == b"int8[] data\n"
    assert (record.schema_encoding, record.message_encoding) == ("ros1msg", "ros1")


def test_sample_bags_pass_the_conformance_checks(tmp_path: Path) -> None:
    for sample in sorted(SAMPLES.glob("rosbag-robot*.bag")):
        with registry.open(sample) as recording:
            check_mcap_export(recording, tmp_path)
