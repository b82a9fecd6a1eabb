"""docs/pbstream.md: its `sh` examples and Python block run as written on the bundled
sample (see `tests/docs.py`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.docs import blocks, commands, run_examples

DOC = REPO / "docs" / "pbstream.md"


@pytest.mark.slow
def test_examples_run(tmp_path: Path) -> None:
    for extra in ("matplotlib", "mcap"):
        pytest.importorskip(extra)
    assert len(commands(DOC)) >= 6 and blocks(DOC, "python")
    outputs = run_examples(DOC, tmp_path)
    assert "inter-submap constraints" in outputs[0] and "submap" in outputs[0]
    assert (tmp_path / "room.pgm").exists() and (tmp_path / "one.pbstream").exists()
