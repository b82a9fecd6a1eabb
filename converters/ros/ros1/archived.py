"""An archive message as the bag message it holds, for every reader of them (the exact
export, cuts, the recording, MCAP, the bridge). Apart from `export.py`, so that the cut
(`filter.py`), which `export` calls for an adopted archive, needs nothing from it."""

from __future__ import annotations

from typing import Any

from nanorec.archive.reader import ArchiveReader
from nanorec.errors import FormatError


def payload(reader: ArchiveReader, number: int) -> dict[str, Any]:
    """The `{"conn", "sec", "nsec", "data"}` map of archive message `number`."""
    message = reader[number]
    for value in message.values():
        if isinstance(value, dict) and "data" in value:
            return value
    raise FormatError(f"archive message {number} is not a bag message")
