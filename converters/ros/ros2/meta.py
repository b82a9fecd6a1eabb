"""`Ros2Meta`: what a ROS 2 archive holds beside its messages (see `convert.py`).

Every side member is read through the core (`ArchiveReader.meta`, `member_array`), bounded
and length-checked (why: an archive is input too, and a hostile one must fail with a
`FormatError`, not a traceback or a bomb)."""

from __future__ import annotations

from functools import cached_property
from typing import Any

import numpy as np
from numpy.typing import NDArray

from nanorec.archive.reader import ArchiveReader
from nanorec.errors import FormatError, UnsupportedError

from .bag import bagfile_information
from .members import (
    FILE_DTYPE,
    FILE_MEMBER,
    META_MEMBER,
    META_VERSION,
    RANK_DTYPE,
    RANK_MEMBER,
    TIME_MEMBER,
)
from .storage import Definition, Topic


class Ros2Meta:
    def __init__(self, reader: ArchiveReader) -> None:
        self.reader = reader
        meta = reader.meta(META_MEMBER)
        if not isinstance(meta, dict) or meta.get("version") != META_VERSION:
            raise FormatError(f"{META_MEMBER}: unknown layout version")
        try:
            self.folder: bool = bool(meta["folder"])
            self.metadata: bytes | None = meta["metadata"]
            self.notes: list[str] = meta["notes"]
            self.files: list[dict[str, Any]] = meta["files"]
        except KeyError as error:
            raise FormatError(f"damaged {META_MEMBER} member: no {error}") from None
        if not isinstance(self.files, list) or not self.files:
            raise FormatError(f"damaged {META_MEMBER} member: no list of bag files")
        #: Rebuilt from a killed conversion's messages (`adopt.py`): no skeletons, so export
        #: writes a new bag.
        self.adopted: bool = bool(meta.get("adopted", False))
        self._compression: Any = meta.get("compression")

    @cached_property
    def file(self) -> NDArray[Any]:
        """Per archive message, the index of the bag file holding it."""
        if len(self.files) == 1:
            return np.zeros(len(self.reader), FILE_DTYPE)
        file = self._array(FILE_MEMBER, FILE_DTYPE)
        if len(file) and int(file.max()) >= len(self.files):
            raise FormatError(
                f"{FILE_MEMBER} names bag file {int(file.max())} of {len(self.files)}"
            )
        return file

    @cached_property
    def time(self) -> NDArray[np.int64]:
        """Per archive message, its receive time in ns since the epoch."""
        return self._array(TIME_MEMBER, "<i8")

    @cached_property
    def rank(self) -> NDArray[Any]:
        """Per archive message, its place in its file's order."""
        return self._array(RANK_MEMBER, RANK_DTYPE)

    def _array(self, name: str, dtype: Any) -> NDArray[Any]:
        return self.reader.member_array(name, dtype)

    def check(self) -> None:
        """Read every side member once (`verify`): FormatError for the first bad one."""
        _ = (self.time, self.file, self.rank)

    def in_archive_order(self, index: int) -> bool:
        """Whether bag file `index` is every message, in archive order (the usual bag of one
        file): its numbers need not be held (80 MB at 10 M messages). The ranks are compared
        a block at a time (no temporaries of their count)."""
        if len(self.files) != 1:
            return False
        if "rank" in self.__dict__:  # read already
            rank = self.rank
            return not len(rank) or bool(np.all(rank[1:] > rank[:-1]))
        # the member read in chunks, never held (deflated: 40 MB at 10 M messages)
        itemsize = np.dtype(RANK_DTYPE).itemsize
        wanted = len(self.reader) * itemsize
        last = -1
        size = 0
        tail = b""
        for chunk in self.reader.member_chunks(RANK_MEMBER):
            data = tail + chunk
            cut = len(data) - len(data) % itemsize
            tail = data[cut:]
            size += cut
            if size > wanted:
                break
            block = np.frombuffer(data[:cut], RANK_DTYPE).astype(np.int64)
            if len(block) and (block[0] <= last or not bool(np.all(block[1:] > block[:-1]))):
                return False
            last = int(block[-1]) if len(block) else last
        if size != wanted or tail:
            _ = self.rank  # FormatError naming the member and its size
        return True

    def numbers_of_file(self, index: int) -> NDArray[np.int64]:
        """The archive messages of bag file `index`, in that file's order."""
        if len(self.files) == 1:  # every message (millions: no temporaries of their count)
            # a file in archive order is told by `in_archive_order` first (`pieces`), which
            # streams the member instead of holding it
            return np.argsort(self.rank, kind="stable")
        numbers = np.flatnonzero(self.file == index)
        return numbers[np.argsort(self.rank[numbers], kind="stable")]

    def topics(self, index: int) -> list[Topic]:
        return [Topic(**topic) for topic in self.files[index]["topics"]]

    @cached_property
    def types(self) -> dict[str, str]:
        """Topic name -> type, over every file (the first file declaring it wins)."""
        found: dict[str, str] = {}
        for index in range(len(self.files)):
            for topic in self.topics(index):
                found.setdefault(topic.name, topic.type)
        return found

    @cached_property
    def definitions(self) -> dict[str, Definition]:
        """Type -> the definition the bag carries (the first non-empty one)."""
        found: dict[str, Definition] = {}
        for entry in self.files:
            for item in entry["definitions"]:
                definition = Definition(**item)
                if definition.text and definition.type not in found:
                    found[definition.type] = definition
        return found

    @cached_property
    def information(self) -> dict[str, Any]:
        """rosbag2's `rosbag2_bagfile_information` map: metadata.yaml's, else the first
        file's stored copy that parses; {} without one. Cached: `Ros2Recording.serialized`
        asks for the compression of every message, and parsing the YAML each time made
        decoding a 6000-message bag take minutes."""
        for text in [self.metadata, *(f["stored_metadata"] for f in self.files)]:
            if not text:
                continue
            try:
                return bagfile_information(text if isinstance(text, bytes) else text.encode())
            except (FormatError, UnsupportedError):  # unreadable, or no PyYAML: as compression_of
                continue
        return {}

    @cached_property
    def compression(self) -> tuple[str, str]:
        """rosbag2's (compression_format, compression_mode), from metadata.yaml."""
        if self.adopted:  # no metadata YAML left: what the first message said
            given = self._compression
            return (str(given[0]), str(given[1])) if isinstance(given, list) else ("", "")
        info = self.information
        return str(info.get("compression_format") or ""), str(info.get("compression_mode") or "")

    @cached_property
    def ros_distro(self) -> str:
        """The distro the bag names: its storage's (the sqlite3 `schema` table, the MCAP
        `rosbag2` record), else metadata.yaml's `ros_distro` (version 8 on); "" if none."""
        for entry in self.files:
            if entry["ros_distro"]:
                return str(entry["ros_distro"])
        return str(self.information.get("ros_distro") or "")
