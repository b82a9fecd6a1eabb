"""The `ros` extra's optional modules (PyYAML, zstandard), imported when first needed: a bag
that needs none of them converts without the extra installed."""

from __future__ import annotations

import importlib
from types import ModuleType

from nanorec.errors import UnsupportedError


def extra(module: str) -> ModuleType:
    """A module of the `ros` extra, or an error saying how to install it."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise UnsupportedError(f"ROS 2 bags need {module} (pip install 'nanorec[ros]')") from None
