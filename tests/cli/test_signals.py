"""A signal (SIGTERM, Ctrl-C) ends a command at any point without leaving a partial file.

Each test puts the signal's effect, the exception its handler raises, at one exact point of
an output's life (no timing: the subprocess test in test_verbs.py covers the real signal):
just after the partial file is created, between a writer's construction and its `with`
block, while the archive is being finished, between publishing and removing the partial
name, and during start-up.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from nanorec import verify
from nanorec.archive.writer import ArchiveWriter
from nanorec.cli import main
from tests.conftest import SAMPLES

SAMPLE = SAMPLES / "carla-0.9.16-town03.log"
TERMINATED = 128 + signal.SIGTERM


class Terminated(SystemExit):
    """What the CLI's SIGTERM handler raises."""

    def __init__(self) -> None:
        super().__init__(TERMINATED)


@pytest.fixture(autouse=True)
def keep_sigterm() -> Iterator[None]:
    """`main` installs its SIGTERM handler; the test process gets its own back."""
    previous = signal.getsignal(signal.SIGTERM)
    yield
    signal.signal(signal.SIGTERM, previous)


def _then_terminate(function: Callable[..., Any], when: Callable[..., bool]) -> Any:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        result = function(*args, **kwargs)
        if when(*args, **kwargs):
            raise Terminated
        return result

    return wrapper


def _is_partial(path: Any, *args: Any, **kwargs: Any) -> bool:
    return str(path).endswith(".partial")


def _before(*args: Any, **kwargs: Any) -> Any:
    raise Terminated


def _exit_code(argv: list[str]) -> int:
    with pytest.raises(SystemExit) as caught:
        main(argv)
    code = caught.value.code
    assert isinstance(code, int)
    return code


def _assert_nothing_half_made(folder: Path, output: Path) -> None:
    assert [p.name for p in folder.iterdir() if p.name.endswith(".partial")] == []
    if output.exists():  # published just before the signal: then it is complete
        assert verify(output).ok


WINDOWS = {
    "just after the partial is created": lambda mp: mp.setattr(
        os, "open", _then_terminate(os.open, _is_partial)
    ),
    "between the writer and its with block": lambda mp: mp.setattr(
        ArchiveWriter, "__init__", _then_terminate(ArchiveWriter.__init__, lambda *a, **k: True)
    ),
    "while the archive is finished": lambda mp: mp.setattr(ArchiveWriter, "_publish", _before),
    "between publishing and removing the partial name": lambda mp: mp.setattr(
        os, "link", _then_terminate(os.link, lambda *a, **k: True)
    ),
}


@pytest.mark.parametrize("window", WINDOWS)
def test_convert_leaves_no_partial_file(
    window: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    output = tmp_path / "out.nanover.zip"
    WINDOWS[window](monkeypatch)
    assert _exit_code(["convert", str(SAMPLE), "-o", str(output)]) == TERMINATED
    monkeypatch.undo()
    _assert_nothing_half_made(tmp_path, output)


def test_export_leaves_no_partial_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    archive = tmp_path / "a.nanover.zip"
    assert _exit_code(["convert", str(SAMPLE), "-o", str(archive)]) == 0
    output = tmp_path / "same.log"
    monkeypatch.setattr(os, "open", _then_terminate(os.open, _is_partial))
    assert _exit_code(["export", str(archive), "-o", str(output)]) == TERMINATED
    monkeypatch.undo()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.nanover.zip"]


def test_ctrl_c_during_start_up_is_a_quiet_exit(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def interrupted() -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr("nanorec.cli._register", interrupted)
    assert _exit_code(["info", str(SAMPLE)]) == 130
    assert "Traceback" not in capsys.readouterr().err
