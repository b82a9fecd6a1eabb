"""ROS 2 bag -> nanorec archive, and the facts export needs to give every file back.

One archive message per bag message, in receive-time order (ties: bag order), keyed by its
topic: `{topic: {"timestamp": ns, "data": bytes}}`, `data` as the storage holds it (CDR, or
a zstd frame in rosbag2's MESSAGE compression). Each storage file's *skeleton* (what is not
message data, see `storage.py`) is the member `ros2-skeleton-<i>.bin`; the columns
`ros2-file.bin` and `ros2-rank.bin` say, per archive message, which file holds it and where
in that file's order, so export can put every datum back; `ros2-time.bin` holds its time in
nanoseconds (the index keeps microseconds). The member `ros2.msgpack.zlib`
holds the rest: `metadata.yaml` as it was, and per file its name, hash, topics,
definitions and damage. A file compressed per file (`<file>.zstd`) is kept as it is
(`ros2-zstd-<i>.bin`): zstd output differs between library versions, so it cannot be
rebuilt from the inflated file. The first message of each topic also says what the topic
is (`"topic"`) and the archive's first message what the bag was (`"bag"`), so the messages
of a killed conversion still make a bag (`described.py`, `adopt.py`). A `.db3` with a
non-empty WAL is read with it, as one buffer (the file, then the WAL): its skeleton holds
both, its entry says the WAL's name, size and hash (`wal`), and export splits the joined
bytes into the two files again.
"""

from __future__ import annotations

import contextlib
import hashlib
import mmap
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import asdict
from pathlib import Path
from typing import IO, Any, Final

import numpy as np
from numpy.typing import NDArray

from nanorec.archive.writer import ArchiveWriter
from nanorec.buffers import Buffer
from nanorec.contract import ConvertReport
from nanorec.errors import FormatError, NanorecError, OutputExistsError

from .bag import BagFile, BagLayout, locate
from .columns import Columns, known_codes, learn_codes
from .extras import extra
from .mcap_file import McapFile
from .members import (
    FILE_DTYPE,
    FILE_MEMBER,
    META_MEMBER,
    META_VERSION,
    RANK_DTYPE,
    RANK_MEMBER,
    TIME_MEMBER,
    folder_sha256,
    skeleton_member,
    zstd_member,
)
from .report import report, source_losses
from .runs import Runs
from .storage import (
    RELEASE_BYTES,
    StorageFile,
    Topic,
    batches,
    release_pages,
    storage_of,
)
from .storage_open import open_storage
from .zstd_bound import inflate_file

SOURCE_FORMAT: Final = "ros2"
_BLOCK: Final = 1 << 16
#: The sort's columns where a bag in time order reads none (no None to rule out per block).
_NONE: Final[NDArray[np.int64]] = np.zeros(0, np.int64)


def convert(
    source: Path,
    output: Path,
    *,
    overwrite: bool = False,
    progress: Callable[[int], None] | None = None,
) -> ConvertReport:
    """Convert the bag at `source` (a folder or one storage file) into `output`;
    `progress(n)` gets the bytes of its storage files done, last the bag's size."""
    if output.exists() and not overwrite:
        raise OutputExistsError(f"{output} exists; pass overwrite=True to replace it")
    layout = locate(source)
    with contextlib.ExitStack() as stack:

        def scratch(what: str) -> IO[bytes]:
            return stack.enter_context(
                tempfile.TemporaryFile(dir=output.parent, prefix=f".nanorec-ros2-{what}-")
            )

        spool = scratch("spool")
        columns = Columns(scratch, FILE_DTYPE, RANK_DTYPE)
        topics: list[str] = []
        entries, done = [], 0
        for bag_file in layout.files:
            entry = _scan_file(bag_file, spool, columns, topics, stack, scratch)
            entries.append(entry)
            done += entry["size"]
            if progress is not None:
                progress(done)
        report = _write(source, layout, entries, spool, columns, topics, output, overwrite)
    if progress is not None:  # metadata.yaml and -wal files count too
        progress(report.source_size)
    return report


def _scan_file(
    bag_file: BagFile,
    spool: IO[bytes],
    columns: Columns,
    topics: list[str],
    stack: contextlib.ExitStack,
    scratch: Callable[[str], IO[bytes]],
) -> dict[str, Any]:
    """Spool one storage file's messages; its facts for the meta member."""
    handle = stack.enter_context(bag_file.path.open("rb"))
    raw = _mapped(handle)
    digest = _sha256(raw)
    size = len(raw)
    buf: bytes | mmap.mmap = raw
    wal: dict[str, Any] | None = None
    if bag_file.compressed:
        buf = _inflated(raw, bag_file, scratch("zstd"))
    elif bag_file.wal is not None:
        buf, wal = _with_wal(raw, bag_file.wal, scratch("wal"))
    storage = storage_of(bytes(buf[:16]))
    if storage is None:
        raise FormatError(f"{bag_file.name}: neither a sqlite3 nor an MCAP file", offset=0)
    try:
        stored = open_storage(storage, buf, None if wal is None else size)
    except NanorecError as error:
        raise type(error)(f"{bag_file.name}: {error.message}", offset=error.offset) from None
    if isinstance(stored, McapFile):
        stored.scratch = scratch  # its skeleton spills beside the output too
    names = {topic.key: topic.name for topic in stored.topics}
    position = {name: n for n, name in enumerate(topics)}
    columns.start_file()
    written = 0
    known = np.zeros(0, np.int64)  # archive codes by topic key: see `known_codes`
    for batch in batches(stored):
        codes = known_codes(batch.topics, known)
        if codes is None:
            # topic keys to archive topic codes, new names numbered as they first come
            keys, first, inverse = np.unique(batch.topics, return_index=True, return_inverse=True)
            coded = np.zeros(len(keys), np.int64)
            for k in np.argsort(first, kind="stable").tolist():
                name = names.get(int(keys[k]), f"topic:{int(keys[k])}")
                if name not in position:
                    position[name] = len(topics)
                    topics.append(name)
                coded[k] = position[name]
            codes = coded[inverse.reshape(-1)]
            known = learn_codes(known, keys, coded)
        spool.write(batch.datas())
        columns.add(batch.times, batch.lengths, codes)
        written += int(batch.lengths.sum())
        if written > RELEASE_BYTES:  # bounded RSS: give back the pages read so far
            written = 0
            release_pages(buf)
            release_pages(raw)
    entry = {
        "name": bag_file.name,
        "compressed": bag_file.compressed,
        "storage": storage,
        "size": size,
        "sha256": digest,
        "messages": columns.counts[-1],
        "skeleton": _spooled(stored, scratch("skeleton")),
        **_facts(stored),
    }
    if wal is not None:  # only then: the archive of a bag without a WAL stays as it was
        entry["wal"] = wal
    return entry


def _with_wal(
    raw: Buffer, wal: Path, target: IO[bytes]
) -> tuple[bytes | mmap.mmap, dict[str, Any]]:
    """A .db3 file then its WAL, in one temporary file (mapped): the file SQLite would read
    after a crash is the two together, and one skeleton holds what both are besides the
    messages' data (export splits it at the file's size again)."""
    target.write(raw)
    digest = hashlib.sha256()
    with wal.open("rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
            target.write(block)
    target.flush()
    size = target.tell() - len(raw)
    return _mapped(target), {"name": wal.name, "size": size, "sha256": digest.hexdigest()}


def wal_hashes(entry: dict[str, Any]) -> list[tuple[str, str]]:
    """(name, sha256) of a bag file's WAL, when it came with one: part of the bag's hash."""
    wal = entry.get("wal")
    return [(wal["name"], wal["sha256"])] if wal else []


def _facts(stored: StorageFile) -> dict[str, Any]:
    damage = stored.damage
    extra = {
        name: getattr(stored, name)
        for name in (
            "schema_version",
            "page_size",
            "profile",
            "library",
            "statistics",
            "chunks",
            "kept_chunks",
        )
        if getattr(stored, name, None) is not None
    }
    facts: dict[str, Any] = {
        "topics": [_topic_entry(topic) for topic in stored.topics],
        "definitions": [asdict(definition) for definition in stored.definitions],
        "stored_metadata": stored.stored_metadata,
        "ros_distro": stored.ros_distro,
        "cut": None if damage.cut is None else asdict(damage.cut),
        "damaged": [asdict(region) for region in damage.damaged],
        "notes": list(damage.notes),
        "extra": _plain(extra),
    }
    if damage.losses:  # only then: a whole file's facts (and archive) stay as they were
        facts["losses"] = [asdict(region) for region in damage.losses]
        facts["lost_messages"] = damage.lost_messages
        facts["lost_bytes"] = damage.lost_bytes
    return facts


def _topic_entry(topic: Topic) -> dict[str, Any]:
    """A topic as archived: the ROS1 connection header only for a `ros1` channel, so the
    archives of ROS 2 bags stay as they were."""
    entry = asdict(topic)
    if not topic.ros1_connection:
        del entry["ros1_connection"]
    return entry


def _plain(value: Any) -> Any:
    """Storage facts as msgpack can hold them (dataclasses as maps)."""
    if hasattr(value, "__dataclass_fields__"):
        return _plain(asdict(value))
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _spooled(stored: StorageFile, file: IO[bytes]) -> IO[bytes]:
    """A storage file's skeleton in a temporary file until the archive is written (a bag of
    small messages has a skeleton of a third of its size: not kept in memory; a `.db3`'s is
    written there as it is made)."""
    write = getattr(stored, "write_skeleton", None)
    if write is not None:
        write(file)
    else:
        file.write(stored.skeleton())
    return file


def _sha256(buf: Buffer) -> str:
    """A mapped file's sha256, giving its pages back as it goes."""
    digest = hashlib.sha256()
    for start in range(0, len(buf), RELEASE_BYTES):
        digest.update(buf[start : start + RELEASE_BYTES])
        release_pages(buf)
    return digest.hexdigest()


def _mapped(handle: IO[bytes]) -> bytes | mmap.mmap:
    handle.seek(0, 2)
    if not handle.tell():
        return b""
    return mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)


def _inflated(raw: Buffer, bag_file: BagFile, target: IO[bytes]) -> bytes | mmap.mmap:
    """A per-file compressed storage file, inflated into a temporary file (streamed: a big
    bag never sits in memory; bounded: see `zstd_bound.inflate_file`)."""
    inflate_file(extra("zstandard"), raw, bag_file.name, target)
    return _mapped(target)


def _write(
    source_path: Path,
    layout: BagLayout,
    entries: list[dict[str, Any]],
    spool: IO[bytes],
    columns: Columns,
    topics: list[str],
    output: Path,
    overwrite: bool,
) -> ConvertReport:
    # the time column is the time member of a bag in time order: one copy of it, not two
    time_member = columns.read_bytes("time")
    times = np.frombuffer(time_member, "<i8")
    count = len(times)
    # ties stay in bag order; a bag in time order (the usual) is not sorted at all
    order: NDArray[Any] | None = None
    if count and (times[1:] < times[:-1]).any():
        order = np.argsort(times, kind="stable").astype(np.uint32 if count < 2**32 else np.int64)
        time_member = times[order].astype("<i8").tobytes()
    spool.flush()
    data = _mapped(spool)
    hashes = [pair for e in entries for pair in [(e["name"], e["sha256"]), *wal_hashes(e)]]
    if layout.metadata is not None:
        hashes.insert(0, ("metadata.yaml", hashlib.sha256(layout.metadata).hexdigest()))
    sha = folder_sha256(hashes) if layout.folder or len(hashes) > 1 else entries[0]["sha256"]
    source_size = sum(e["size"] + e.get("wal", {}).get("size", 0) for e in entries)
    source_size += len(layout.metadata or b"")
    source: dict[str, Any] = {"name": layout.root.name, "size": source_size, "sha256": sha}
    source.update(source_losses(entries))
    with ArchiveWriter(
        output,
        overwrite=overwrite,
        source_format=SOURCE_FORMAT,
        source=source,
    ) as writer:
        out = Runs(writer, layout, entries, topics, data)
        # spool offsets: the lengths before each message (in scan order); a bag in order
        # reads its columns a block at a time
        sizes: NDArray[Any] = _NONE  # (read only when `order` is not None)
        topic_of: NDArray[Any] = _NONE
        starts: NDArray[np.int64] = _NONE
        if order is not None:
            sizes, topic_of = columns.read("length"), columns.read("topic")
            starts = np.cumsum(sizes, dtype=np.int64) - sizes
        at = 0
        for first in range(0, count, _BLOCK):  # a block of rows at a time: no list of all
            if order is None:
                block: slice | NDArray[Any] = slice(first, first + _BLOCK)
                lengths = columns.read("length", first, _BLOCK).astype(np.int64)
                codes = columns.read("topic", first, _BLOCK)
                offsets = at + np.cumsum(lengths) - lengths
                at += int(lengths.sum())
            else:
                block = order[first : first + _BLOCK]
                lengths = sizes[block].astype(np.int64)
                codes = topic_of[block]
                offsets = starts[block]
            out.block(first, times[block], offsets, lengths, codes.astype(np.int64))
        del starts, sizes, topic_of, out, times
        for index, entry in enumerate(entries):
            skeleton = entry.pop("skeleton")
            if not entry["compressed"]:  # a compressed file is kept whole instead
                writer.add_member(skeleton_member(index), _read_back(skeleton))
            else:
                writer.add_member(zstd_member(index), _chunks(layout.files[index].path))
        writer.add_member(TIME_MEMBER, time_member)
        del time_member
        made = columns.members(order)
        if "file" in made:  # one file: every message is in file 0
            writer.add_member(FILE_MEMBER, made.pop("file"))
        writer.add_member(RANK_MEMBER, made.pop("rank"))
        meta = {
            "version": META_VERSION,
            "folder": layout.folder,
            "metadata": layout.metadata,
            "notes": layout.notes + layout.problems,
            "files": entries,
        }
        writer.add_meta(META_MEMBER, meta)
    if isinstance(data, mmap.mmap):
        with contextlib.suppress(BufferError):
            data.close()
    return report(source_path, output, layout, entries, count, source_size, sha)


def _read_back(file: IO[bytes]) -> Iterator[bytes]:
    """A temporary file's bytes from the start, 1 MiB at a time (a streamed member)."""
    file.flush()
    file.seek(0)
    while block := file.read(1 << 20):
        yield block


def _chunks(path: Path) -> Iterator[bytes]:
    """A file's bytes, 1 MiB at a time (a member streamed when the archive closes)."""
    with path.open("rb") as handle:
        while block := handle.read(1 << 20):
            yield block
