"""A ROS 2 bag's messages for MCAP (`nanorec export BAG --format mcap`), as rosbag2's MCAP
storage writes them: profile `ros2`, `cdr` messages, each type's definition as its
`ros2msg`/`ros2idl` schema (the bag's, else the recording's resolved one: a Humble bag's
common types get their bundled definitions, so MCAP viewers decode them), the channel's QoS
and type hash as channel metadata, log and publish time the receive time; the CDR bytes
untouched (inflated when the bag compressed each message)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from nanorec.mcap import McapRecord, Progress, Reporter
from nanorec.selection import Selection

from .storage import Topic

if TYPE_CHECKING:
    from .recording import Ros2Recording
    from .storage import Topic


def mcap_messages(
    recording: Ros2Recording, selection: Selection | None, progress: Progress | None = None
) -> Iterator[McapRecord]:
    meta = recording.meta
    numbers = (selection or Selection()).numbers(recording.reader.index)
    reporter = Reporter(progress, len(numbers), every=1024)
    topics: dict[str, Topic] = {}
    for index in range(len(meta.files)):
        for declared in meta.topics(index):
            topics.setdefault(declared.name, declared)
    schemas: dict[str, tuple[str, bytes]] = {}
    for number in numbers.tolist():
        name = recording.kind_of(number)
        topic = topics.get(name)
        type_name = topic.type if topic is not None else ""
        if type_name not in schemas:
            encoding, definition = recording.definitions.get(type_name, ("", ""))
            schemas[type_name] = (encoding, definition.encode())
        encoding, text = schemas[type_name]
        channel = {"offered_qos_profiles": topic.offered_qos_profiles if topic else ""}
        if topic is not None and topic.type_description_hash:
            channel["topic_type_hash"] = topic.type_description_hash
        time = recording.time_ns(number)
        yield McapRecord(
            topic=name,
            schema_name=type_name,
            schema_encoding=encoding,
            schema_data=text,
            message_encoding=topic.serialization_format if topic else "cdr",
            log_time_ns=time,
            publish_time_ns=time,
            data=recording.serialized(number),
            channel_metadata=channel,
        )
        reporter.step()
    reporter.done()
