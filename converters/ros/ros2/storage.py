"""What a storage file of a ROS 2 bag is made of, whichever the storage (sqlite3 or MCAP).

Each storage module (`db3.py`, `mcap_file.py`) opens a file's bytes as a `StorageFile`: its
topics, the message definitions it carries, the metadata YAML it stores, and its messages in
file order. What is not message data (SQLite pages and cells, MCAP records and chunk framing)
is the file's *skeleton*: `skeleton()` gives it once `messages()` has been read through, and
the module's `join(skeleton, datas)` interleaves the data back, giving the file byte for byte.
So an archive holds each message's data once, and the rest of the file once.
"""

from __future__ import annotations

import contextlib
import mmap
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from nanorec.contract import Region

from .msgdef import service_of

if TYPE_CHECKING:
    from .datas import Source


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


def release_pages(view: memoryview | bytes) -> None:
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


def open_storage(
    storage: str, buf: bytes | memoryview, main_size: int | None = None
) -> StorageFile:
    """The storage file `buf` (a sqlite3 or MCAP file's bytes; with `main_size`, a sqlite3
    file's `main_size` bytes followed by its WAL's)."""
    if storage == "sqlite3":
        from .db3 import open_db3

        return open_db3(buf, main_size)
    from .mcap_file import open_mcap

    return open_mcap(buf)


def join(
    storage: str, skeleton: bytes | memoryview, datas: Source | Iterable[bytes | memoryview]
) -> Iterator[bytes | memoryview]:
    """The pieces of a storage file: its skeleton with `datas` (file order: a `Source`, or
    byte strings) put back."""
    if storage == "sqlite3":
        from .db3_skeleton import join_db3

        return join_db3(skeleton, datas)
    from .mcap_skeleton import join_mcap

    return join_mcap(skeleton, datas)
