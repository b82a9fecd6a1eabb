"""A new ROS 2 bag from any messages: a cut of a bag, the repair of a crashed one, or a bag
written from another format (a ROS1 bag, a CARLA recording: `converters/ros/bridge`).

The bag is written as rosbag2's current writers write it: sqlite3 storage with the schema of
version 4 (`sqlite_storage.cpp`), or MCAP with profile `ros2` through the `mcap` package's
writer (zstd chunks), and the `metadata.yaml` rosbag2 writes beside them. A folder output is
a bag folder (`<name>_0.db3|.mcap` + `metadata.yaml`); a `.db3`/`.mcap` output is one storage
file. Either appears only when complete.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from nanorec.archive.atomic import atomic_folder, atomic_output, file_sha256
from nanorec.contract import ExportReport
from nanorec.errors import NanorecError, UnsupportedError, UsageError

from .bag import METADATA
from .metadata import BagMetadata, FileInformation, TopicInformation, metadata_yaml
from .storage import Definition, Topic, definition_for
from .typehash import hash_of_definition, stores_type_hashes

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
SUFFIX = {"sqlite3": ".db3", "mcap": ".mcap"}
#: A bridged bag's storage when neither the output's name nor --storage says (rosbag2's).
DEFAULT_STORAGE = "sqlite3"
#: Messages inserted into sqlite at a time.
_ROWS = 1024

#: A message to write: (topic name, receive time in ns since the epoch, CDR data).
Entry = tuple[str, int, "bytes | memoryview"]


@dataclass
class NewBag:
    """What the new bag declares: its topics (in order), the definitions of their types
    (each type once), its storage and the ROS distribution it names.

    Each topic's `type_description_hash` (RIHS01) is written as the topic has it (the source
    bag's), else computed from the definition the bag carries (`type_hash`)."""

    topics: Sequence[Topic]
    definitions: Sequence[Definition]
    storage: str
    distro: str = ""
    #: rosbag2's (compression_format, compression_mode): data kept zstd-compressed per message.
    compression: tuple[str, str] = ("", "")
    counts: dict[str, int] = field(default_factory=dict)
    first: int | None = None
    last: int | None = None
    _hashes: dict[str, str] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if self.storage not in SUFFIX:
            raise UsageError(f"a ROS 2 bag's storage is sqlite3 or mcap, not {self.storage!r}")

    def topic(self, name: str) -> Topic:
        """The declared topic `name` (a `KeyError` is a bug of the caller)."""
        return next(topic for topic in self.topics if topic.name == name)

    def definition(self, type_name: str) -> Definition | None:
        """The definition of `type_name`; a service event's may be its service's (rosbag2
        stores `pkg/srv/Foo`'s `.srv` for `pkg/srv/Foo_Event`)."""
        return definition_for({d.type: d for d in reversed(self.definitions)}, type_name)

    def type_hash(self, topic: Topic) -> str:
        """`topic`'s RIHS01 hash: the one it carries, else the hash of its type's definition
        in this bag; "" when there is none or it does not parse, and for a bag of a distro
        older than Iron (whose rosbag2 stores no hash)."""
        if topic.type_description_hash or not stores_type_hashes(self.distro):
            return topic.type_description_hash
        if topic.type not in self._hashes:
            self._hashes[topic.type] = hash_of_definition(topic.type, self.definition(topic.type))
        return self._hashes[topic.type]

    def counted(self, messages: Iterable[Entry]) -> Iterator[Entry]:
        """`messages`, counting them per topic and keeping the first and last times."""
        counts = self.counts
        first, last = self.first, self.last
        for entry in messages:
            topic, time = entry[0], entry[1]
            counts[topic] = counts.get(topic, 0) + 1
            first = time if first is None or time < first else first
            last = time if last is None or time > last else last
            yield entry
        self.first, self.last = first, last


def storage_of_output(output: Path) -> str | None:
    """The storage a `.db3`/`.mcap` output name asks for, else None (a folder)."""
    for storage, suffix in SUFFIX.items():
        if output.name.lower().endswith(suffix):
            return storage
    return None


@dataclass(frozen=True)
class Target:
    """What a ROS 2 output is: its storage, whether it is a bag folder (else one storage
    file), and a note when the storage is a default nobody asked for."""

    storage: str
    folder: bool
    note: str | None = None


def bag_target(
    output: Path, requested: str | None, *, source: str | None, source_folder: bool = True
) -> Target:
    """The storage and shape of a ROS 2 output (the rule of the module). `requested` is
    `--storage`; `source` the storage of the bag exported (None: bridged from another
    format); `source_folder` whether it was a folder. UsageError when `requested` is not a
    storage or contradicts the output's name."""
    if requested is not None and requested not in SUFFIX:
        raise UsageError(f"--storage takes {', '.join(SUFFIX)}; not {requested!r}")
    named = storage_of_output(output)
    if requested is not None and named is not None and requested != named:
        raise UsageError(
            f"--storage {requested} does not fit the output's name {output.name} (a {named} "
            f"file): name it *{SUFFIX[requested]}, or give a folder"
        )
    folder = named is None and source_folder
    storage = requested or named or source
    if storage is not None:
        return Target(storage, folder)
    return Target(
        DEFAULT_STORAGE,
        folder,
        f"stored as {DEFAULT_STORAGE}, rosbag2's default (--storage mcap or a .mcap name for MCAP)",
    )


def write_bag(
    output: Path, bag: NewBag, messages: Iterable[Entry], *, folder: bool, overwrite: bool
) -> ExportReport:
    """Write `messages` (in time order) as a new bag at `output` (see the module). sqlite3's
    own errors (a full disk is its "database or disk is full") are one NanorecError naming
    the output; nothing is left of it."""
    try:
        return _write_bag(output, bag, messages, folder=folder, overwrite=overwrite)
    except sqlite3.Error as error:
        full = getattr(error, "sqlite_errorname", "") == "SQLITE_FULL" or "is full" in str(error)
        why = " (no space left on the device?)" if full else ""
        raise NanorecError(f"{output}: sqlite3 could not write the bag: {error}{why}") from None


def _write_bag(
    output: Path, bag: NewBag, messages: Iterable[Entry], *, folder: bool, overwrite: bool
) -> ExportReport:
    if bag.storage == "mcap":  # said before anything is written
        try:
            import mcap.writer  # noqa: F401
        except ImportError:
            raise UnsupportedError("MCAP storage needs mcap: pip install 'nanorec[mcap]'") from None
    if not folder:
        with atomic_output(output, overwrite=overwrite) as stream:
            _write_storage(bag, bag.counted(messages), stream, output)
        total = sum(bag.counts.values())
        return ExportReport(output, output.stat().st_size, file_sha256(output), total)
    name = f"{output.name}_0{SUFFIX[bag.storage]}"
    with atomic_folder(output, overwrite=overwrite) as built:
        if bag.storage == "sqlite3":  # sqlite writes to a path: straight into the folder
            _build_db3(bag, bag.counted(messages), built / name)
        else:
            with (built / name).open("wb") as stream:
                _write_mcap(bag, bag.counted(messages), stream)
        (built / METADATA).write_text(metadata_text(bag, name), encoding="utf-8")
    size = sum(p.stat().st_size for p in output.iterdir())
    total = sum(bag.counts.values())
    return ExportReport(output, size, file_sha256(output / name), total, details={"files": [name]})


def _write_storage(bag: NewBag, messages: Iterable[Entry], stream: IO[bytes], target: Path) -> None:
    if bag.storage == "mcap":
        _write_mcap(bag, messages, stream)
    else:
        _write_db3(bag, messages, stream, target)


def _write_db3(bag: NewBag, messages: Iterable[Entry], stream: IO[bytes], target: Path) -> None:
    """sqlite3 writes to a path: build the database beside the target, then copy it."""
    scratch = target.with_name(f".{target.name}.sqlite")
    scratch.unlink(missing_ok=True)
    try:
        _build_db3(bag, messages, scratch)
        with scratch.open("rb") as built:
            while block := built.read(1 << 20):
                stream.write(block)
    finally:
        scratch.unlink(missing_ok=True)


def _build_db3(bag: NewBag, messages: Iterable[Entry], path: Path) -> None:
    """The sqlite3 storage file at `path`. Topics get their rows when first used (a bag
    written from standard messages learns them late). No journal on disk and no syncs: the
    file is published whole (atomically) or not at all."""
    with contextlib.closing(sqlite3.connect(path)) as db, db:
        db.execute("PRAGMA journal_mode=MEMORY")
        db.execute("PRAGMA synchronous=OFF")
        for statement in SCHEMA:
            db.execute(statement)
        db.execute("INSERT INTO schema VALUES (4, ?)", (bag.distro,))
        ids: dict[str, int] = {}
        defined: set[str] = set()

        def declare(name: str) -> int:
            topic = bag.topic(name)
            ids[name] = len(ids) + 1
            row = (topic.name, topic.type, topic.serialization_format)
            type_hash = bag.type_hash(topic)
            db.execute(
                "INSERT INTO topics VALUES (?, ?, ?, ?, ?, ?)",
                (ids[name], *row, topic.offered_qos_profiles, type_hash),
            )
            definition = bag.definition(topic.type)
            if definition is not None and definition.type not in defined:
                defined.add(definition.type)
                # rosbag2 stores the first topic's hash with its type's definition
                db.execute(
                    "INSERT INTO message_definitions (topic_type, encoding, "
                    "encoded_message_definition, type_description_hash) VALUES (?, ?, ?, ?)",
                    (definition.type, definition.encoding, definition.text, type_hash),
                )
            return ids[name]

        for topic in bag.topics:
            declare(topic.name)
        insert = "INSERT INTO messages (timestamp, topic_id, data) VALUES (?, ?, ?)"
        rows: list[tuple[int, int, bytes | memoryview]] = []
        for name, time, data in messages:
            rows.append((time, ids.get(name) or declare(name), data))
            if len(rows) >= _ROWS:
                db.executemany(insert, rows)
                rows.clear()
        db.executemany(insert, rows)


def _write_mcap(bag: NewBag, messages: Iterable[Entry], stream: IO[bytes]) -> None:
    from mcap.writer import Writer

    writer = Writer(stream)
    writer.start(profile="ros2", library="nanorec")
    schemas: dict[str, int] = {}
    channels: dict[str, int] = {}

    def declare(name: str) -> int:
        topic = bag.topic(name)
        if topic.type not in schemas:
            definition = bag.definition(topic.type)
            schemas[topic.type] = writer.register_schema(
                name=topic.type,
                encoding=definition.encoding if definition else "",
                data=definition.text.encode() if definition else b"",
            )
        metadata = {"offered_qos_profiles": topic.offered_qos_profiles}
        type_hash = bag.type_hash(topic)
        if type_hash or stores_type_hashes(bag.distro):  # Iron's plugin on writes it, even ""
            metadata["topic_type_hash"] = type_hash
        channels[name] = writer.register_channel(
            topic=topic.name,
            message_encoding=topic.serialization_format,
            schema_id=schemas[topic.type],
            metadata=metadata,
        )
        return channels[name]

    for topic in bag.topics:
        declare(topic.name)
    for sequence, (name, time, data) in enumerate(messages):
        writer.add_message(
            channel_id=channels[name] if name in channels else declare(name),
            log_time=time,
            publish_time=time,
            data=bytes(data),
            sequence=sequence,
        )
    writer.finish()  # type: ignore[no-untyped-call]


def metadata_text(bag: NewBag, name: str) -> str:
    """metadata.yaml for the new bag, as rosbag2 writes it (version 8: QoS as YAML text)."""
    first = bag.first or 0
    duration = (bag.last or 0) - first
    total = sum(bag.counts.values())
    infos = tuple(
        TopicInformation(
            name=t.name,
            type=t.type,
            serialization_format=t.serialization_format,
            offered_qos_profiles=t.offered_qos_profiles,
            type_description_hash=bag.type_hash(t),
            message_count=bag.counts.get(t.name, 0),
        )
        for t in bag.topics
    )
    meta = BagMetadata(
        version=8,
        storage_identifier=bag.storage,
        duration_ns=duration,
        starting_time_ns=first,
        message_count=total,
        topics_with_message_count=infos,
        relative_file_paths=(name,),
        compression_format=bag.compression[0],
        compression_mode=bag.compression[1],
        files=(FileInformation(name, first, duration, total),),
        ros_distro=bag.distro,
    )
    return metadata_yaml(meta, version=8)
