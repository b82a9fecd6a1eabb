"""Which converter opens which file: loaded by name so `nanorec` never imports a converter.

Each entry names a module that provides `sniff(head: bytes) -> bool` (does a native file
start like this?), `open_native(path)` and `open_archive(reader)` (wrap an archive that
the converter wrote; its self-description's `source_format` picks the entry).
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import Any

from nanorec.errors import UnsupportedError
from nanorec.reader import ArchiveReader

CONVERTERS: dict[str, str] = {
    "carla": "converters.carla.recording",
}

_ZIP_SIGNATURE = b"PK\x03\x04"


def _module(name: str) -> Any:
    return importlib.import_module(CONVERTERS[name])


def open(path: str | os.PathLike[str]) -> Any:
    """Open a recording for random access.

    An archive written by a converter comes back as that converter's recording object
    (for CARLA: `CarlaRecording`, with `frame(n)`, `at(t)`...); any other archive as an
    `ArchiveReader`. A native file that a converter recognises is converted into a
    temporary archive first. Raises `UnsupportedError` for anything else.
    """
    path = Path(path)
    with path.open("rb") as handle:
        head = handle.read(64)
    if head.startswith(_ZIP_SIGNATURE):
        reader = ArchiveReader(path)
        try:
            source_format = (reader.description or {}).get("source_format")
            if source_format in CONVERTERS:
                return _module(source_format).open_archive(reader)
        except BaseException:
            reader.close()
            raise
        return reader
    for name in CONVERTERS:
        module = _module(name)
        if module.sniff(head):
            return module.open_native(path)
    raise UnsupportedError(f"{path}: not an archive and not a recording nanorec can convert")
