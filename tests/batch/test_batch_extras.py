"""The README's batch (`nanorec convert samples -o converted -j 2`) on a plain install, without
the `[ros]` extra (issue 34, item 17): the ROS bags that need it fail, each with a line naming
the extra to install, and the rest converts. The extra's modules are hidden from a fresh
interpreter, as if they were not installed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO

#: The `[ros]` extra's modules (and the other extras', so none of them is taken for granted).
HIDDEN = ("lz4", "yaml", "zstandard", "mcap", "isal", "orjson")
PLAIN_INSTALL = f"""
import sys
class Hidden:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {HIDDEN!r}:
            raise ImportError(f"No module named {{name!r}}")
sys.meta_path.insert(0, Hidden())
from nanorec.cli import main
sys.argv[0] = "nanorec"
main()
"""


def test_the_readme_batch_without_the_ros_extra_names_it(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-c", PLAIN_INSTALL, "convert", "samples", "-o", str(tmp_path), "-j", "2"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    failed = [line for line in result.stdout.splitlines() if line.strip().startswith("FAILED")]
    assert failed, result.stdout
    for line in failed:
        assert "nanorec[ros]" in line, line
