"""Every example in README.md runs as written from the repository root, on the bundled
samples: the `nanorec ...` lines of shell blocks and every Python block.

They run in a scratch directory holding a link to `samples/`, so what they write does not
land in the repository. Blocks that install things (`pip install`, `python3 -m venv`) or
only list development commands are left to CI, which runs them for real.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

BLOCK = re.compile(r"```(\w+)\n(.*?)```", re.S)


def _blocks(language: str) -> list[str]:
    text = (REPO / "README.md").read_text()
    return [body for lang, body in BLOCK.findall(text) if lang == language]


def _commands() -> list[str]:
    lines = []
    for body in _blocks("sh"):
        if "pip install" in body:
            continue
        lines += [line for line in body.splitlines() if line.startswith("nanorec ")]
    return lines


@pytest.fixture
def scratch(tmp_path: Path) -> Path:
    (tmp_path / "samples").symlink_to(REPO / "samples")
    return tmp_path


def test_there_are_examples() -> None:
    assert len(_commands()) >= 8 and len(_blocks("python")) >= 2


def test_examples_run_in_order(scratch: Path) -> None:
    """The shell lines, then the Python blocks (which may read what the lines wrote)."""
    pytest.importorskip("matplotlib")  # one example plots
    pytest.importorskip("pyarrow")  # one writes Parquet
    pytest.importorskip("duckdb")  # one reads it
    pytest.importorskip("mcap")  # one writes MCAP
    for line in _commands():
        args = shlex.split(line, comments=True)[1:]
        result = subprocess.run(
            [sys.executable, "-c", "from nanorec.cli import main; main()", *args],
            cwd=scratch,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert result.returncode == 0, (line, result.stderr)
    for code in _blocks("python"):
        result = subprocess.run(
            [sys.executable, "-c", code], cwd=scratch, capture_output=True, text=True, timeout=300
        )
        assert result.returncode == 0, (code, result.stderr)
