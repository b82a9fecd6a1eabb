"""Make an archive recovered from a killed `convert` a pbstream archive again.

A killed writer leaves every complete message but not the members written at close: the
side member with the stream's format, per-record columns, kept-raw count and the tail of a
cut file. All of it but the tail is in the messages (each holds its record's member, or in
older archives its payload, with ids and time), so it is rebuilt here; the export then gives
back the start of the original file, every record converted before the kill.
"""

from __future__ import annotations

from nanorec.archive.reader import ArchiveReader
from nanorec.archive.wire import pack_meta
from nanorec.errors import FormatError

from .convert import LEGACY, META_LEVEL, META_MEMBER, Classifier, Columns, archive_meta
from .export import kept_raw, member_of, record_entry
from .records import ALL_KINDS, DAMAGED, HEADER, POSE_GRAPH, Described


def _looks_ours(message: dict[str, object]) -> bool:
    if len(message) != 1:
        return False
    kind, entry = next(iter(message.items()))
    return (
        kind in ALL_KINDS
        and isinstance(entry, dict)
        and (isinstance(entry.get("payload"), bytes) or isinstance(entry.get("member"), bytes))
    )


def rebuild_members(reader: ArchiveReader) -> dict[str, bytes] | None:
    """The pbstream side member of `reader`'s archive rebuilt from its messages, or None when
    they are not pbstream records written by nanorec. FormatError when they are ours but
    damaged."""
    if not len(reader) or not _looks_ours(reader[0]):
        return None
    classifier = Classifier()
    columns = Columns()
    raw = 0
    damaged: list[tuple[int, int, str]] = []
    offset = 8
    for number in range(len(reader)):
        message = reader[number]
        if not _looks_ours(message):
            raise FormatError(f"recovered message {number} is not a pbstream record")
        kind, entry = record_entry(message, number)
        if number == 0 and kind == HEADER:
            classifier.version = int(entry.get("format_version", 0))
            classifier.format = str(classifier.version)
        elif number == 0 and kind == POSE_GRAPH and entry.get("bare"):
            classifier.format = LEGACY
        timestamp = entry.get("timestamp")
        columns.add(
            Described(
                kind,
                entry.get("trajectory_id"),
                entry.get("index"),
                int(timestamp) if isinstance(timestamp, int) else None,
            )
        )
        raw += kept_raw(kind, entry)
        size = 8 + len(member_of(entry))
        if kind == DAMAGED:
            damaged.append((offset, size, str(entry.get("reason", "damaged"))))
        offset += size
    meta = archive_meta(classifier, len(reader), raw, None, b"", damaged, [], columns)
    return {META_MEMBER: pack_meta(meta, META_LEVEL)}


__all__ = ["rebuild_members"]
