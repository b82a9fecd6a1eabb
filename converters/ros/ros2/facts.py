"""The facts `ros2 bag info` prints, from a converted bag: the metadata rosbag2 would read.

A bag folder is described by its `metadata.yaml`, as `ros2 bag info DIR` reads it; one
storage file by the metadata its storage plugin builds (`info.plugin_metadata`); a folder
without `metadata.yaml` (a crashed bag, which `ros2 bag info` refuses) by what
`ros2 bag reindex` would write for it (`reindexed`).

The `Files:` line. For a folder, `relative_file_paths` as metadata.yaml has it, whatever
path was typed. For one storage file, rosbag2 prints the path as typed on its command line
(`ros2 bag info x.db3`, `./x.db3`, `/abs/x.db3` as such: the plugins keep the uri they were
opened with, `relative_path_`), except that jazzy's and rolling's sqlite3 plugin starts from
the newest metadata the file stores, if any, whose `relative_file_paths` are the names the
writer gave (`abc_0.db3`). So `nanorec info FILE` passes the path as typed (`uri`). An
archive is no path rosbag2 could be given (it opens no archive, and the bag `export` writes
is named by `-o`), so the archive does not remember the path typed at convert time (nor
leak the converting machine's folders into archives, which stay byte-identical wherever
they are made): `nanorec info x.db3.nanover.zip` prints what `ros2 bag info x.db3` prints
when run beside the bag, its file name.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, replace
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from nanorec.hashorder import LibstdcxxOrder
from nanorec.untyped import Payload

from .bag import read_metadata
from .info import Layout, ServiceInfo, TopicFacts, is_service_event_topic, plugin_metadata
from .metadata import BagMetadata, FileInformation, TopicInformation, parse_metadata
from .storage import Topic

if TYPE_CHECKING:
    from .recording import Ros2Recording


def bag_metadata(
    rec: Ros2Recording, layout: Layout = "rolling", *, uri: str | None = None
) -> tuple[BagMetadata, str]:
    """The metadata `ros2 bag info` shows for the bag, and where it comes from
    ("metadata.yaml", "storage", "reindexed"). `uri`: the path of one storage file as typed
    (None: an archive's, its file name; see the module)."""
    meta = rec.meta
    if meta.folder and meta.metadata is not None:
        parsed, _ = read_metadata(meta.metadata)  # unreadable: as convert took it, reindexed
        if parsed is not None:
            return parsed, "metadata.yaml"
    if not meta.folder:
        return _plugin(rec, layout, uri), "storage"
    return reindexed(rec), "reindexed"


def as_held(rec: Ros2Recording, metadata: BagMetadata) -> tuple[BagMetadata, list[str]]:
    """metadata.yaml's message counts where the archive holds another number (a damaged
    bag, or a metadata.yaml that lies): the counts held, and a note of the claim."""
    held = len(rec)
    if metadata.message_count == held:
        return metadata, []
    counts = _counts(rec)
    topics = tuple(
        replace(t, message_count=counts.get(t.name, 0)) for t in metadata.topics_with_message_count
    )
    note = f"metadata.yaml says {metadata.message_count} messages, the bag holds {held}"
    return replace(metadata, message_count=held, topics_with_message_count=topics), [note]


def _counts(rec: Ros2Recording, index: int | None = None) -> Counter[str]:
    numbers = np.arange(len(rec)) if index is None else np.flatnonzero(rec.meta.file == index)
    codes = rec.reader.index.types_code[numbers]
    found: Counter[str] = Counter()
    for code, count in zip(*np.unique(codes, return_counts=True), strict=True):
        for name in rec.reader.index.types_table[int(code)]:
            found[name] += int(count)
    return found


def _span(rec: Ros2Recording, numbers: NDArray[np.intp] | NDArray[np.int64]) -> tuple[int, int]:
    times = rec.meta.time[numbers]
    return (int(times.min()), int(times.max())) if len(times) else (0, 0)


def _plugin(rec: Ros2Recording, layout: Layout, uri: str | None) -> BagMetadata:
    entry = rec.meta.files[0]
    counts = _counts(rec, 0)
    shared = _per_channel(entry, rec.meta.topics(0))
    topics = [
        TopicFacts(
            name=t.name,
            type=t.type,
            serialization_format=t.serialization_format,
            offered_qos_profiles=t.offered_qos_profiles,
            type_description_hash=t.type_description_hash,
            message_count=shared.get(t.key, counts.get(t.name, 0)),
        )
        for t in _plugin_order(entry["storage"], rec.meta.topics(0))
    ]
    first, last = _span(rec, np.arange(len(rec)))
    stored = None
    if entry["stored_metadata"]:
        try:
            stored = parse_metadata(entry["stored_metadata"], stored=True)
        except Exception:  # a stored copy that does not parse: the plugin's own facts
            stored = None
    return plugin_metadata(
        entry["storage"],
        layout=layout,
        uri=entry["name"] if uri is None else uri,
        topics=topics,
        first_ns=first,
        last_ns=last,
        stored=stored,
        schema_ros_distro=entry["ros_distro"],
    )


def _per_channel(entry: dict[str, Any], topics: list[Topic]) -> dict[int, int]:
    """The message count of each MCAP channel whose topic name other channels share (an MCAP
    written from a ROS1 bag has a channel per connection: three publishers of /rosout), from
    the Statistics record as rosbag2's plugin takes it (0 when absent); the archive counts by
    topic name, which would give each of them the topic's whole count."""
    names = Counter(t.name for t in topics)
    if entry["storage"] != "mcap" or all(n == 1 for n in names.values()):
        return {}
    statistics = entry.get("extra", {}).get("statistics") or {}
    counted = statistics.get("channel_message_counts") or {}
    return {t.key: int(counted.get(str(t.key), 0)) for t in topics if names[t.name] > 1}


def _plugin_order(storage: str, topics: list[Topic]) -> list[Topic]:
    """The topics in the order the storage plugin lists them: sqlite3 by id; MCAP in the
    iteration order of libmcap's `std::unordered_map<ChannelId, ...>` (libstdc++, on the
    Linux builds of rosbag2), filled in the file's channel order."""
    if storage != "mcap":
        return sorted(topics, key=lambda t: t.key)
    order = LibstdcxxOrder()
    for topic in topics:
        order.insert(topic.key)
    by_key = {topic.key: topic for topic in topics}
    return [by_key[key] for key in order]


def reindexed(rec: Ros2Recording) -> BagMetadata:
    """What `ros2 bag reindex` writes for the bag: every file's topics and counts, the
    files in order, the times of the messages found."""
    meta = rec.meta
    counts = _counts(rec)
    topics: dict[str, TopicInformation] = {}
    files = []
    for index, entry in enumerate(meta.files):
        for topic in meta.topics(index):
            topics.setdefault(
                topic.name,
                TopicInformation(
                    name=topic.name,
                    type=topic.type,
                    serialization_format=topic.serialization_format,
                    offered_qos_profiles=topic.offered_qos_profiles,
                    type_description_hash=topic.type_description_hash,
                    message_count=counts.get(topic.name, 0),
                ),
            )
        numbers = np.flatnonzero(meta.file == index)
        first, last = _span(rec, numbers)
        files.append(FileInformation(entry["name"], first, last - first, len(numbers)))
    first, last = _span(rec, np.arange(len(rec)))
    compression = meta.compression
    return BagMetadata(
        version=8,
        storage_identifier=meta.files[0]["storage"],
        duration_ns=last - first,
        starting_time_ns=first,
        message_count=len(rec),
        topics_with_message_count=tuple(topics.values()),
        compression_format=compression[0],
        compression_mode=compression[1],
        relative_file_paths=tuple(e["name"] for e in meta.files),
        files=tuple(files),
        ros_distro=next((e["ros_distro"] for e in meta.files if e["ros_distro"]), "") or "",
    )


def bag_size(rec: Ros2Recording) -> int:
    """rosbag2's bag size: the bag's files (metadata.yaml included)."""
    size = rec.reader.description.get("source", {}).get("size") if rec.reader.description else None
    return int(size) if isinstance(size, int) else 0


def topic_sizes(rec: Ros2Recording) -> dict[str, int]:
    """Bytes of stored data per topic (`ros2 bag info -v`'s size contribution)."""
    sizes: Counter[str] = Counter()
    for number in range(len(rec)):
        sizes[rec.kind_of(number)] += len(rec.raw(number))
    return dict(sizes)


def services(rec: Ros2Recording, metadata: BagMetadata) -> list[ServiceInfo]:
    """Per service, the distinct requests and responses its event messages show (`-v`):
    (client gid, sequence number) pairs of REQUEST_* and RESPONSE_* events."""
    found = []
    for topic in metadata.topics_with_message_count:
        if not is_service_event_topic(topic.name, topic.type):
            continue
        requests: set[tuple[bytes | str, int]] = set()
        responses: set[tuple[bytes | str, int]] = set()
        if topic.name in rec.topics:
            for row in rec.rows(topic.name):
                kind = row.get("info.event_type")
                key = (_key(row.get("info.client_gid")), row.get("info.sequence_number", 0))
                (requests if kind in (0, 1) else responses).add(key)
        found.append(
            ServiceInfo(
                name=topic.name[: -len("/_service_event")],
                type=topic.type[: -len("_Event")],
                serialization_format=topic.serialization_format,
                request_count=len(requests),
                response_count=len(responses),
            )
        )
    return found


def _key(value: Payload) -> bytes | str:
    return value.tobytes() if isinstance(value, np.ndarray) else repr(value)


def facts_of_archive(rec: Ros2Recording) -> dict[str, Any]:
    """The JSON summary: the metadata (as rosbag2 reads it), its source, and the files."""
    metadata, origin = bag_metadata(rec)
    metadata, claims = as_held(rec, metadata)
    return {
        "bag": _plain(asdict(metadata)),
        "metadata_from": origin,
        "bag_size": bag_size(rec),
        "files": [
            {k: e[k] for k in ("name", "storage", "size", "sha256", "messages", "compressed")}
            for e in rec.meta.files
        ],
        "notes": list(rec.meta.notes) + claims,
    }


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value
