"""click, as the installed typer provides it.

typer up to 0.2x depends on the `click` package; later releases vendor it as `typer._click`
and no longer install `click`. Importing it from here keeps the CLI working on every typer
`pyproject.toml` allows (CI proves the lowest).
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any, TypeAlias


def _load() -> ModuleType:
    try:
        return importlib.import_module("typer._click")
    except ImportError:
        return importlib.import_module("click")


click: ModuleType = _load()

# click's objects, named for what they are. click is typer's vendored copy or the click
# package, whichever the installed typer has (`_load`, at run time), so no one class is
# theirs for the type checker: each stays untyped, by a name that says what it holds.
#: A `click.Context`.
Context: TypeAlias = Any
#: A `click.Command` (or `Group`).
Command: TypeAlias = Any
#: A `click.Parameter` (an `Option`, an `Argument`).
Parameter: TypeAlias = Any
#: A `click.HelpFormatter`.
Formatter: TypeAlias = Any
