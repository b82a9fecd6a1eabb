"""`atomic_output`: complete files only, a named partial file, nothing replaced unasked."""

from __future__ import annotations

from pathlib import Path

import pytest

from nanorec.atomic import atomic_output
from nanorec.errors import OutputExistsError


def test_appears_only_when_complete(tmp_path: Path) -> None:
    target = tmp_path / "out.bin"
    with atomic_output(target) as stream:
        stream.write(b"abc")
        assert not target.exists() and (tmp_path / ".out.bin.partial").exists()
    assert target.read_bytes() == b"abc" and not (tmp_path / ".out.bin.partial").exists()


def test_an_error_removes_the_partial_and_keeps_the_old_file(tmp_path: Path) -> None:
    target = tmp_path / "out.bin"
    target.write_bytes(b"old")
    with pytest.raises(RuntimeError), atomic_output(target, overwrite=True) as stream:
        stream.write(b"new")
        raise RuntimeError("disk full")
    assert target.read_bytes() == b"old" and list(tmp_path.iterdir()) == [target]


def test_a_killed_writers_partial_is_named_then_replaced_with_overwrite(tmp_path: Path) -> None:
    target = tmp_path / "out.bin"
    (tmp_path / ".out.bin.partial").write_bytes(b"half")  # SIGKILL left it
    left = r"\.out\.bin\.partial exists, left by"
    with pytest.raises(OutputExistsError, match=left), atomic_output(target):
        pass
    with atomic_output(target, overwrite=True) as stream:
        stream.write(b"whole")
    assert target.read_bytes() == b"whole" and sorted(p.name for p in tmp_path.iterdir()) == [
        "out.bin"
    ]


def test_refuses_to_replace_and_names_a_missing_directory(tmp_path: Path) -> None:
    target = tmp_path / "out.bin"
    target.write_bytes(b"mine")
    with pytest.raises(OutputExistsError), atomic_output(target):
        pass
    with pytest.raises(FileNotFoundError) as caught, atomic_output(tmp_path / "no" / "x.bin"):
        pass
    assert caught.value.filename == str(tmp_path / "no")
    assert target.read_bytes() == b"mine"
