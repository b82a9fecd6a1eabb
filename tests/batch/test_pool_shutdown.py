"""A finished `-j 2` batch shuts its pool down quietly (issue 34, item 11): the workers get
their end-of-work sentinel and exit on their own, never a signal while they read their queue
(which left one reading another's half-read message: `EOFError: Ran out of input` printed
after the summary). Many small batches in a row, through the command's own `main` (its
SIGTERM handler is what the workers inherit), each with a clean stderr."""

from __future__ import annotations

import concurrent.futures as futures
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nanorec.cli import main
from nanorec.maintain import batch
from tests.conftest import SAMPLES

FILES = [
    SAMPLES / "carla-0.9.16-town03.log",
    SAMPLES / "carla-0.9.15-town03.log",
    SAMPLES / "pbstream-small.pbstream",
    SAMPLES / "pbstream-legacy-small.pbstream",
]


@pytest.fixture(autouse=True)
def keep_sigterm() -> Iterator[None]:
    """`main` installs its SIGTERM handler; the test process gets its own back."""
    previous = signal.getsignal(signal.SIGTERM)
    yield
    signal.signal(signal.SIGTERM, previous)


def test_a_finished_pool_lets_its_workers_exit_on_their_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cause, without timing: after the last outcome every worker has exited by itself
    (status 0), none was signalled."""
    pools: list[futures.ProcessPoolExecutor] = []
    workers: list[Any] = []

    class Recorded(futures.ProcessPoolExecutor):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            pools.append(self)

        def shutdown(self, *args: Any, **kwargs: Any) -> None:
            workers.extend(getattr(self, "_processes", {}).values())
            super().shutdown(*args, **kwargs)

    monkeypatch.setattr(futures, "ProcessPoolExecutor", Recorded)
    jobs, known = batch.plan(map(str, FILES), tmp_path / "out")
    assert known == []
    outcomes = list(batch.run_batch(jobs, workers=2, force=True))
    assert [o.status for o in outcomes] == ["converted"] * len(FILES)
    assert pools and workers
    for process in workers:
        process.join(timeout=60)
        assert process.exitcode == 0, f"{process.name} ended with {process.exitcode}"


@pytest.mark.slow
def test_many_small_batches_end_with_a_clean_stderr(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    for attempt in range(12):
        with pytest.raises(SystemExit) as ended:
            main(["convert", *map(str, FILES), "-o", str(out), "-j", "2", "--force"])
        captured = capfd.readouterr()
        assert ended.value.code == 0, captured
        assert "4 converted" in captured.out, captured.out
        assert "Traceback" not in captured.err, f"batch {attempt}: {captured.err}"
        assert "Error" not in captured.err, f"batch {attempt}: {captured.err}"
