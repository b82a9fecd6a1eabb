"""Shared fixtures: where the real recordings are (beside the project, when present)."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
REALDATA = SHARED / "realdata"
SAMPLES = REPO / "samples"


def carla_realdata() -> list[Path]:
    """The real CARLA recordings of ../shared/realdata/carla (empty when absent)."""
    folder = REALDATA / "carla"
    return sorted(p for p in folder.iterdir() if p.is_file()) if folder.is_dir() else []


@pytest.fixture
def realdata_dir() -> Path:
    """../shared/realdata; skips the test when it is not there (a fresh clone)."""
    if not REALDATA.is_dir():
        pytest.skip("../shared/realdata is not present")
    return REALDATA
