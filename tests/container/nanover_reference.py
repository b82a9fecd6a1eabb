"""A stand-in for NanoVer's recording reader and writer, for compatibility tests.

`nanover-server` cannot be installed here, so this module reproduces the behaviour of its
reading path and the file layout of its writer.

Provenance. Reader behaviour follows `IRL2/nanover-server-py`,
`python-libraries/nanover-server/src/nanover/recording/reading.py` (stored public copy at
commit 059789f4288ff3b42e1e5430418069ef2cb5a69c), and the research notes in
`/work/shared/spec/nanover-recording.md` sections 1.1-1.8 and 2.1-2.2. Upstream is GPL-3.0 and
nanorec is MIT, so nothing is copied: this is an independent re-implementation that keeps
upstream's names and the behaviour that matters for compatibility:

- `ZipFile` opens both members *by name* (`KeyError` when one is missing; order and extra
  members do not matter; deflated members work);
- every index element becomes `RecordingIndexEntry(**entry)`, a keyword-only dataclass with
  exactly `offset`, `length`, `metadata` (default `{}`), so any other key raises `TypeError`;
- messages are read by `seek` + `read` on one shared `ZipExtFile` and decoded with
  `msgpack.unpackb` defaults (non-str/bytes map keys raise `ValueError`);
- `get_message_type_from_entry` skips decoding when `metadata["types"]` exists and lacks the
  type; `iter_message_events` needs `metadata["timestamp"]` (`KeyError` otherwise);
- `iter_states_full` applies `updates` then pops `removals`; frames unpack known array keys
  with `np.frombuffer` (bytes) or `np.fromiter` (lists) and merge with the frame.index == 0
  reset rule.

The writer (`NanoverRecordingWriter`) lays files out as spec 1.1 describes: `zipfile` in "w"
mode, `messages.msgpack` opened first with `force_zip64=True` and streamed into, then
`index.msgpack` written in one go at close; metadata `types`, `frame.index` (frames that carry
one), then `timestamp`.
"""

from __future__ import annotations

import dataclasses
import zipfile
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from os import PathLike
from typing import IO, Any, BinaryIO

import msgpack
import numpy as np

RECORDING_INDEX_FILENAME = "index.msgpack"
RECORDING_MESSAGES_FILENAME = "messages.msgpack"
MICROSECONDS_TO_SECONDS = 1e-6

# FRAME_PACKERS of frame_dict.py (spec 1.5): key -> (dtype, trailing shape).
_ARRAY_KEYS: dict[str, tuple[str, tuple[int, ...]]] = {
    "particle.positions": ("float32", (3,)),
    "particle.velocities": ("float32", (3,)),
    "particle.forces": ("float32", (3,)),
    "particle.forces.system": ("float32", (3,)),
    "system.box.vectors": ("float32", (3,)),
    "forces.user.sparse": ("float32", (3,)),
    "particle.elements": ("uint8", ()),
    "bond.orders": ("uint8", ()),
    "particle.colors": ("uint8", (4,)),
    "particle.residues": ("uint32", ()),
    "residue.chains": ("uint32", ()),
    "forces.user.index": ("uint32", ()),
    "bond.pairs": ("uint32", (2,)),
}
_INT_KEYS = {"frame.index", "particle.count", "residue.count", "chain.count"}


# -- reading -------------------------------------------------------------------------------


@dataclass(kw_only=True)
class MessageEvent:
    timestamp: int | None
    message: dict[str, Any]


@dataclass(kw_only=True)
class RecordingIndexEntry:
    offset: int
    length: int
    metadata: dict[str, Any] = field(default_factory=dict)

    def read_from(self, io: IO[bytes]) -> bytes:
        io.seek(self.offset)
        return io.read(self.length)


def _unpack_array(key: str, value: Any) -> Any:
    dtype, shape = _ARRAY_KEYS[key]
    if isinstance(value, bytes | bytearray | memoryview):
        array = np.frombuffer(value, dtype=dtype)
    else:
        array = np.fromiter(value, dtype=dtype)
    return array.reshape((-1, *shape)) if shape else array


class FrameData:
    """Just enough of NanoVer's FrameData: unpacked values, merge with the reset rule."""

    def __init__(self, frame_dict: dict[str, Any] | None = None) -> None:
        self.frame_dict: dict[str, Any] = dict(frame_dict or {})

    @classmethod
    def unpack_from_dict(cls, packed: Mapping[str, Any]) -> FrameData:
        unpacked: dict[str, Any] = {}
        for key, value in packed.items():
            if key in _ARRAY_KEYS:
                unpacked[key] = _unpack_array(key, value)
            elif key in _INT_KEYS:
                unpacked[key] = int(value)
            else:
                unpacked[key] = value
        return cls(unpacked)

    def update(self, other: FrameData) -> None:
        # merge_frame_dicts: index 0 on the new side drops the old aggregate; index 0 on
        # either side forces the merged index to 0.
        old_index = self.frame_dict.get("frame.index")
        new_index = other.frame_dict.get("frame.index")
        if new_index == 0:
            self.frame_dict = {}
        self.frame_dict.update(other.frame_dict)
        if 0 in (old_index, new_index):
            self.frame_dict["frame.index"] = 0

    def copy(self) -> FrameData:
        return FrameData(self.frame_dict)


@dataclass
class DictionaryChange:
    updates: dict[str, Any] = field(default_factory=dict)
    removals: set[str] = field(default_factory=set)

    @classmethod
    def from_dict(cls, change: Mapping[str, Any]) -> DictionaryChange:
        return cls(dict(change.get("updates", {})), set(change.get("removals", [])))


class StateDictionary:
    def __init__(self) -> None:
        self._content: dict[str, Any] = {}

    def update_state(self, _token: object, change: DictionaryChange) -> None:
        self._content.update(change.updates)
        for key in change.removals:
            self._content.pop(key, None)

    def copy_content(self) -> dict[str, Any]:
        return dict(self._content)


def parse_index(archive: zipfile.ZipFile) -> list[RecordingIndexEntry]:
    with archive.open(RECORDING_INDEX_FILENAME) as index_file:
        return [RecordingIndexEntry(**entry) for entry in msgpack.unpackb(index_file.read())]


class MessageZipReader:
    @classmethod
    def from_path(cls, path: str | PathLike[str]) -> MessageZipReader:
        return cls(zipfile.ZipFile(path, "r"))

    @classmethod
    def from_io(cls, io: BinaryIO) -> MessageZipReader:
        return cls(zipfile.ZipFile(io, "r"))

    def __init__(self, archive: zipfile.ZipFile) -> None:
        self.zipfile = archive
        self.messagesfile = archive.open(RECORDING_MESSAGES_FILENAME)
        self.index = parse_index(archive)

    def close(self) -> None:
        self.messagesfile.close()
        self.zipfile.close()

    def get_message_from_entry(self, entry: RecordingIndexEntry) -> dict[str, Any]:
        message: dict[str, Any] = msgpack.unpackb(entry.read_from(self.messagesfile))
        return message

    def __enter__(self) -> MessageZipReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __iter__(self) -> Iterator[RecordingIndexEntry]:
        yield from self.index

    def __len__(self) -> int:
        return len(self.index)

    def __getitem__(self, index: int) -> RecordingIndexEntry:
        return self.index[index]


class NanoverRecordingReader(MessageZipReader):
    def iter_frames_full(self) -> Iterator[tuple[RecordingIndexEntry, FrameData]]:
        current = FrameData()
        for entry, frame in self.iter_frame_updates():
            current.update(frame)
            yield entry, current.copy()

    def iter_states_full(self) -> Iterator[tuple[RecordingIndexEntry, dict[str, Any]]]:
        current = StateDictionary()
        for entry, change in self.iter_state_updates():
            current.update_state(None, change)
            yield entry, current.copy_content()

    def iter_frame_updates(self) -> Iterator[tuple[RecordingIndexEntry, FrameData]]:
        for entry in self:
            frame = self.get_frame_from_entry(entry)
            if frame is not None:
                yield entry, frame

    def iter_state_updates(self) -> Iterator[tuple[RecordingIndexEntry, DictionaryChange]]:
        for entry in self:
            state = self.get_state_from_entry(entry)
            if state is not None:
                yield entry, state

    def iter_message_events(self) -> Iterator[MessageEvent]:
        for entry in self:
            message = self.get_message_from_entry(entry)
            yield MessageEvent(timestamp=entry.metadata["timestamp"], message=message)

    def get_frame_from_entry(self, entry: RecordingIndexEntry) -> FrameData | None:
        if "frame" not in entry.metadata.get("types", ("frame",)):
            return None
        message = self.get_message_from_entry(entry)
        if "frame" not in message:
            return None
        return FrameData.unpack_from_dict(message["frame"])

    def get_state_from_entry(self, entry: RecordingIndexEntry) -> DictionaryChange | None:
        if "state" not in entry.metadata.get("types", ("state",)):
            return None
        message = self.get_message_from_entry(entry)
        if "state" not in message:
            return None
        return DictionaryChange.from_dict(message["state"])

    def get_message_type_from_entry(self, entry: RecordingIndexEntry, type: str) -> Any | None:
        if type not in entry.metadata.get("types", (type,)):
            return None
        message = self.get_message_from_entry(entry)
        return message.get(type, None)


# -- writing (file layout of NanoVer's writing.py, spec 1.1-1.3 and 2.2) --------------------


def generate_metadata(message: Mapping[str, Any]) -> dict[str, Any]:
    metadata: dict[str, Any] = {"types": list(message.keys())}
    frame = message.get("frame")
    if isinstance(frame, Mapping) and "frame.index" in frame:
        metadata["frame.index"] = frame["frame.index"]
    return metadata


class NanoverRecordingWriter:
    """Writes a recording laid out exactly as NanoVer's writer does.

    `compression` and `extra_members` exist to build the variants NanoVer's reader accepts
    (spec 1.8): deflated members, extra members.
    """

    def __init__(
        self,
        outfile: str | PathLike[str] | BinaryIO,
        *,
        compression: int = zipfile.ZIP_STORED,
        extra_members: Mapping[str, bytes] | None = None,
    ) -> None:
        self.zipfile = zipfile.ZipFile(outfile, "w", compression=compression)
        self.messagesfile = self.zipfile.open(RECORDING_MESSAGES_FILENAME, "w", force_zip64=True)
        self.index: list[RecordingIndexEntry] = []
        self.position = 0
        self.extra_members = dict(extra_members or {})
        self.closed = False

    def write_message_event(self, event: MessageEvent) -> None:
        data = msgpack.packb(event.message)
        self.messagesfile.write(data)
        metadata = generate_metadata(event.message)
        metadata["timestamp"] = event.timestamp
        self.index.append(
            RecordingIndexEntry(offset=self.position, length=len(data), metadata=metadata)
        )
        self.position += len(data)

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        self.messagesfile.close()
        entries = [dataclasses.asdict(entry) for entry in self.index]
        self.zipfile.writestr(RECORDING_INDEX_FILENAME, msgpack.packb(entries))
        for name, data in self.extra_members.items():
            self.zipfile.writestr(name, data)
        self.zipfile.close()

    def __enter__(self) -> NanoverRecordingWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def record_messages(
    outfile: str | PathLike[str] | BinaryIO,
    events: Iterable[MessageEvent],
    **options: Any,
) -> None:
    with NanoverRecordingWriter(outfile, **options) as writer:
        for event in events:
            writer.write_message_event(event)
