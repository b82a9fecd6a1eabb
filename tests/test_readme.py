"""Every example in README.md runs as written from the repository root, on the bundled
samples (see `tests/docs.py`); the install lines are run for real by CI."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.docs import blocks, commands, run_examples

README = REPO / "README.md"


def test_there_are_examples() -> None:
    assert len(commands(README)) >= 8 and len(blocks(README, "python")) >= 2


def test_examples_run_in_order(tmp_path: Path) -> None:
    for extra in ("matplotlib", "pyarrow", "duckdb", "mcap"):  # plot, Parquet, MCAP examples
        pytest.importorskip(extra)
    run_examples(README, tmp_path)
