"""What a ROS 2 archive's messages say of their bag, so a killed conversion's still make one.

The members that describe the bag (`ros2.msgpack.zlib`, the skeletons, the columns) are
written when the conversion closes; a conversion killed before leaves only messages. So the
first archive message of each topic carries `"topic"`: its type, serialization format,
offered QoS, type hash and the definition the bag holds for the type (`[encoding, text]`, or
None); and the archive's first message carries `"bag"`: the storage, ROS distro, rosbag2
compression, whether the bag was a folder, and its first file's name. `convert.py` writes
them, `adopt.py` reads them back; decoding a message ignores both.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from nanorec.errors import FormatError
from nanorec.untyped import Payload

from .bag import BagLayout, compression_of
from .storage import Definition, Topic

TOPIC_KEY = "topic"
BAG_KEY = "bag"
_TOPIC_FIELDS = ("type", "serialization_format", "offered_qos_profiles", "type_description_hash")


def firsts_of_topics(topic_of: NDArray[Any]) -> set[int]:
    """The positions in `topic_of` (a topic code per archive message) of each topic's first
    message."""
    _, first = np.unique(topic_of, return_index=True)
    return set(first.tolist())


def declarations(entries: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Topic name -> what its first message says of it (the first file declaring it wins;
    a topic no file declares is not here: its message gets None, and only its name is
    known after a kill)."""
    found: dict[str, dict[str, Any]] = {}
    for entry in entries:
        definitions = {d["type"]: d for d in entry["definitions"] if d["text"]}
        for topic in entry["topics"]:
            definition = definitions.get(topic["type"])
            described = {name: topic[name] for name in _TOPIC_FIELDS}
            described["definition"] = (
                None if definition is None else [definition["encoding"], definition["text"]]
            )
            found.setdefault(topic["name"], described)
    return found


def bag_facts(layout: BagLayout, entries: list[dict[str, Any]]) -> dict[str, Any]:
    """What the archive's first message says of the bag (see the module)."""
    texts = [layout.metadata, *(e["stored_metadata"] for e in entries)]
    return {
        "storage": entries[0]["storage"],
        "distro": next((e["ros_distro"] for e in entries if e["ros_distro"]), "") or "",
        "compression": list(compression_of(texts)),
        "folder": layout.folder,
        "file": entries[0]["name"],
    }


def read_topic(
    name: str, key: int, described: Payload, number: int
) -> tuple[Topic, Definition | None]:
    """The topic (numbered `key`) and definition a first message's `"topic"` describes;
    FormatError naming message `number` when the description is damaged."""
    if described is None:  # the bag did not declare it
        return Topic(key, name, "", "cdr"), None
    try:
        fields = {field: described[field] for field in _TOPIC_FIELDS}
        if not all(isinstance(value, str) for value in fields.values()):
            raise TypeError("a field is not text")
        topic = Topic(key, name, **fields)
        definition = described["definition"]
        if definition is None:
            return topic, None
        encoding, text = definition
        if not isinstance(encoding, str) or not isinstance(text, str):
            raise TypeError("the definition is not text")
        return topic, Definition(topic.type, encoding, text)
    except (KeyError, TypeError, ValueError) as error:
        raise FormatError(
            f"recovered message {number} ({name}): damaged topic description ({error})"
        ) from None


def read_bag(described: Any) -> dict[str, Any]:
    """The first message's `"bag"` map, checked (FormatError when damaged)."""
    kinds = {"storage": str, "distro": str, "compression": list, "folder": bool, "file": str}
    if not isinstance(described, dict) or not all(
        isinstance(described.get(key), kind) for key, kind in kinds.items()
    ):
        raise FormatError("recovered message 0: damaged bag description")
    compression = described["compression"]
    if described["storage"] not in ("sqlite3", "mcap") or not (
        len(compression) == 2 and all(isinstance(c, str) for c in compression)
    ):
        raise FormatError("recovered message 0: damaged bag description")
    return described


__all__ = [
    "BAG_KEY",
    "TOPIC_KEY",
    "bag_facts",
    "declarations",
    "firsts_of_topics",
    "read_bag",
    "read_topic",
]
