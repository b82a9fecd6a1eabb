"""Any recording -> a new ROS 2 bag (`nanorec export X --format ros2 -o DIR`).

From a ROS1 bag, every message is transcoded from ROS1 serialization to CDR with the types
mapped (`types.ros1_to_ros2`) from the definitions the bag carries, and each type's ROS 2
definition is written into the bag (sqlite `message_definitions`, MCAP schemas). A topic whose
type cannot be mapped is left out and said so, never silently; so is a message that does not
transcode (a damaged payload). A latched ROS1 topic gets rosbag2's transient-local QoS, as
`rosbags-convert` and the ROS1 bridge give it. An export that would write none of the selected
messages is a `FormatError` saying why (no empty bag is left behind).

From a recording of another format (CARLA, pbstream), its standard messages
(`nanorec.standard`) are encoded as their ROS 2 types. Either way the bag is written by
`ros2/writer.py`: a folder (sqlite3 by default, said in a note; `--storage mcap`) or one
`.db3`/`.mcap` file (`writer.bag_target`, the rule of every ROS 2 output).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TypeVar

import numpy as np
from numpy.typing import NDArray

from nanorec.contract import ExportReport, ExportRequest, Progress, Recording
from nanorec.errors import FormatError
from nanorec.selection import Selection
from nanorec.standard import standard_messages

from ..ros1.archived import payload
from ..ros1.meta import BagMeta
from ..ros1.recording import BagRecording
from ..ros2.storage import Definition, Topic
from ..ros2.writer import Entry, NewBag, bag_target, write_bag
from .standard import StandardEncoder, ros2msg_text
from .types import Crossing, Unmappable, ros1_to_ros2

#: rosbag2's QoS of a latched topic (TRANSIENT_LOCAL durability), as its YAML text.
LATCHED_QOS = (
    "- history: 3\n  depth: 0\n  reliability: 1\n  durability: 1\n"
    "  deadline:\n    sec: 2147483647\n    nsec: 4294967295\n"
    "  lifespan:\n    sec: 2147483647\n    nsec: 4294967295\n"
    "  liveliness: 1\n"
    "  liveliness_lease_duration:\n    sec: 2147483647\n    nsec: 4294967295\n"
    "  avoid_ros_namespace_conventions: false"
)
T = TypeVar("T")
#: Bytes of messages read between two `ArchiveReader.release_pages`.
RELEASE_BYTES = 32 << 20
#: Progress is reported every this many messages.
_STEP = 4096


def export(recording: Recording, output: Path, request: ExportRequest) -> ExportReport:
    """A new bag of `recording`, any format's (`ExportsFromAnyRecording.export_from`)."""
    selection, overwrite, progress = request.selection, request.overwrite, request.progress
    target = bag_target(output, request.storage, source=None)
    storage = target.storage
    left_out: list[str] = []
    notes: list[str] = [] if target.note is None else [target.note]
    if isinstance(recording, BagRecording):
        bag, messages = _from_ros1(recording, selection or Selection(), storage, left_out, notes)
    else:
        bag = NewBag(topics=[], definitions=[], storage=storage)
        messages = _from_standard(recording, selection, bag)
    total = len(recording.reader)
    chosen = len((selection or Selection()).chosen(recording.reader.index))
    messages = _not_none_of(messages, chosen, left_out)
    report = write_bag(
        output, bag, reporting(messages, progress, total), folder=target.folder,
        overwrite=overwrite,
    )  # fmt: skip
    report.details["left_out"] = left_out
    report.details["notes"] = notes
    return report


def _from_ros1(
    rec: BagRecording, selection: Selection, storage: str, left_out: list[str], notes: list[str]
) -> tuple[NewBag, Iterator[Entry]]:
    """The new bag's topics and definitions, and its messages (what cannot be carried over
    goes to `left_out`, what changes on the way to `notes`)."""
    meta = BagMeta(rec.reader)
    numbers = selection.chosen(rec.reader.index)
    crossings: dict[int, Crossing] = {}
    topics: dict[str, Topic] = {}
    definitions: dict[str, Definition] = {}
    for conn in sorted({int(c) for c in set(meta.conn[numbers].tolist())}):
        connection = meta.connections.get(conn)
        topic_name = meta.topic(conn)
        if connection is None:
            left_out.append(f"{topic_name}: its connection record is missing")
            continue
        try:
            crossing = ros1_to_ros2(connection.type, connection.definition)
        except Unmappable as why:
            left_out.append(f"{topic_name} ({connection.type}): {why}")
            continue
        known = topics.get(topic_name)
        if known is not None and known.type != crossing.target_type:
            left_out.append(
                f"{topic_name} ({connection.type}): the topic already has type {known.type}"
            )
            continue
        crossings[conn] = crossing
        notes.extend(note for note in crossing.notes if note not in notes)
        topics.setdefault(
            topic_name,
            Topic(
                key=len(topics) + 1,
                name=topic_name,
                type=crossing.target_type,
                serialization_format="cdr",
                offered_qos_profiles=LATCHED_QOS if connection.latching else "",
            ),
        )
        definitions.setdefault(
            crossing.target_type,
            Definition(crossing.target_type, "ros2msg", crossing.target_text),
        )
    bag = NewBag(topics=list(topics.values()), definitions=list(definitions.values()),
                 storage=storage)  # fmt: skip
    return bag, _ros1_messages(rec, meta, numbers, crossings, left_out)


def _ros1_messages(
    rec: BagRecording,
    meta: BagMeta,
    numbers: NDArray[np.int64],
    crossings: Mapping[int, Crossing],
    left_out: list[str],
) -> Iterator[Entry]:
    reader = rec.reader
    reader.advise_sequential()
    damaged = read = 0
    for number in numbers.tolist():
        crossing = crossings.get(int(meta.conn[number]))
        if crossing is None:
            continue
        source = payload(reader, number)["data"]
        read += len(source)
        if read >= RELEASE_BYTES:  # a pass over a big archive keeps its pages out of RSS
            reader.release_pages()
            read = 0
        try:
            made = crossing.transcode(source)
            data = bytes(made) if isinstance(made, bytearray) else made  # ROS1 -> CDR: bytes
        except FormatError as error:
            damaged += 1
            if damaged <= 10:
                left_out.append(f"message {number} ({meta.topic(int(meta.conn[number]))}): {error}")
            continue
        yield meta.topic(int(meta.conn[number])), int(meta.time[number]), data
    if damaged > 10:
        left_out.append(f"{damaged - 10} more messages that do not transcode")


def _from_standard(rec: Recording, selection: Selection | None, bag: NewBag) -> Iterator[Entry]:
    """The recording's standard messages as CDR, each new topic declared on first use."""
    encoder = StandardEncoder()
    types: dict[str, str] = {}
    for message in standard_messages(rec, selection):
        if message.topic not in types:
            types[message.topic] = message.type
            bag.topics = [*bag.topics, Topic(len(bag.topics) + 1, message.topic, message.type,
                                             "cdr")]  # fmt: skip
            if all(d.type != message.type for d in bag.definitions):
                text = ros2msg_text(message.type)
                bag.definitions = [*bag.definitions, Definition(message.type, "ros2msg", text)]
        yield message.topic, message.time_ns, encoder.encode(message.type, message.value)


def nothing_written(chosen: int, target: str, left_out: list[str]) -> str:
    """Why an export of `chosen` messages to `target` would write none: the one-line
    `FormatError` every ROS exporter raises rather than leave an empty bag."""
    shown = "; ".join(left_out[:3]) + (
        f"; and {len(left_out) - 3} more" if len(left_out) > 3 else ""
    )
    why = f"no topic maps to {target} ({shown})" if left_out else "none is a standard message"
    return f"0 of {chosen} messages: {why}"


def _not_none_of(messages: Iterator[T], chosen: int, left_out: list[str]) -> Iterator[T]:
    """`messages`, raising `FormatError` (inside the writer, which then keeps nothing) when
    they end without one of the `chosen` messages written."""
    written = 0
    for entry in messages:
        written += 1
        yield entry
    if written == 0 and chosen:
        raise FormatError(nothing_written(chosen, "ROS 2", left_out))


def reporting(messages: Iterator[T], progress: Progress | None, total: int) -> Iterator[T]:
    """`messages`, telling `progress` how many went by (out of the recording's `total`)."""
    if progress is None:
        yield from messages
        return
    for done, entry in enumerate(messages, start=1):
        if done % _STEP == 0:
            progress(min(done, total), total)
        yield entry
    progress(total, total)
