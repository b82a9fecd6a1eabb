"""Exit status 2 is one `nanorec: ...` line on stderr, always (issue #34 item 10): a
library's multi-line message (PyYAML's problem, context and marks) is joined into one line,
and an error after warnings or the player's status line exits 1, a problem after what was
said, so that a 2 never follows other lines."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import typer

from nanorec import registry
from nanorec.cli import _register, app, run
from nanorec.errors import FormatError
from tests.conftest import SAMPLES, make_runner

_register()


def _run(*args: object) -> tuple[int, str, str]:
    result = make_runner().invoke(app, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


def _one_line(err: str) -> None:
    assert err.count("\n") == 1 and err.startswith("nanorec: ") and "\r" not in err, err


def test_a_multi_line_error_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    def action() -> None:
        raise FormatError("while scanning\n  in line 2\nfound the end\n  in line 3")

    with pytest.raises(typer.Exit) as ended:
        run(action)
    assert ended.value.exit_code == 2
    err = capsys.readouterr().err
    _one_line(err)
    assert "while scanning in line 2 found the end in line 3" in err


def test_a_multi_line_warning_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    import warnings

    def action() -> None:
        warnings.warn("first\nsecond", UserWarning, stacklevel=1)

    run(action)
    assert capsys.readouterr().err == "nanorec: warning: first second\n"


@pytest.fixture
def broken_yaml_bag(tmp_path: Path) -> Path:
    """A bag folder whose metadata.yaml ends inside a quoted string (PyYAML's error about
    it is four lines)."""
    pytest.importorskip("yaml")
    bag = tmp_path / "bag"
    shutil.copytree(SAMPLES / "ros2-robot", bag)
    text = (bag / "metadata.yaml").read_text()
    (bag / "metadata.yaml").write_text(text[:900])
    return bag


def test_pyyaml_errors_are_one_line(broken_yaml_bag: Path) -> None:
    code, out, err = _run("info", broken_yaml_bag)
    assert code == 2, out + err
    _one_line(err)
    assert "not valid YAML" in err and "line 21" in err


def test_an_error_after_a_warning_exits_1(broken_yaml_bag: Path) -> None:
    for verb in (["cat", "--topic", "/nope"], ["play", "--topic", "/odom", "--start", "1000"]):
        code, _, err = _run(verb[0], broken_yaml_bag, *verb[1:])
        lines = err.splitlines()
        assert code == 1 and len(lines) == 2, (verb, err)
        assert lines[0].startswith("nanorec: warning: ") and "not valid YAML" in lines[0]
        assert lines[1].startswith("nanorec: ") and "warning" not in lines[1]


def test_an_error_mid_cat_is_one_line(tmp_path: Path) -> None:
    """Nothing said before it: exit 2, the error alone (the messages before it on stdout)."""
    from nanorec.archive.layout import use_layout
    from nanorec.archive.reader import ArchiveReader

    archive = tmp_path / "robot.nanover.zip"
    with use_layout("stored"):
        registry.get("rosbag").convert(SAMPLES / "rosbag-robot-bz2.bag", archive)
    with ArchiveReader(archive) as reader:
        position = reader._messages_start + int(reader.index.offset[40])
    data = bytearray(archive.read_bytes())
    data[position] = 0xC1  # a byte msgpack never uses: message 40 cannot be read
    archive.write_bytes(bytes(data))
    code, out, err = _run("cat", archive)
    assert code == 2 and out.count("\n") >= 40, err
    _one_line(err)
    code, out, err = _run("play", archive, "-i")
    assert code == 1 and err.startswith("\r [RUNNING]"), err[-300:]
    assert err.split("\n")[-2].startswith("nanorec: ") and "message 40" in err
