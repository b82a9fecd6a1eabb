"""Give a recovered archive back to its format.

`nanorec recover` rebuilds every complete message of a killed writer, but a converter's own
members (written at close) and the self-description naming the format are gone. Each
registered converter with an `adopt` hook (`nanorec.contract.Adopting`) is asked
whether the messages are its own; the first that rebuilds its members gets the archive
rewritten with them, under its name, so `export` and the format's queries work again.
"""

from __future__ import annotations

from pathlib import Path

from nanorec import registry
from nanorec.archive.reader import ArchiveReader
from nanorec.archive.writer import ArchiveWriter
from nanorec.contract import Adopting


def adopt(path: Path) -> str | None:
    """Rewrite the archive at `path` as its format's (in place, atomically); returns the
    format's name, or None when no converter recognises the messages. Raises the
    converter's `NanorecError` when the messages are its own but damaged."""
    with ArchiveReader(path) as reader:
        if registry.for_archive(reader) is not None:
            return None
        for converter in registry.converters().values():
            members = converter.adopt(reader) if isinstance(converter, Adopting) else None
            if members is not None:
                _rewrite(reader, path, converter.name, members)
                return converter.name
    return None


def _rewrite(reader: ArchiveReader, path: Path, name: str, members: dict[str, bytes]) -> None:
    index = reader.index
    source = dict((reader.description or {}).get("source") or {})
    with ArchiveWriter(path, overwrite=True, source_format=name, source=source) as writer:
        for number in range(len(reader)):
            writer.write(
                reader.read(number),
                timestamp_us=index.timestamp_us.item(number),
                flags=index.flags.item(number),
            )
        for member, data in members.items():
            writer.add_member(member, data)
