"""The modules' former homes: `import nanorec.writer` keeps working after the core moved
into rooms (`nanorec.archive`, `nanorec.outputs`, `nanorec.maintain`).

A meta path finder answering only these names, lazily: the old name gets the very module of
the new one (one module object, so `isinstance` and monkeypatching agree). `nanorec.verify`
and `nanorec.recover` are not listed: those names are the package's functions."""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType

_ROOMS = {
    "archive": """archive_file atomic blockcut blockread blocks closing crc deflate describe
        filehash index index_encode index_parse layout members message_form message_stream
        reader spool wire writebehind writer zipdirectory zipfile64 zipout""",
    "outputs": "arrow arrow_columns mcap mcap_foxglove mcap_protobuf tables timeline",
    "maintain": "adopt batch dask repack",
}
#: Each former module name -> its home now.
MOVED = {
    f"nanorec.{name}": f"nanorec.{room}.{name}"
    for room, names in _ROOMS.items()
    for name in names.split()
}


class _Alias:
    """Loads a former name as the module now at its new home."""

    def __init__(self, home: str) -> None:
        self.home = home

    def create_module(self, spec: ModuleSpec) -> None:
        return None

    def exec_module(self, module: ModuleType) -> None:
        # the import system returns whatever sys.modules holds under the name afterwards
        sys.modules[module.__name__] = importlib.import_module(self.home)

    def load_module(self, fullname: str) -> ModuleType:
        """The loader protocol's former entry (typeshed requires it; imports use the two above)."""
        return importlib.import_module(self.home)


class _MovedModules:
    """A meta path finder for the names in `MOVED` only (see `_checkout` for why no base)."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        home = MOVED.get(fullname)
        return None if home is None else importlib.util.spec_from_loader(fullname, _Alias(home))


def install() -> None:
    if not any(isinstance(finder, _MovedModules) for finder in sys.meta_path):
        sys.meta_path.append(_MovedModules())
