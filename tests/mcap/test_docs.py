"""docs/mcap.md (the README's MCAP section) runs as written from a scratch directory holding
a link to `samples/`, as tests/test_readme.py runs the README, and its files read back."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO
from tests.mcap.doctor import doctor

BLOCK = re.compile(r"```(\w+)\n(.*?)```", re.S)


def blocks(language: str) -> list[str]:
    text = (REPO / "docs" / "mcap.md").read_text()
    return [body for lang, body in BLOCK.findall(text) if lang == language]


def test_examples_run(tmp_path: Path) -> None:
    (tmp_path / "samples").symlink_to(REPO / "samples")
    lines = [
        line for body in blocks("sh") for line in body.splitlines() if line.startswith("nanorec ")
    ]
    assert len(lines) >= 2 and blocks("python")
    for line in lines:
        args = shlex.split(line, comments=True)[1:]
        result = subprocess.run(
            [sys.executable, "-c", "from nanorec.cli import main; main()", *args],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert result.returncode == 0, (line, result.stderr)
    for code in blocks("python"):
        result = subprocess.run(
            [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=300
        )
        assert result.returncode == 0, (code, result.stderr)
        assert "/carla/scene" in result.stdout
    for name in ("town03.mcap", "clip.mcap", "scene.mcap"):
        assert doctor(tmp_path / name).messages
    assert set(doctor(tmp_path / "scene.mcap").topic_counts()) == {"/carla/scene", "/tf"}
