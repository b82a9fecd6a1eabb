"""Every example in README.md runs as written from the repository root, on the bundled
samples (see `tests/docs.py`); the install lines are run for real by CI."""

from __future__ import annotations

import subprocess
import sys
import venv
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.docs import blocks, commands, run_examples

README = REPO / "README.md"
#: The slow lane's run of every example, from a plain install: the fast lane's
#: `test_examples_run_in_order` runs them from this environment, when that one is not selected.
PLAIN_INSTALL = "test_examples_run_from_the_checkout_after_a_plain_install"


def test_there_are_examples() -> None:
    assert len(commands(README)) >= 8 and len(blocks(README, "python")) >= 2


def test_examples_run_in_order(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    for extra in ("matplotlib", "pyarrow", "duckdb", "mcap", "yaml", "zstandard"):  # extras
        pytest.importorskip(extra)
    if any(item.name == PLAIN_INSTALL for item in request.session.items):
        pytest.skip(f"{PLAIN_INSTALL} runs the same examples in this session")
    run_examples(README, tmp_path)


@pytest.mark.slow
def test_examples_run_from_the_checkout_after_a_plain_install(tmp_path: Path) -> None:
    """After the README's `pip install .` (not editable), Python started in the repository
    root imports the checkout's `nanorec/` first (the current directory leads sys.path), and
    that folder has no `converters/`: the examples must run there all the same."""
    for extra in ("matplotlib", "pyarrow", "duckdb", "mcap", "yaml", "zstandard"):
        pytest.importorskip(extra)
    env = tmp_path / "venv"
    venv.create(env, with_pip=False)
    python = env / "bin" / "python"
    installed = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "-q",
            "--no-deps",
            str(REPO),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if installed.returncode != 0:
        run_examples(README, tmp_path)  # every example all the same, from this environment
        pytest.skip(f"pip cannot build nanorec here: {installed.stderr.strip()[-300:]}")
    # The dependencies come from the environment running the tests (never its nanorec).
    (site,) = env.glob("lib/python*/site-packages")
    dependencies = [p for p in sys.path if p.endswith("site-packages") and Path(p).is_dir()]
    (site / "dependencies.pth").write_text("\n".join(dependencies) + "\n")
    root = tmp_path / "checkout"  # the repository root as far as imports and samples go
    root.mkdir()
    for name in ("nanorec", "converters", "samples"):
        (root / name).symlink_to(REPO / name)
    where = subprocess.run(
        [str(python), "-c", "import nanorec, nanorec.converters.carla as c; print(c.__file__)"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert where.returncode == 0, where.stderr
    run_examples(README, root, str(python))
