"""Placeholder: being written (issue 13)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from nanorec.cli import fail


def batch_convert(
    sources: list[Path],
    output: Path | None,
    *,
    jobs: int,
    force: bool,
    keep_going: bool,
    fmt: str | None,
    options: Mapping[str, str],
) -> int:
    fail("batch conversion is not available yet")
