"""docs/mcap.md (the README's MCAP section) runs as written from a scratch directory holding
a link to `samples/`, as tests/test_readme.py runs the README, and its files read back."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.docs import run_examples
from tests.mcap.doctor import doctor


@pytest.mark.slow
def test_examples_run(tmp_path: Path) -> None:
    outputs = run_examples(REPO / "docs" / "mcap.md", tmp_path)
    assert outputs and all("/carla/scene" in out for out in outputs)
    for name in ("town03.mcap", "clip.mcap", "scene.mcap"):
        assert doctor(tmp_path / name).messages
    assert set(doctor(tmp_path / "scene.mcap").topic_counts()) == {"/carla/scene", "/tf"}
