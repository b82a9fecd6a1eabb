"""nanorec: indexed, seekable archives of recorded simulation and robotics logs.

The public names are imported when first used (`__getattr__`, PEP 562): `import nanorec` is
what every command pays before doing anything, and routing a command or printing the help
needs none of them (numpy alone was half of `nanorec --version`).
"""

from __future__ import annotations

import importlib as _importlib
import sys as _sys
import types as _types
from pathlib import Path as _Path
from typing import TYPE_CHECKING
from typing import Any as _Any

from nanorec import _checkout
from nanorec._version import __version__

if TYPE_CHECKING:
    from nanorec.contract import Converter, Message, Recording
    from nanorec.errors import NanorecError
    from nanorec.index import Index
    from nanorec.reader import ArchiveReader
    from nanorec.recover import RecoverResult, recover
    from nanorec.registry import open
    from nanorec.selection import Selection
    from nanorec.verify import VerifyReport, verify
    from nanorec.writer import ArchiveWriter

_checkout.install(_Path(__file__).resolve().parent)  # run from a checkout: see _checkout.py

#: Each public name -> the module defining it.
_HOMES = {
    "ArchiveReader": "nanorec.reader",
    "ArchiveWriter": "nanorec.writer",
    "Converter": "nanorec.contract",
    "Index": "nanorec.index",
    "Message": "nanorec.contract",
    "NanorecError": "nanorec.errors",
    "Recording": "nanorec.contract",
    "RecoverResult": "nanorec.recover",
    "Selection": "nanorec.selection",
    "VerifyReport": "nanorec.verify",
    "open": "nanorec.registry",
    "recover": "nanorec.recover",
    "verify": "nanorec.verify",
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


class _Package(_types.ModuleType):
    """The package's module type: `nanorec.verify` and `nanorec.recover` stay the functions.

    Importing a submodule sets it as an attribute of its package; the functions were bound
    after their modules' import, which a lazy name cannot be, so the submodules `verify` and
    `recover` would replace the functions of the same name once anything imported them."""

    def __setattr__(self, name: str, value: _Any) -> None:
        if name in _HOMES and isinstance(value, _types.ModuleType):
            return
        super().__setattr__(name, value)


_sys.modules[__name__].__class__ = _Package

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
