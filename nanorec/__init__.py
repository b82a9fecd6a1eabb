"""nanorec: indexed, seekable archives of recorded simulation and robotics logs.

The public names are imported when first used (`__getattr__`, PEP 562): `import nanorec` is
what every command pays before doing anything, and routing a command or printing the help
needs none of them (numpy alone was half of `nanorec --version`).
"""

from __future__ import annotations

import importlib as _importlib
from pathlib import Path as _Path
from typing import TYPE_CHECKING
from typing import Any as _Any

from nanorec import _checkout, _moved
from nanorec._version import __version__

if TYPE_CHECKING:
    from nanorec.archive.index import Index
    from nanorec.archive.reader import ArchiveReader
    from nanorec.archive.writer import ArchiveWriter
    from nanorec.contract import Converter, Message, Recording
    from nanorec.errors import NanorecError
    from nanorec.maintain.recover import RecoverResult, recover
    from nanorec.maintain.verify import VerifyReport, verify
    from nanorec.registry import open
    from nanorec.selection import Selection

_checkout.install(_Path(__file__).resolve().parent)  # run from a checkout: see _checkout.py
_moved.install()  # `import nanorec.writer` and the other modules' former homes

#: Each public name -> the module defining it.
_HOMES = {
    "ArchiveReader": "nanorec.archive.reader",
    "ArchiveWriter": "nanorec.archive.writer",
    "Converter": "nanorec.contract",
    "Index": "nanorec.archive.index",
    "Message": "nanorec.contract",
    "NanorecError": "nanorec.errors",
    "Recording": "nanorec.contract",
    "RecoverResult": "nanorec.maintain.recover",
    "Selection": "nanorec.selection",
    "VerifyReport": "nanorec.maintain.verify",
    "open": "nanorec.registry",
    "recover": "nanorec.maintain.recover",
    "verify": "nanorec.maintain.verify",
}


def __getattr__(name: str) -> _Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'nanorec' has no attribute {name!r}")
    value = getattr(_importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_HOMES})


__all__ = [
    "ArchiveReader",
    "ArchiveWriter",
    "Converter",
    "Index",
    "Message",
    "NanorecError",
    "Recording",
    "RecoverResult",
    "Selection",
    "VerifyReport",
    "__version__",
    "open",
    "recover",
    "verify",
]
