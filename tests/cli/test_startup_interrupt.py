"""Ctrl-C at any moment of a command's start-up (issue 34, item 12): while Python imports
nanorec, numpy, typer..., before `main`'s try block exists, the command ends with status 130
and no traceback, as it does later.

The command is started as its console script starts it (the `[project.scripts]` entry point
of pyproject.toml, imported and called), and SIGINT is sent at several delays once its
module is imported (a signal during Python's own start-up, before any line of nanorec runs,
is Python's business: during `site` it reports "Fatal Python error: init_import_site").
What each delay hits varies with the machine's load; none may print a traceback, whatever
it hits.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REPO, SAMPLES

tomllib = pytest.importorskip("tomllib")
ENTRY = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]["nanorec"]
MODULE, FUNCTION = ENTRY.split(":")
#: What pip's console script does, with a line on stderr once the entry point's module is
#: imported: its first instruction has run, every later moment must be quiet.
STARTER = (
    f"import sys; from {MODULE} import {FUNCTION}; sys.stderr.write('started\\n'); "
    f"sys.stderr.flush(); sys.argv[0] = 'nanorec'; sys.exit({FUNCTION}())"
)
DELAYS_S = (0.0, 0.02, 0.05, 0.1, 0.2, 0.4)
#: 130: ours (128 + SIGINT); 0: the command had finished; -SIGINT: it had finished and
#: Python, shutting down, had given SIGINT back its default action (a shell shows 130 too).
QUIET_ENDS = (130, 0, -signal.SIGINT)


def test_the_installed_script_calls_the_entry_point() -> None:
    script = Path(sys.executable).parent / "nanorec"
    if not script.is_file():
        pytest.skip("no installed nanorec script beside python")
    assert f"from {MODULE} import {FUNCTION}" in script.read_text()


def test_the_entry_point_takes_ctrl_c_before_importing_anything_heavy() -> None:
    """Importing the entry point's module (what the script does first) sets the quiet
    Ctrl-C and imports neither nanorec nor its dependencies: the seconds of imports come
    after, covered."""
    probe = (
        f"import signal, sys; import {MODULE}; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('nanorec', 'numpy', 'typer', 'click', 'msgpack'))); "
        "print(signal.getsignal(signal.SIGINT) is signal.default_int_handler)"
    )
    found = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True
    )
    assert found.stdout.splitlines() == ["[]", "False"], found.stdout


@pytest.mark.parametrize("delay_s", DELAYS_S)
@pytest.mark.parametrize("verb", ["info", "convert"])
def test_an_early_ctrl_c_exits_130_without_a_traceback(
    tmp_path: Path, verb: str, delay_s: float
) -> None:
    sample = SAMPLES / "carla-0.9.16-town03.log"
    args = [str(sample)] if verb == "info" else [str(sample), "-o", str(tmp_path / "a.zip")]
    process = subprocess.Popen(
        [sys.executable, "-c", STARTER, verb, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    assert process.stderr.readline() == "started\n"
    time.sleep(delay_s)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=120)
    assert "Traceback" not in stderr, stderr
    assert "KeyboardInterrupt" not in stderr, stderr
    assert process.returncode in QUIET_ENDS, (process.returncode, stderr)
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".partial")] == []
