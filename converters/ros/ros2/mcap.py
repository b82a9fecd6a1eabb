"""A ROS 2 bag's messages for MCAP (`nanorec export BAG --format mcap`), as rosbag2's MCAP
storage writes them: profile `ros2`, `cdr` messages, each type's definition as its
`ros2msg`/`ros2idl` schema (the bag's, else the recording's resolved one: a Humble bag's
common types get their bundled definitions, so MCAP viewers decode them), the channel's QoS
and type hash as channel metadata, log and publish time the receive time; the CDR bytes
untouched (inflated when the bag compressed each message). A topic the bag stores no type
hash for gets the one of its definition (`typehash.py`), unless the bag is from before Iron
(as that rosbag2 wrote it: none). A ROS1-encoded MCAP's topics keep their `ros1` messages,
`ros1msg` schemas and the connection header their channel had (`ros1_encoded.py`)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from nanorec.outputs.mcap import McapRecord, Progress, Reporter
from nanorec.selection import Selection

from .storage import Topic, definition_for
from .typehash import hash_of_definition, stores_type_hashes

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
    distro = next((e["ros_distro"] for e in meta.files if e["ros_distro"]), "") or ""
    iron = stores_type_hashes(distro)
    hashes: dict[str, str] = {}
    for number in numbers.tolist():
        name = recording.kind_of(number)
        topic = topics.get(name)
        type_name = topic.type if topic is not None else ""
        if type_name not in schemas:
            stored = definition_for(meta.definitions, type_name)  # a service's for its events
            encoding, definition = (
                (stored.encoding, stored.text)
                if stored is not None
                else recording.definitions.get(type_name, ("", ""))
            )
            schemas[type_name] = (encoding, definition.encode())
        encoding, text = schemas[type_name]
        channel = {"offered_qos_profiles": topic.offered_qos_profiles if topic else ""}
        if topic is not None and topic.ros1_connection:  # an MCAP written from a ROS1 bag
            channel = dict(topic.ros1_connection)
        else:
            type_hash = topic.type_description_hash if topic is not None else ""
            if topic is not None and not type_hash and iron:
                if type_name not in hashes:
                    found = definition_for(meta.definitions, type_name)
                    hashes[type_name] = hash_of_definition(type_name, found)
                type_hash = hashes[type_name]
            if type_hash or (topic is not None and iron):  # Iron's plugin on writes it, even ""
                channel["topic_type_hash"] = type_hash
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
