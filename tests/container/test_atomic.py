"""`atomic_output`: complete files only, a named partial file, nothing replaced unasked."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from nanorec.archive.atomic import atomic_output, write_hashed
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


def test_write_hashed_joins_small_pieces_and_keeps_views_it_was_lent(tmp_path: Path) -> None:
    """Small pieces are held until a write; a view released by its producer right after
    being yielded is copied first; large pieces go straight through: same bytes, same hash."""
    big = bytes(range(256)) * 8192  # 2 MiB: written as it comes
    backing = bytearray(b"abc" * 1000)

    def pieces() -> Iterator[bytes | memoryview]:
        for i in range(3000):
            view = memoryview(backing)[i % 7 : i % 7 + 500]
            yield view
            view.release()
            backing[0] = i % 256  # the producer reuses its buffer
            yield b"x" * (i % 13)
            if i in (10, 2000):
                yield big
        yield memoryview(big)

    expected = b"".join(bytes(piece) for piece in pieces())
    backing[0] = ord("a")
    out = tmp_path / "out.bin"
    size, sha = write_hashed(out, pieces())
    assert out.read_bytes() == expected
    assert (size, sha) == (len(expected), hashlib.sha256(expected).hexdigest())
