"""Any recording -> a new ROS1 bag (`nanorec export X --format ros1 -o out.bag`).

From a ROS 2 bag, every message is transcoded from CDR to ROS1 serialization with the types
mapped (`types.ros2_to_ros1`) from the definitions the bag carries; each connection gets the
full `message_definition` text genmsg would write and its md5sum computed by ROS's rule
(`ros1/md5.py`), so ROS1 tools take the bag as if recorded. A topic whose type has no
definition in the bag or cannot be expressed in ROS1 (`wstring`) is left out and said so. A
transient-local topic (latched in ROS1 terms) is written latched.

From a recording of another format (CARLA, pbstream), its standard messages are encoded as
their ROS 2 types, then transcoded the same way (a `/tf` given as columns, a CARLA frame's, is
laid out in ROS1 straight away: the same bytes, `columns.py`). The bag is written by
`ros1/writer.py`: indexed, chunked as `rosbag record` does, uncompressed.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from nanorec.atomic import atomic_output, file_sha256
from nanorec.contract import ExportReport, Progress
from nanorec.errors import FormatError
from nanorec.selection import Selection
from nanorec.standard import standard_messages

from ..ros1.md5 import md5sum
from ..ros1.writer import BagWriter
from ..ros2.msgdef import canonical
from ..ros2.recording import Ros2Recording
from ..ros2.stock import STOCK
from .standard import StandardEncoder
from .to_ros2 import RELEASE_BYTES, reporting
from .types import Crossing, Unmappable, ros2_to_ros1

#: A message to write: (topic, ROS 2 type, time in ns, CDR data, its ROS1 data when it was
#: made straight from the value: a CARLA frame's `/tf`, whose CDR data is then empty).
_Cdr = tuple[str, str, int, bytes, bytes | None]


class _Connections:
    """One ROS1 connection per topic, made on its first message from the topic's type."""

    def __init__(self, definitions: Mapping[str, tuple[str, str]], latched: set[str]) -> None:
        self.definitions = definitions
        self.latched = latched
        self.ids: dict[str, int | None] = {}
        self.crossings: dict[int, Crossing] = {}
        self.left_out: list[str] = []
        self.notes: list[str] = []

    def of(self, bag: BagWriter, topic: str, type_name: str) -> int | None:
        if topic in self.ids:
            return self.ids[topic]
        try:
            crossing = ros2_to_ros1(type_name, self._definitions_of(type_name))
        except Unmappable as why:
            self.left_out.append(f"{topic} ({type_name}): {why}")
            self.ids[topic] = None
            return None
        conn = self.ids[topic] = len(self.crossings)
        self.crossings[conn] = crossing
        self.notes.extend(note for note in crossing.notes if note not in self.notes)
        fields = (
            (b"latching", b"1" if topic in self.latched else b"0"),
            (b"md5sum", md5sum(crossing.target_type, crossing.target_text).encode()),
            (b"message_definition", crossing.target_text.encode()),
            (b"topic", topic.encode()),
            (b"type", crossing.target_type.encode()),
        )
        bag.add_connection(conn, topic, fields)
        return conn

    def _definitions_of(self, type_name: str) -> Mapping[str, tuple[str, str]]:
        """The bag's definitions; for a type it carries none of (rosbag2 before Iron stored
        none), the bundled Humble ones of the common packages, said in a note."""
        if type_name in self.definitions:
            return self.definitions
        if canonical(type_name) not in STOCK:
            raise Unmappable("the bag carries no definition of its type (nor is it a common one)")
        note = f"{type_name}: the bag carries no definition; Humble's, bundled with nanorec"
        self.notes.append(note)
        stock = {name: ("ros2msg", text) for name, text in STOCK.items()}
        return {**stock, **self.definitions, type_name: stock[canonical(type_name)]}


def export(
    recording: Any,
    output: Path,
    *,
    selection: Selection | None = None,
    overwrite: bool = False,
    progress: Progress | None = None,
    options: Mapping[str, Any] | None = None,
) -> ExportReport:
    if isinstance(recording, Ros2Recording):
        definitions = {t: (d.encoding, d.text) for t, d in recording.meta.definitions.items()}
        latched = _latched(recording)
        messages = _from_ros2(recording, selection or Selection())
    else:
        encoder = StandardEncoder()
        definitions, latched = encoder.definitions, set()
        messages = _from_standard(recording, selection, encoder)
    connections = _Connections(definitions, latched)
    damaged = 0
    with atomic_output(output, overwrite=overwrite) as stream:
        bag = BagWriter(stream)
        total = len(recording.reader)
        for topic, type_name, time, data, made in reporting(messages, progress, total):
            conn = connections.of(bag, topic, type_name)
            if conn is None:
                continue
            try:
                ros1 = made if made is not None else connections.crossings[conn].transcode(data)
            except FormatError as error:
                damaged += 1
                if damaged <= 10:
                    connections.left_out.append(f"a message of {topic} at {time} ns: {error}")
                continue
            bag.write(conn, time, ros1)
        bag.close()
        written = bag.messages
    if damaged > 10:
        connections.left_out.append(f"{damaged - 10} more messages that do not transcode")
    return ExportReport(
        output,
        output.stat().st_size,
        file_sha256(output),
        written,
        details={"left_out": connections.left_out, "notes": connections.notes},
    )


def _latched(rec: Ros2Recording) -> set[str]:
    """Topics offered with transient-local durability (rosbag2's QoS YAML `durability: 1`)."""
    return {
        topic.name
        for index in range(len(rec.meta.files))
        for topic in rec.meta.topics(index)
        if "durability: 1" in topic.offered_qos_profiles
        or "durability: transient_local" in topic.offered_qos_profiles
    }


def _from_ros2(rec: Ros2Recording, selection: Selection) -> Iterator[_Cdr]:
    rec.reader.advise_sequential()
    read = 0
    for number in selection.chosen(rec.reader.index).tolist():
        topic = rec.kind_of(number)
        data = rec.serialized(number)
        read += len(data)
        if read >= RELEASE_BYTES:  # a pass over a big archive keeps its pages out of RSS
            rec.reader.release_pages()
            read = 0
        yield topic, rec.type_of(topic), rec.time_ns(number), data, None


def _from_standard(
    rec: Any, selection: Selection | None, encoder: StandardEncoder
) -> Iterator[_Cdr]:
    for message in standard_messages(rec, selection):
        made = encoder.encode_ros1(message.type, message.value)
        data = encoder.encode(message.type, message.value) if made is None else b""
        yield message.topic, message.type, message.time_ns, data, made
