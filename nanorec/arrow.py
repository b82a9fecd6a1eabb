"""Placeholder: being written (issue 13)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nanorec.errors import UnsupportedError
from nanorec.selection import Selection


def export_parquet(
    recording: Any, output: Path, *, selection: Selection | None = None, overwrite: bool = False
) -> list[str]:
    raise UnsupportedError("not available yet")
