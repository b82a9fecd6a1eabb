"""A metadata.yaml that is not a small regular file (issue #34 item 6): a FIFO in its place
is never opened for reading (it used to hang every verb), and one of 1.5 GB (sparse) is
never read into memory: convert says what it is and describes the storage files instead
(exit 1), `info` of the folder says it in one line."""

from __future__ import annotations

import os
import shutil
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from nanorec.cli import _register, app
from nanorec.converters.ros.ros2.bag import MAX_METADATA, is_bag_folder, read_regular
from nanorec.errors import FormatError
from tests.conftest import SAMPLES, make_runner

pytest.importorskip("yaml")
pytest.importorskip("zstandard")
pytest.importorskip("mcap")

_register()


@pytest.fixture
def no_hang() -> Iterator[None]:
    """A test that would wait on a FIFO forever (as the code before the fix did) fails
    instead, as the contract's fuzz run does with its alarm; not a measure of speed."""
    if not hasattr(signal, "SIGALRM"):
        yield
        return

    def hung(signum: int, frame: object) -> None:
        raise TimeoutError("still waiting on a FIFO after 120 s: it was opened")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(120)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _run(*args: object) -> tuple[int, str, str]:
    result = make_runner().invoke(app, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


def _bag(tmp_path: Path, kind: str) -> Path:
    bag = tmp_path / "bag"
    shutil.copytree(SAMPLES / "ros2-robot", bag)
    meta = bag / "metadata.yaml"
    meta.unlink()
    if kind == "fifo":
        os.mkfifo(meta)  # a reader opening it blocking would wait for a writer forever
    else:
        with meta.open("wb") as stream:
            stream.truncate(1_500_000_000)  # sparse: no disk taken
    return bag


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_is_never_opened(tmp_path: Path, no_hang: None) -> None:
    bag = _bag(tmp_path, "fifo")
    with pytest.raises(FormatError, match="not a regular file"):
        read_regular(bag / "metadata.yaml", MAX_METADATA)
    assert is_bag_folder(bag)  # its storage files: a bag whose metadata.yaml is unreadable


@pytest.mark.parametrize("kind", ["fifo", "huge"])
def test_convert_describes_the_files_instead(kind: str, tmp_path: Path, no_hang: None) -> None:
    bag = _bag(tmp_path, kind)
    archive = tmp_path / "a.nanover.zip"
    code, out, err = _run("convert", bag, "-o", archive)
    why = "not a regular file" if kind == "fifo" else "1500000000 bytes"
    assert code == 1 and why in out and "reindex" in out, out + err
    code, out, err = _run("info", archive, "--tz", "UTC")
    assert code == 0 and "Messages:          630" in out, out + err


def test_info_of_a_huge_metadata_yaml_is_one_line(tmp_path: Path) -> None:
    bag = _bag(tmp_path, "huge")
    code, out, err = _run("info", bag)
    assert code == 2 and err.count("\n") == 1 and "1500000000 bytes" in err, out + err


def test_a_file_growing_past_the_limit_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "metadata.yaml"
    path.write_bytes(b"x" * 100)
    assert read_regular(path, 100) == b"x" * 100
    assert read_regular(path, 10, whole=False) == b"x" * 10
    with pytest.raises(FormatError, match="more than the 99"):
        read_regular(path, 99)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
@pytest.mark.parametrize("verb", ["info", "cat", "verify", "convert"])
def test_a_fifo_given_as_the_input_is_one_line(verb: str, tmp_path: Path, no_hang: None) -> None:
    """Sniffing the format opened it first, and waited for a writer forever."""
    fifo = tmp_path / "bag.db3"
    os.mkfifo(fifo)
    more = ["-o", str(tmp_path / "a.nanover.zip")] if verb == "convert" else []
    code, out, err = _run(verb, fifo, *more)
    assert code == 2 and err == f"nanorec: {fifo}: not a regular file\n", out + err
