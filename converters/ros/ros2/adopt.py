"""Make an archive recovered from a killed ROS 2 conversion a ROS 2 archive again.

A killed writer leaves every complete message (the bag's first ones in receive time:
conversion writes them in time order) but none of the members written at close: the storage
files' skeletons, the per-message columns and `ros2.msgpack.zlib`. The columns come back
from the messages (each holds its time in ns; the recovered ones become one storage file),
and the topics, definitions, storage, distro and compression from what the first messages
say (`described.py`). The skeletons do not: the archive is marked `adopted`, it decodes and
plays as any ROS 2 archive, and `export` writes its messages as a new bag (as a cut does,
`cut.py`), not the original's bytes, and says so.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import numpy as np

from nanorec.archive.reader import ArchiveReader
from nanorec.archive.wire import pack_meta
from nanorec.errors import FormatError

from .described import BAG_KEY, TOPIC_KEY, read_bag, read_topic
from .members import META_MEMBER, META_VERSION, RANK_DTYPE, RANK_MEMBER, TIME_MEMBER
from .storage import Definition, Topic

_FIELDS = {"timestamp", "data"}
#: What a note on the adopted archive says (`info`, export).
ADOPTED_NOTE = (
    "recovered from a killed conversion: the bag's first messages in time (the storage "
    "files' layout is lost: it exports as a new bag)"
)


def _entry(message: Any) -> tuple[str, dict[str, Any]] | None:
    """`(topic, {"timestamp", "data"[, "topic", "bag"]})` of a ROS 2 archive message, or None."""
    if not isinstance(message, dict) or len(message) != 1:
        return None
    topic, value = next(iter(message.items()))
    if not isinstance(topic, str) or not isinstance(value, dict):
        return None
    if not _FIELDS <= set(value) <= _FIELDS | {TOPIC_KEY, BAG_KEY}:
        return None
    if not isinstance(value["timestamp"], int) or not isinstance(value["data"], bytes):
        return None
    return topic, value


def rebuild_members(reader: ArchiveReader) -> dict[str, bytes] | None:
    """The ROS 2 members of `reader`'s archive rebuilt from its messages, or None when they
    are not a bag's as nanorec converts it (the first one describes the bag). FormatError
    when they are, but one is damaged."""
    first = _entry(reader[0]) if len(reader) else None
    if first is None or BAG_KEY not in first[1] or TOPIC_KEY not in first[1]:
        return None
    bag = read_bag(first[1][BAG_KEY])
    count = len(reader)
    times = np.empty(count, "<i8")
    topics: dict[str, Topic] = {}
    definitions: dict[str, Definition] = {}
    for number in range(count):
        entry = _entry(reader[number])
        if entry is None:
            raise FormatError(f"recovered message {number} is not a ROS 2 bag message")
        name, value = entry
        times[number] = value["timestamp"]
        if name in topics:
            continue
        if TOPIC_KEY not in value:
            raise FormatError(
                f"recovered message {number} is the first of {name} but does not describe it"
            )
        topic, definition = read_topic(name, len(topics) + 1, value[TOPIC_KEY], number)
        topics[name] = topic
        if definition is not None:
            definitions.setdefault(definition.type, definition)
    if np.any(np.diff(times) < 0):
        raise FormatError("recovered messages are not in receive-time order")
    if count >= 2**32:
        raise FormatError(f"{count} recovered messages: more than one storage file holds")
    return {
        META_MEMBER: pack_meta(_meta(bag, topics, definitions, count)),
        TIME_MEMBER: times.tobytes(),
        RANK_MEMBER: np.arange(count, dtype=RANK_DTYPE).tobytes(),
    }


def _meta(
    bag: dict[str, Any], topics: dict[str, Topic], definitions: dict[str, Definition], count: int
) -> dict[str, Any]:
    """`ros2.msgpack.zlib` of the recovered bag: one storage file of every message."""
    entry = {
        "name": bag["file"].removesuffix(".zstd"),  # its data are stored inflated
        "compressed": False,
        "storage": bag["storage"],
        "size": 0,
        "sha256": "",
        "messages": count,
        "topics": [asdict(topic) for topic in topics.values()],
        "definitions": [asdict(definition) for definition in definitions.values()],
        "stored_metadata": None,
        "ros_distro": bag["distro"] or None,
        "cut": None,
        "damaged": [],
        "notes": [],
        "extra": {},
    }
    return {
        "version": META_VERSION,
        "folder": bag["folder"],
        "metadata": None,
        "notes": [ADOPTED_NOTE],
        "files": [entry],
        "adopted": True,
        # rosbag2's MESSAGE mode only: a bag compressed per file has its data stored
        # inflated, so the new bag is not compressed
        "compression": bag["compression"] if bag["compression"][1].upper() == "MESSAGE" else None,
    }


__all__ = ["ADOPTED_NOTE", "rebuild_members"]
