"""`nanorec.converters` when the `nanorec` imported is a source checkout's.

pyproject.toml installs the repository's `converters/` folder as `nanorec.converters`. Python
started in the repository root (where the README's examples run) puts the current directory
first on sys.path, so it imports the checkout's `nanorec/` ahead of the installed copy, and that
folder has no `converters/`: without this finder every format would be missing. It is added
only then (an installed nanorec has its `converters/` inside) and only answers for that one
name, lazily: the core still imports no converter.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from pathlib import Path
from types import ModuleType

NAME = "nanorec.converters"


class _CheckoutConverters:
    """Finds `nanorec.converters` in the checkout's `converters/` folder (a meta path finder
    needs only `find_spec`: `importlib.abc`, its base, cost every command ~5 ms)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if fullname != NAME:
            return None
        return importlib.util.spec_from_file_location(
            NAME, self.folder / "__init__.py", submodule_search_locations=[str(self.folder)]
        )


def install(package: Path) -> None:
    """Add the finder when `package` (the imported `nanorec/` folder) is a checkout's: no
    `converters/` inside it, one beside it. After the standard finders, so an installed or
    editable layout is always preferred."""
    folder = package.parent / "converters"
    if (package / "converters").exists() or not (folder / "__init__.py").is_file():
        return
    if not any(isinstance(finder, _CheckoutConverters) for finder in sys.meta_path):
        sys.meta_path.append(_CheckoutConverters(folder))
