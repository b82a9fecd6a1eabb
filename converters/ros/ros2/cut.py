"""Archive -> a new ROS 2 bag holding a selection (a cut), or every message (`--format
indexed`: the repair of a crashed bag, with the `metadata.yaml` reindex should have made).

The new bag is written as rosbag2's current writers write it: sqlite3 storage with the
schema of version 4 (`sqlite_storage.cpp`), or MCAP with profile `ros2` through the `mcap`
package's writer (zstd chunks); the messages keep their data as stored and their receive
times. A bag folder gives a bag folder (`<name>_0.db3|.mcap` + `metadata.yaml`), one storage
file gives one storage file.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import IO, Any

import numpy as np

from nanorec.atomic import atomic_folder, atomic_output, file_sha256
from nanorec.contract import ExportReport
from nanorec.errors import UsageError
from nanorec.reader import ArchiveReader
from nanorec.selection import Selection

from .bag import METADATA
from .export import data_of
from .facts import reindexed
from .recording import Ros2Recording
from .storage import Topic

SCHEMA = (
    "CREATE TABLE schema(schema_version INTEGER PRIMARY KEY,ros_distro TEXT NOT NULL);",
    "CREATE TABLE metadata(id INTEGER PRIMARY KEY,metadata_version INTEGER NOT NULL,"
    "metadata TEXT NOT NULL);",
    "CREATE TABLE topics(id INTEGER PRIMARY KEY,name TEXT NOT NULL,type TEXT NOT NULL,"
    "serialization_format TEXT NOT NULL,offered_qos_profiles TEXT NOT NULL,"
    "type_description_hash TEXT NOT NULL);",
    "CREATE TABLE message_definitions(id INTEGER PRIMARY KEY,topic_type TEXT NOT NULL,"
    "encoding TEXT NOT NULL,encoded_message_definition TEXT NOT NULL,"
    "type_description_hash TEXT NOT NULL);",
    "CREATE TABLE messages(id INTEGER PRIMARY KEY,topic_id INTEGER NOT NULL,"
    "timestamp INTEGER NOT NULL, data BLOB NOT NULL);",
    "CREATE INDEX timestamp_idx ON messages (timestamp ASC);",
)
_SUFFIX = {"sqlite3": ".db3", "mcap": ".mcap"}


def export_selection(
    reader: ArchiveReader,
    output: Path,
    *,
    selection: Selection | None,
    overwrite: bool,
    storage: str | None = None,
) -> ExportReport:
    rec = Ros2Recording(reader)
    numbers = (selection or Selection()).chosen(reader.index)
    storage = storage or _storage_of(output) or rec.meta.files[0]["storage"]
    if storage not in _SUFFIX:
        raise UsageError(f"a ROS 2 bag's storage is sqlite3 or mcap, not {storage!r}")
    topics = _topics(rec, numbers)
    if not rec.meta.folder:
        with atomic_output(output, overwrite=overwrite) as stream:
            _write_storage(rec, numbers, topics, storage, stream, output)
        return ExportReport(output, output.stat().st_size, file_sha256(output), len(numbers))
    name = f"{output.name}_0{_SUFFIX[storage]}"
    with atomic_folder(output, overwrite=overwrite) as folder:
        with (folder / name).open("wb") as stream:
            _write_storage(rec, numbers, topics, storage, stream, folder / name)
        metadata = _metadata(rec, numbers, topics, storage, name)
        (folder / METADATA).write_text(metadata, encoding="utf-8")
    size = sum(p.stat().st_size for p in output.iterdir())
    return ExportReport(
        output, size, file_sha256(output / name), len(numbers), details={"files": [name]}
    )


def _storage_of(output: Path) -> str | None:
    for storage, suffix in _SUFFIX.items():
        if output.name.lower().endswith(suffix):
            return storage
    return None


def _topics(rec: Ros2Recording, numbers: Any) -> list[Topic]:
    """The topics of the selected messages, each once, in the order the bag declares them."""
    used = {rec.kind_of(int(n)) for n in np.unique(rec.reader.index.types_code[numbers])}
    used = {rec.kind_of(int(n)) for n in _first_of_each(rec, numbers)} if used else set()
    found: dict[str, Topic] = {}
    for index in range(len(rec.meta.files)):
        for topic in rec.meta.topics(index):
            if topic.name in used:
                found.setdefault(topic.name, topic)
    return list(found.values())


def _first_of_each(rec: Ros2Recording, numbers: Any) -> list[int]:
    codes = rec.reader.index.types_code[numbers]
    _, first = np.unique(codes, return_index=True)
    return [int(numbers[i]) for i in first]


def _messages(rec: Ros2Recording, numbers: Any) -> Iterable[tuple[str, int, Any]]:
    for number in numbers.tolist():
        yield rec.kind_of(number), rec.time_ns(number), data_of(rec.reader, number)


def _write_storage(
    rec: Ros2Recording,
    numbers: Any,
    topics: list[Topic],
    storage: str,
    stream: IO[bytes],
    target: Path,
) -> None:
    if storage == "mcap":
        _write_mcap(rec, numbers, topics, stream)
    else:
        _write_db3(rec, numbers, topics, stream, target)


def _write_db3(
    rec: Ros2Recording, numbers: Any, topics: list[Topic], stream: IO[bytes], target: Path
) -> None:
    """sqlite3 writes to a path: build the database beside the target, then copy it."""
    scratch = target.with_name(f".{target.name}.sqlite")
    scratch.unlink(missing_ok=True)
    try:
        with sqlite3.connect(scratch) as db:
            for statement in SCHEMA:
                db.execute(statement)
            distro = next((e["ros_distro"] for e in rec.meta.files if e["ros_distro"]), "") or ""
            db.execute("INSERT INTO schema (schema_version, ros_distro) VALUES (4, ?)", (distro,))
            ids = {}
            for key, topic in enumerate(topics, start=1):
                ids[topic.name] = key
                db.execute(
                    "INSERT INTO topics VALUES (?, ?, ?, ?, ?, ?)",
                    (
                        key,
                        topic.name,
                        topic.type,
                        topic.serialization_format,
                        topic.offered_qos_profiles,
                        topic.type_description_hash,
                    ),
                )
            for definition in _definitions(rec, topics):
                db.execute(
                    "INSERT INTO message_definitions (topic_type, encoding, "
                    "encoded_message_definition, type_description_hash) VALUES (?, ?, ?, ?)",
                    (definition.type, definition.encoding, definition.text, ""),
                )
            db.executemany(
                "INSERT INTO messages (timestamp, topic_id, data) VALUES (?, ?, ?)",
                ((time, ids[topic], bytes(data)) for topic, time, data in _messages(rec, numbers)),
            )
        db.close()
        with scratch.open("rb") as built:
            while block := built.read(1 << 20):
                stream.write(block)
    finally:
        scratch.unlink(missing_ok=True)


def _definitions(rec: Ros2Recording, topics: list[Topic]) -> list[Any]:
    types = dict.fromkeys(topic.type for topic in topics)
    return [rec.meta.definitions[t] for t in types if t in rec.meta.definitions]


def _write_mcap(rec: Ros2Recording, numbers: Any, topics: list[Topic], stream: IO[bytes]) -> None:
    from mcap.writer import Writer

    writer = Writer(stream)
    writer.start(profile="ros2", library="nanorec")
    definitions = rec.meta.definitions
    channels = {}
    for topic in topics:
        definition = definitions.get(topic.type)
        schema = writer.register_schema(
            name=topic.type,
            encoding=definition.encoding if definition else "",
            data=definition.text.encode() if definition else b"",
        )
        metadata = {"offered_qos_profiles": topic.offered_qos_profiles}
        if topic.type_description_hash:
            metadata["topic_type_hash"] = topic.type_description_hash
        channels[topic.name] = writer.register_channel(
            topic=topic.name,
            message_encoding=topic.serialization_format,
            schema_id=schema,
            metadata=metadata,
        )
    for sequence, (name, time, data) in enumerate(_messages(rec, numbers)):
        writer.add_message(
            channel_id=channels[name],
            log_time=time,
            publish_time=time,
            data=bytes(data),
            sequence=sequence,
        )
    writer.finish()  # type: ignore[no-untyped-call]


def _metadata(
    rec: Ros2Recording, numbers: Any, topics: list[Topic], storage: str, name: str
) -> str:
    """metadata.yaml for the new bag, as rosbag2 (version 9) writes it."""
    from .metadata import FileInformation, metadata_yaml

    full = reindexed(rec)
    times = rec.meta.time[numbers]
    first, last = (int(times.min()), int(times.max())) if len(times) else (0, 0)
    counts: dict[str, int] = {}
    for number in numbers.tolist():
        topic = rec.kind_of(number)
        counts[topic] = counts.get(topic, 0) + 1
    infos = tuple(
        replace(t, message_count=counts.get(t.name, 0))
        for t in full.topics_with_message_count
        if t.name in {topic.name for topic in topics}
    )
    meta = replace(
        full,
        storage_identifier=storage,
        starting_time_ns=first,
        duration_ns=last - first,
        message_count=len(numbers),
        topics_with_message_count=infos,
        relative_file_paths=(name,),
        files=(FileInformation(name, first, last - first, len(numbers)),),
    )
    return metadata_yaml(meta, version=8)  # QoS as YAML text (9 wants structured QoS)
