"""click, as the installed typer provides it.

typer up to 0.2x depends on the `click` package; later releases vendor it as `typer._click`
and no longer install `click`. Importing it from here keeps the CLI working on every typer
`pyproject.toml` allows (CI proves the lowest).
"""

from __future__ import annotations

import importlib
from types import ModuleType


def _load() -> ModuleType:
    try:
        return importlib.import_module("typer._click")
    except ImportError:
        return importlib.import_module("click")


click: ModuleType = _load()
