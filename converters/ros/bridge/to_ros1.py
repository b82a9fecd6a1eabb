"""Any recording -> a new ROS1 bag (`nanorec export X --format ros1 -o out.bag`).

From a ROS 2 bag, every message is transcoded from CDR to ROS1 serialization with the types
mapped (`types.ros2_to_ros1`) from the definitions the bag carries; each connection gets the
full `message_definition` text genmsg would write and its md5sum computed by ROS's rule
(`ros1/md5.py`), so ROS1 tools take the bag as if recorded. A type the bag has no
definition of takes the one its recording resolves (`--msg-path`, else nanorec's bundled
definitions of the bag's distro: `ros2/bundle.py`), said in a note. A topic whose type has no
definition at all or cannot be expressed in ROS1 (`wstring`) is left out and said so. A
transient-local topic (latched in ROS1 terms) is written latched.

From an MCAP written from a ROS1 bag (`ros1msg` schemas, `ros1` messages: `mcap convert`,
`nanorec export X.bag --format mcap`), the payloads are already ROS1: each is written verbatim,
its connection gets the definition text as stored, the md5sum genmsg's rule gives it, and the
`callerid` and `latching` the channel's metadata kept.

An export that would write none of the selected messages is a `FormatError` saying why (no
empty bag is left behind).

From a recording of another format (CARLA, pbstream), its standard messages are encoded as
their ROS 2 types, then transcoded the same way (a `/tf` given as columns, a CARLA frame's, is
laid out in ROS1 straight away: the same bytes, `columns.py`). The bag is written by
`ros1/writer.py`: indexed, chunked as `rosbag record` does, uncompressed.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path

from nanorec.archive.atomic import atomic_output, file_sha256
from nanorec.contract import ExportReport, ExportRequest, Recording
from nanorec.errors import FormatError
from nanorec.selection import Selection
from nanorec.standard import standard_messages

from ..ros1.md5 import md5sum
from ..ros1.writer import BagWriter
from ..ros2.recording import Ros2Recording
from ..ros2.ros1_encoded import ROS1_SCHEMA
from .standard import StandardEncoder
from .to_ros2 import RELEASE_BYTES, nothing_written, reporting
from .types import Crossing, Unmappable, ros2_to_ros1

#: A message to write: (topic, ROS 2 type, time in ns, CDR data, its ROS1 data when it was
#: made straight from the value: a CARLA frame's `/tf`, whose CDR data is then empty).
_Cdr = tuple[str, str, int, bytes, bytes | None]


class _Connections:
    """One ROS1 connection per topic, made on its first message from the topic's type
    (`headers`: a ROS1-encoded topic's connection header, as its MCAP channel kept it)."""

    def __init__(
        self,
        definitions: Mapping[str, tuple[str, str]],
        latched: set[str],
        headers: Mapping[str, Mapping[str, str]] | None = None,
        sources: Mapping[str, str] | None = None,
    ) -> None:
        self.definitions = definitions
        #: Type -> where its definition comes from, for a type the bag has none of.
        self.sources = sources or {}
        self.latched = latched
        self.headers = headers or {}
        self.ids: dict[str, int | None] = {}
        self.crossings: dict[int, Crossing] = {}
        self.left_out: list[str] = []
        self.notes: list[str] = []

    def of(self, bag: BagWriter, topic: str, type_name: str) -> int | None:
        if topic in self.ids:
            return self.ids[topic]
        try:
            crossing = self._crossing(topic, type_name)
        except Unmappable as why:
            self.left_out.append(f"{topic} ({type_name}): {why}")
            self.ids[topic] = None
            return None
        conn = self.ids[topic] = len(self.crossings)
        self.crossings[conn] = crossing
        self.notes.extend(note for note in crossing.notes if note not in self.notes)
        callerid = self.headers.get(topic, {}).get("callerid")
        fields = (
            *(() if callerid is None else ((b"callerid", callerid.encode()),)),
            (b"latching", b"1" if topic in self.latched else b"0"),
            (b"md5sum", md5sum(crossing.target_type, crossing.target_text).encode()),
            (b"message_definition", crossing.target_text.encode()),
            (b"topic", topic.encode()),
            (b"type", crossing.target_type.encode()),
        )
        bag.add_connection(conn, topic, fields)
        return conn

    def _crossing(self, topic: str, type_name: str) -> Crossing:
        definition = self.definitions.get(type_name)
        if definition is None or definition[0] != ROS1_SCHEMA:
            return ros2_to_ros1(type_name, self._definitions_of(type_name))
        text = definition[1]  # already ROS1: the payloads go as they are
        try:
            md5 = md5sum(type_name, text)
        except FormatError as error:
            raise Unmappable(f"its ROS1 definition gives no md5sum: {error.message}") from None
        kept = self.headers.get(topic, {}).get("md5sum")
        if kept is not None and kept != md5:
            self.notes.append(f"{topic}: md5sum {md5} by genmsg's rule, the MCAP said {kept}")
        return Crossing(type_name, type_name, text, bytes, ())

    def _definitions_of(self, type_name: str) -> Mapping[str, tuple[str, str]]:
        """The resolved definitions (`Ros2Recording.definitions`); a type the bag carries
        none of (rosbag2 before Iron stored none) is said in a note with where its came from."""
        if type_name not in self.definitions:
            raise Unmappable(
                "the bag carries no definition of its type (nor is it bundled: try --msg-path)"
            )
        if type_name in self.sources:
            self.notes.append(
                f"{type_name}: the bag carries no definition; {self.sources[type_name]}"
            )
        return self.definitions


def export(recording: Recording, output: Path, request: ExportRequest) -> ExportReport:
    """A new bag of `recording`, any format's (`ExportsFromAnyRecording.export_from`)."""
    selection, overwrite, progress = request.selection, request.overwrite, request.progress
    headers: dict[str, dict[str, str]] = {}
    if isinstance(recording, Ros2Recording):
        definitions, sources = recording.definitions, recording.sources()
        latched = _latched(recording)
        for index in range(len(recording.meta.files)):
            for declared in recording.meta.topics(index):
                if declared.ros1_connection:
                    headers.setdefault(declared.name, declared.ros1_connection)
        messages = _from_ros2(recording, selection or Selection())
    else:
        encoder = StandardEncoder()
        definitions, latched, sources = encoder.definitions, set(), {}
        messages = _from_standard(recording, selection, encoder)
    connections = _Connections(definitions, latched, headers, sources)
    chosen = len((selection or Selection()).chosen(recording.reader.index))
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
        if bag.messages == 0 and chosen:
            raise FormatError(nothing_written(chosen, "ROS1", connections.left_out))
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
    """Topics offered with transient-local durability (rosbag2's QoS YAML `durability: 1`),
    or recorded from a latched ROS1 connection."""
    return {
        topic.name
        for index in range(len(rec.meta.files))
        for topic in rec.meta.topics(index)
        if "durability: 1" in topic.offered_qos_profiles
        or "durability: transient_local" in topic.offered_qos_profiles
        or topic.ros1_connection.get("latching") == "1"  # a latched ROS1 connection's channel
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
    rec: Recording, selection: Selection | None, encoder: StandardEncoder
) -> Iterator[_Cdr]:
    for message in standard_messages(rec, selection):
        made = encoder.encode_ros1(message.type, message.value)
        data = encoder.encode(message.type, message.value) if made is None else b""
        yield message.topic, message.type, message.time_ns, data, made
