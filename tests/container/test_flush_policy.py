"""The writer's flushes: what a killed writer's file holds, and that the compact layout's
blocks never depend on the machine's timing (the same input gives the same bytes)."""

from __future__ import annotations

import itertools
import os
import shutil
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from nanorec import ArchiveReader, recover
from nanorec.archive import blocks as blocks_module
from nanorec.archive.writer import FLUSH_BYTES, FLUSH_MESSAGES, ArchiveWriter, partial_path


def _recovered_count(path: Path, tmp_path: Path) -> int:
    """How many messages `recover` finds in a copy of `path`'s partial file now."""
    copy = tmp_path / "copy.partial"
    shutil.copyfile(partial_path(path), copy)
    return recover(copy, tmp_path / "recovered.zip", overwrite=True).messages


def _jumping_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """A second and a half passes at every reading of the writer's clock."""
    clock = itertools.count(0.0, 1.5)
    monkeypatch.setattr(
        "nanorec.archive.message_stream.time", SimpleNamespace(monotonic=lambda: next(clock))
    )


def _write_mixed(path: Path, **options: Any) -> None:
    """About 3 MB: single messages and runs, compressible and not."""
    with ArchiveWriter(path, overwrite=True, compact=True, **options) as writer:
        stamp = 0
        for round_number in range(40):
            for number in range(30):
                writer.write({"a": {"n": number, "pad": bytes(number * 97)}}, timestamp_us=stamp)
                stamp += 1
            payload = bytes(range(256)) * 40 + round_number.to_bytes(4, "little") * 900
            writer.write_stored_run(
                [b"\x82\xa1b" + bytes((0xC5,)) + len(payload).to_bytes(2, "big") + payload] * 7,
                types=[("b",)] * 7,
                timestamps_us=range(stamp, stamp + 7),
            )
            stamp += 7


def test_compact_blocks_do_not_depend_on_timing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    steady = tmp_path / "steady.zip"
    _write_mixed(steady, deflate_threads=0)  # every block deflated at once, no flush by time

    compress_blocks = blocks_module._compress_blocks

    def slow(batch: list[tuple[bytes | memoryview, bool]]) -> Any:
        time.sleep(0.002)  # the deflate threads fall behind
        return compress_blocks(batch)

    monkeypatch.setattr(blocks_module, "_compress_blocks", slow)
    _jumping_clock(monkeypatch)
    loaded = tmp_path / "loaded.zip"
    _write_mixed(loaded)
    assert steady.read_bytes() == loaded.read_bytes()


@pytest.mark.parametrize("compact", [True, False])
def test_a_flush_every_1024_messages(tmp_path: Path, compact: bool) -> None:
    """Stored: every message is in the file; compact: all but the open block's (at most
    16 KiB of these 200-byte messages; deflated here on the writing thread)."""
    path = tmp_path / "a.zip"
    with ArchiveWriter(path, compact=compact, deflate_threads=0) as writer:
        for number in range(FLUSH_MESSAGES + 1):
            writer.write({"n": {"pad": bytes(190), "k": number}}, timestamp_us=number)
        writer._out.drain()
        open_block = (16 << 10) // 200 + 1 if compact else 0
        assert _recovered_count(path, tmp_path) >= FLUSH_MESSAGES - open_block


@pytest.mark.parametrize("compact", [True, False])
def test_a_flush_every_mib_buffered(tmp_path: Path, compact: bool) -> None:
    path = tmp_path / "a.zip"
    size = 64 << 10
    with ArchiveWriter(path, compact=compact, deflate_threads=0) as writer:
        for number in range(FLUSH_BYTES // size + 1):
            writer.write({"n": {"pad": os.urandom(size)}}, timestamp_us=number)
        writer._out.drain()
        assert _recovered_count(path, tmp_path) >= FLUSH_BYTES // size - 1


def test_an_explicit_flush_ends_the_open_block(tmp_path: Path) -> None:
    path = tmp_path / "a.zip"
    with ArchiveWriter(path, compact=True) as writer:
        for number in range(10):
            writer.write({"n": {"k": number}}, timestamp_us=number)
        writer.flush()
        assert _recovered_count(path, tmp_path) == 10


def test_compact_writes_its_finished_blocks_every_second(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under the count and size limits, a second passing still puts every finished block in
    the file (here each message fills a block of its own), but the open block stays open."""
    _jumping_clock(monkeypatch)
    path = tmp_path / "a.zip"
    with ArchiveWriter(path, compact=True, deflate_threads=0) as writer:
        for number in range(20):
            writer.write({"n": {"pad": bytes(20 << 10)}}, timestamp_us=number)
        assert _recovered_count(path, tmp_path) == 20
        writer.write({"n": {"k": 20}}, timestamp_us=20)  # a small message: its block is open
        assert _recovered_count(path, tmp_path) == 20
    with ArchiveReader(path) as reader:
        assert len(reader) == 21
