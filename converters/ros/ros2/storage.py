"""What a storage file of a ROS 2 bag is made of, whichever the storage (sqlite3 or MCAP).

Each storage module (`db3.py`, `mcap_file.py`) opens a file's bytes as a `StorageFile`: its
topics, the message definitions it carries, the metadata YAML it stores, and its messages in
file order. What is not message data (SQLite pages and cells, MCAP records and chunk framing)
is the file's *skeleton*: `skeleton()` gives it once `messages()` has been read through, and
the module's `join(skeleton, datas)` interleaves the data back, giving the file byte for byte.
So an archive holds each message's data once, and the rest of the file once.
`storage_open.py` and `storage_join.py` pick the module by storage; this one is below them.
"""

from __future__ import annotations

import contextlib
import mmap
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
from numpy.typing import NDArray

from nanorec.buffers import Buffer
from nanorec.contract import Region

from .msgdef import service_of


@dataclass(frozen=True)
class Topic:
    """A topic as the storage declares it (sqlite `topics` row, MCAP channel + schema)."""

    key: int  # sqlite topics.id, MCAP channel id
    name: str
    type: str  # "pkg/msg/Type"
    serialization_format: str  # "cdr"
    offered_qos_profiles: str = ""  # YAML text, as stored
    type_description_hash: str = ""  # "RIHS01_<hex>" or ""
    #: A `ros1` channel's metadata: the ROS1 connection header the MCAP kept (`callerid`,
    #: `latching`, `md5sum`...); empty for any other channel, and then not archived.
    ros1_connection: dict[str, str] = field(default_factory=dict, hash=False, kw_only=True)


@dataclass(frozen=True)
class Definition:
    """The message definition a storage carries for a type (sqlite `message_definitions`,
    MCAP schema): `encoding` "ros2msg", "ros2idl" or "" (none found by the writer)."""

    type: str
    encoding: str
    text: str


def definition_for(definitions: Mapping[str, Definition], type_name: str) -> Definition | None:
    """The definition of `type_name` among a bag's: its own, else a service event's service's
    (rosbag2's sqlite3 storage keeps `pkg/srv/Foo`'s `.srv` for `pkg/srv/Foo_Event`)."""
    found = definitions.get(type_name)
    service = service_of(type_name)
    if found is None and service is not None:
        found = definitions.get(service)
    return found


@dataclass(frozen=True, slots=True)
class StoredMessage:
    """One message of a storage file: its topic key, receive time (ns since the epoch, sqlite
    `timestamp` / MCAP `log_time`) and data as stored (CDR, or a zstd frame in MESSAGE
    compression mode)."""

    topic: int
    timestamp: int
    data: bytes | memoryview


@dataclass(frozen=True)
class Batch:
    """Messages of a storage file, in file order, as columns (no Python object a message):
    message i has topic key `topics[i]`, time `times[i]` and its data at
    `buf[starts[i] : starts[i] + lengths[i]]`."""

    topics: NDArray[np.int64]
    times: NDArray[np.int64]
    starts: NDArray[np.int64]
    lengths: NDArray[np.int64]
    buf: bytes | memoryview | NDArray[np.uint8]  # a 1-D uint8 array when gathered

    def view(self) -> memoryview:
        """The buffer as bytes (format "B"), not copied."""
        buf = self.buf
        return (buf.data if isinstance(buf, np.ndarray) else memoryview(buf)).cast("B")

    def datas(self) -> bytes | memoryview:
        """The messages' datas back to back (a view when they are so already)."""
        count = len(self.starts)
        if not count:
            return b""
        first, last = int(self.starts[0]), int(self.starts[-1] + self.lengths[-1])
        if count == 1 or (self.starts[1:] == (self.starts + self.lengths)[:-1]).all():
            return self.view()[first:last]
        buf = self.buf
        data = buf if isinstance(buf, np.ndarray) else np.frombuffer(buf, np.uint8)
        return gather(data, self.starts, self.lengths).data


def gather(
    data: NDArray[np.uint8], starts: NDArray[np.int64], lengths: NDArray[np.int64]
) -> NDArray[np.uint8]:
    """The stretches `data[starts[i] : starts[i] + lengths[i]]` back to back, with numpy."""
    total = int(lengths.sum())
    ends = np.cumsum(lengths)
    index = np.repeat(starts - (ends - lengths), lengths)
    index += np.arange(total, dtype=np.int64)
    out: NDArray[np.uint8] = data[index]
    return out


#: Messages a `batched` batch holds at most, and data bytes past which it is given (a
#: batch of camera images is one or a few of them: its datas are joined).
BATCH_MESSAGES = 8192
BATCH_BYTES = 4 << 20


def batches(stored: StorageFile) -> Iterator[Batch]:
    """A storage file's messages as batches: its own `batches()` when it has one (read with
    numpy), else `messages()` gathered (the same messages, in the same order)."""
    own = getattr(stored, "batches", None)
    if own is not None:
        yield from own()
        return
    yield from batched(stored.messages())


def batched(messages: Iterable[StoredMessage]) -> Iterator[Batch]:
    """Messages one at a time, as batches of up to `BATCH_MESSAGES` or `BATCH_BYTES`."""
    topics: list[int] = []
    times: list[int] = []
    datas: list[bytes | memoryview] = []
    size = 0
    for message in messages:
        topics.append(message.topic)
        times.append(message.timestamp)
        datas.append(message.data)
        size += len(message.data)
        if len(datas) >= BATCH_MESSAGES or size >= BATCH_BYTES:
            yield _batch(topics, times, datas)
            topics, times, datas = [], [], []
            size = 0
    if datas:
        yield _batch(topics, times, datas)


def _batch(topics: list[int], times: list[int], datas: list[bytes | memoryview]) -> Batch:
    lengths = np.fromiter(map(len, datas), np.int64, len(datas))
    return Batch(
        np.array(topics, np.int64),
        np.array(times, np.int64),
        np.cumsum(lengths) - lengths,
        lengths,
        b"".join(datas),
    )


@dataclass
class Damage:
    """What could not be read: `cut` is a crashed file's incomplete tail, `damaged` regions
    inside it (skipped); both are kept in the skeleton, so the file still comes back whole.

    `losses` are the parts that held messages not all read back (a cut or damaged chunk,
    pages cut off or unreadable), each saying in its reason how many were recovered and
    lost: they are damage wherever they are, even inside the cut tail, since messages were
    dropped. `lost_messages` is a lower bound (a cut stream hides how many it held),
    `lost_bytes` the bytes of those parts not read back."""

    cut: Region | None = None
    damaged: list[Region] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    losses: list[Region] = field(default_factory=list)
    lost_messages: int = 0
    lost_bytes: int = 0


class StorageFile(Protocol):
    storage: str  # "sqlite3" or "mcap"
    topics: list[Topic]  # in the storage's own order
    definitions: list[Definition]
    #: The newest metadata YAML the file stores (sqlite `metadata` table, MCAP `rosbag2`
    #: metadata record), or None.
    stored_metadata: str | None
    #: sqlite `schema.ros_distro` / MCAP `ROS_DISTRO` metadata, or None.
    ros_distro: str | None
    damage: Damage

    def messages(self) -> Iterator[StoredMessage]:
        """Every complete message, in file order (read once)."""
        ...

    def skeleton(self) -> bytes | bytearray:
        """The file without its messages' data (after `messages()` was read through)."""
        ...


#: Bytes of a mapped storage file read between two `release_pages` (bounded RSS).
RELEASE_BYTES = 32 << 20


def release_pages(view: Buffer) -> None:
    """Give back the pages of a mapped file read so far (a big file stays out of RSS; they
    are read again from the page cache if needed)."""
    mapped = view.obj if isinstance(view, memoryview) else view
    if isinstance(mapped, mmap.mmap):
        with contextlib.suppress(OSError, ValueError):
            mapped.madvise(mmap.MADV_DONTNEED)


SQLITE_MAGIC = b"SQLite format 3\x00"
MCAP_MAGIC = b"\x89MCAP0\r\n"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


def storage_of(head: bytes) -> str | None:
    """ "sqlite3" or "mcap" for a storage file starting with `head`, else None."""
    if head.startswith(SQLITE_MAGIC):
        return "sqlite3"
    if head.startswith(MCAP_MAGIC):
        return "mcap"
    return None
