"""Run a Markdown file's examples as a reader would, from a scratch directory holding a link
to `samples/`: every `nanorec ...` line of its sh blocks (blocks that install things are left
to CI), then every Python block, in order, so blocks may read what earlier lines wrote."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO

BLOCK = re.compile(r"```(\w+)\n(.*?)```", re.S)


def blocks(markdown: Path, language: str) -> list[str]:
    return [body for lang, body in BLOCK.findall(markdown.read_text()) if lang == language]


def commands(markdown: Path) -> list[str]:
    return [
        line
        for body in blocks(markdown, "sh")
        if "pip install" not in body
        for line in body.splitlines()
        if line.startswith("nanorec ")
    ]


def run_examples(markdown: Path, scratch: Path, python: str = sys.executable) -> list[str]:
    """Run them all in `scratch` with `python`; returns each Python block's stdout. Fails the
    test on the first example that exits non-zero, naming it."""
    if not (scratch / "samples").exists():
        (scratch / "samples").symlink_to(REPO / "samples")
    for line in commands(markdown):
        args = shlex.split(line, comments=True)[1:]
        result = subprocess.run(
            [python, "-c", "from nanorec.cli import main; main()", *args],
            cwd=scratch,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert result.returncode == 0, (line, result.stderr)
    outputs = []
    for code in blocks(markdown, "python"):
        result = subprocess.run(
            [python, "-c", code], cwd=scratch, capture_output=True, text=True, timeout=300
        )
        assert result.returncode == 0, (code, result.stderr)
        outputs.append(result.stdout)
    return outputs
