"""The write-behind thread: order, bounded depth, errors, and archives identical to writing
on the calling thread."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import numpy as np
import pytest

from nanorec import ArchiveReader, ArchiveWriter, verify
from nanorec.archive import writebehind, zipout
from nanorec.archive.writebehind import WriteBehind, write_all

from .helpers import sample_messages


def test_batches_are_written_in_order(tmp_path: Path) -> None:
    path = tmp_path / "out"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT)
    behind = WriteBehind(fd, depth=2)
    expected = []
    for number in range(300):
        batch: list[bytes | memoryview] = [bytes([number % 256]) * (number + 1), b"|"]
        batch.append(memoryview(b"%d;" % number))
        expected += [bytes(part) for part in batch]
        behind.submit(batch)
    behind.drain()
    behind.close()
    os.close(fd)
    assert path.read_bytes() == b"".join(expected)


def test_depth_bounds_the_batches_waiting(tmp_path: Path) -> None:
    """A slow write holds the caller back once `depth` batches are queued."""
    gate = threading.Event()
    written: list[int] = []
    real = writebehind.write_all

    def slow(fd: int, parts: list[bytes | memoryview]) -> None:
        gate.wait(10)
        written.append(len(parts))
        real(fd, parts)

    fd = os.open(tmp_path / "out", os.O_WRONLY | os.O_CREAT)
    behind = WriteBehind(fd, depth=2)
    writebehind.write_all = slow  # type: ignore[assignment]
    try:
        behind.submit([b"a"])
        behind.submit([b"b"])
        third = threading.Thread(target=behind.submit, args=([b"c"],))
        third.start()
        third.join(0.2)
        assert third.is_alive()  # two queued: the third waits
        gate.set()
        third.join(10)
        behind.drain()
    finally:
        writebehind.write_all = real
        behind.close()
        os.close(fd)
    assert (tmp_path / "out").read_bytes() == b"abc"


def test_a_failed_write_is_raised_and_stops_the_rest(tmp_path: Path) -> None:
    path = tmp_path / "out"
    path.write_bytes(b"")
    fd = os.open(path, os.O_RDONLY)  # every write fails (EBADF)
    behind = WriteBehind(fd)
    behind.submit([b"lost"])
    with pytest.raises(OSError):
        behind.drain()
    with pytest.raises(OSError):
        behind.submit([b"after"])
    behind.close()  # does not raise
    os.close(fd)
    assert path.read_bytes() == b""


def test_close_writes_what_was_handed_over(tmp_path: Path) -> None:
    path = tmp_path / "out"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT)
    behind = WriteBehind(fd)
    behind.submit([b"x" * 100_000])
    behind.close()
    behind.close()  # idempotent
    os.close(fd)
    assert path.stat().st_size == 100_000


def test_write_all_finishes_short_writes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = os.writev
    monkeypatch.setattr(os, "writev", lambda fd, parts: real(fd, [bytes(parts[0])[:3]]))
    path = tmp_path / "out"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT)
    parts: list[bytes | memoryview] = [b"abcdef", memoryview(b"ghij"), b"k"] * 300  # > IOV_BATCH
    write_all(fd, parts)
    os.close(fd)
    assert path.read_bytes() == b"abcdefghijk" * 300


def _rows(count: int) -> np.ndarray:
    from nanorec.archive.wire import timestamp_entry

    rows = []
    for number in range(count):
        stamp = timestamp_entry(3000 + number)
        body = b"\x82\xa1r\xc5\x10\x00" + bytes([number % 251]) * 0x1000 + stamp
        rows.append(np.frombuffer(body, np.uint8))
    return np.stack(rows)


@pytest.mark.parametrize("compact", [False, True])
def test_archive_bytes_equal_writing_on_the_calling_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, compact: bool
) -> None:
    """Stored messages go through the write-behind thread (compact ones are written on the
    calling thread: the deflate threads have the other core), and the archive is byte for
    byte the one written without it."""
    rows = _rows(700)  # ~2.9 MB of stored rows: several flushes behind
    submitted: list[int] = []
    real_submit = WriteBehind.submit

    def counting(self: WriteBehind, batch: list[bytes | memoryview]) -> None:
        submitted.append(len(batch))
        real_submit(self, batch)

    def write(path: Path) -> None:
        with ArchiveWriter(path, compact=compact) as writer:
            for number, message in enumerate(sample_messages(3000)):
                writer.write(message, timestamp_us=number)
            writer.write_stored_rows(rows, np.arange(3000, 3700), types=("r",))
            for number, message in enumerate(sample_messages(500)):
                writer.write(message, timestamp_us=10_000 + number)

    monkeypatch.setattr(WriteBehind, "submit", counting)
    write(tmp_path / "behind.zip")
    assert len(submitted) >= 3 if not compact else not submitted
    real_flush = zipout.ZipOutput.flush_buffer
    monkeypatch.setattr(
        zipout.ZipOutput,
        "flush_buffer",
        lambda self, behind=False: real_flush(self, behind=False),
    )
    write(tmp_path / "inline.zip")
    assert (tmp_path / "behind.zip").read_bytes() == (tmp_path / "inline.zip").read_bytes()
    assert verify(tmp_path / "behind.zip").ok
    with ArchiveReader(tmp_path / "behind.zip") as reader:
        assert len(reader) == 4200


def test_flush_puts_the_messages_in_the_partial_file(tmp_path: Path) -> None:
    """`ArchiveWriter.flush` returns once the flushed bytes are in the file (not merely
    handed to the write-behind thread)."""
    path = tmp_path / "a.zip"
    writer = ArchiveWriter(path, compact=False)
    for number, message in enumerate(sample_messages(5000)):
        writer.write(message, timestamp_us=number)
    writer.flush()
    size = zipout.partial_path(path).stat().st_size
    assert size == writer._out.tell()
    writer.close()
