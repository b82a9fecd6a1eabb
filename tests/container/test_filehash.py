"""`FileHash`: the source's sha256 beside the conversion, through a map or plain reads."""

from __future__ import annotations

import hashlib
import mmap
from pathlib import Path

import pytest

from nanorec.archive import filehash
from nanorec.archive.filehash import FileHash


def _file(tmp_path: Path, size: int) -> Path:
    path = tmp_path / "in.log"
    path.write_bytes(bytes(range(251)) * (size // 251) + b"x" * (size % 251))
    return path


@pytest.mark.parametrize("size", [0, 1, FileHash._CHUNK - 1, 2 * FileHash._CHUNK + 7])
def test_hash_through_the_map(tmp_path: Path, size: int) -> None:
    path = _file(tmp_path, size)
    digest = FileHash(path, size)
    assert digest.hexdigest() == hashlib.sha256(path.read_bytes()).hexdigest()
    digest.close()


def test_hash_of_the_first_bytes_only(tmp_path: Path) -> None:
    """Only the `size` bytes converted count (the file may have grown since it was mapped)."""
    path = _file(tmp_path, 100_000)
    assert FileHash(path, 1000).hexdigest() == hashlib.sha256(path.read_bytes()[:1000]).hexdigest()


def test_plain_reads_when_the_file_cannot_be_mapped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(*args: object, **kwargs: object) -> mmap.mmap:
        raise OSError("no map here")

    monkeypatch.setattr(filehash.mmap, "mmap", refuse)
    path = _file(tmp_path, FileHash._CHUNK + 5)
    assert FileHash(path, FileHash._CHUNK + 5).hexdigest() == (
        hashlib.sha256(path.read_bytes()).hexdigest()
    )


def test_a_file_shorter_than_its_map_is_an_error(tmp_path: Path) -> None:
    path = _file(tmp_path, 1000)
    digest = FileHash(path, 5000)  # cannot be mapped that long: read, and found short
    with pytest.raises(OSError, match="became shorter"):
        digest.hexdigest()


def test_a_small_file_is_hashed_without_a_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under `THREAD_FROM` bytes the digest is made by `hexdigest` itself (a thread started
    and joined per small recording cost as much as its hash); from it on, by a thread."""
    started: list[str] = []
    start = filehash.threading.Thread.start

    def counted(self: filehash.threading.Thread) -> None:
        started.append(self.name)
        start(self)

    monkeypatch.setattr(filehash.threading.Thread, "start", counted)
    monkeypatch.setattr(FileHash, "THREAD_FROM", 10_000)
    small, large = _file(tmp_path, 9_999), tmp_path / "large.log"
    large.write_bytes(small.read_bytes() + b"y")
    digest = FileHash(small, 9_999)
    assert digest.hexdigest() == hashlib.sha256(small.read_bytes()).hexdigest()
    assert started == []
    assert FileHash(large, 10_000).hexdigest() == hashlib.sha256(large.read_bytes()).hexdigest()
    assert started == [filehash.THREAD_NAME]


def test_a_small_file_closed_before_its_digest_is_not_read(tmp_path: Path) -> None:
    path = _file(tmp_path, 1000)
    digest = FileHash(path, 1000)
    path.unlink()  # a failed conversion closes the hash: the file is not opened at all
    digest.close()
