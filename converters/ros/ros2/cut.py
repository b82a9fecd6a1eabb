"""Archive -> a new ROS 2 bag holding a selection (a cut), or every message (`--format
indexed`: the repair of a crashed bag, with the `metadata.yaml` reindex should have made).

The messages keep their data as stored and their receive times; the new bag is written by
`writer.py` (sqlite3 schema 4 or MCAP, as rosbag2 writes them), stored and shaped as
`writer.bag_target` says: a `.db3`/`.mcap` output is one storage file of that storage, any
other name the bag's own shape and storage (or `--storage`).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from nanorec.archive.reader import ArchiveReader
from nanorec.contract import ExportReport
from nanorec.selection import Selection

from .datas import data_of
from .recording import Ros2Recording
from .storage import Definition, Topic, definition_for
from .writer import Entry, NewBag, bag_target, write_bag


def export_selection(
    reader: ArchiveReader,
    output: Path,
    *,
    selection: Selection | None,
    overwrite: bool,
    storage: str | None = None,
) -> ExportReport:
    rec = Ros2Recording(reader)
    source = rec.meta.files[0]["storage"]
    target = bag_target(output, storage, source=source, source_folder=rec.meta.folder)
    numbers = (selection or Selection()).chosen(reader.index)
    topics = _topics(rec, numbers)
    bag = NewBag(
        topics=topics,
        definitions=_definitions(rec.meta.definitions, [topic.type for topic in topics]),
        storage=target.storage,
        distro=next((e["ros_distro"] for e in rec.meta.files if e["ros_distro"]), "") or "",
        compression=rec.meta.compression,
    )
    return write_bag(
        output, bag, _messages(rec, numbers), folder=target.folder, overwrite=overwrite
    )


def _definitions(definitions: dict[str, Definition], types: list[str]) -> list[Definition]:
    """The definitions of `types`, each once; a service event's is its service's when the bag
    stores it so (sqlite3: `pkg/srv/Foo` for `pkg/srv/Foo_Event`)."""
    found: dict[str, Definition] = {}
    for type_name in types:
        definition = definition_for(definitions, type_name)
        if definition is not None:
            found.setdefault(definition.type, definition)
    return list(found.values())


def _topics(rec: Ros2Recording, numbers: NDArray[np.int64]) -> list[Topic]:
    """The topics of the selected messages, each once, in the order the bag declares them."""
    codes = rec.reader.index.types_code[numbers]
    _, first = np.unique(codes, return_index=True)
    used = {rec.kind_of(int(numbers[i])) for i in first}
    found: dict[str, Topic] = {}
    for index in range(len(rec.meta.files)):
        for topic in rec.meta.topics(index):
            if topic.name in used:
                found.setdefault(topic.name, topic)
    return list(found.values())


def _messages(rec: Ros2Recording, numbers: NDArray[np.int64]) -> Iterator[Entry]:
    for number in numbers.tolist():
        yield rec.kind_of(number), rec.time_ns(number), data_of(rec.reader, number)
