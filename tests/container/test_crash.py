"""Crash recovery: a writer killed at any point leaves a file `recover` turns into an archive.

The writer runs in a child process that is killed with SIGKILL (no `close`, no interpreter
cleanup), mid-write and mid-close.
"""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import threading
import zipfile
from pathlib import Path
from typing import Any

import msgpack
import pytest

from nanorec import ArchiveReader, recover, verify
from nanorec.archive.wire import embed_timestamp
from nanorec.archive.writer import partial_path
from nanorec.errors import ArchiveError, NanorecError

from .nanover_reference import MessageEvent, NanoverRecordingWriter

CHILD = r"""
import os, signal, sys
import nanorec.archive.closing as closing_module
from nanorec import ArchiveWriter

path, mode, layout = sys.argv[1], sys.argv[2], sys.argv[3]

def message(i):
    return {"frame": {"frame.index": i, "pad": bytes(i % 200)}, "state": {"updates": {"k": i}}}

def stamp(i):
    return 1_000 * i + i % 7

if mode == "close":
    # Die inside close(), after the messages header was finalised, while the index is written.
    def die(**kwargs):
        os.kill(os.getpid(), signal.SIGKILL)
    closing_module.encode_entries = die

writer = ArchiveWriter(path, compact=layout == "compact")
for i in range(3000):
    writer.write(message(i), timestamp_us=stamp(i), flags=i % 3)
writer.flush()
print("flushed", writer.message_count, flush=True)
if mode == "close":
    writer.close()
i = 3000
while True:  # keep writing until killed
    writer.write(message(i), timestamp_us=stamp(i))
    i += 1
"""


def _message(i: int) -> dict[str, Any]:
    return {"frame": {"frame.index": i, "pad": bytes(i % 200)}, "state": {"updates": {"k": i}}}


def _stamp(i: int) -> int:
    return 1_000 * i + i % 7


def _run_child_and_kill(path: Path, mode: str, layout: str = "compact") -> int:
    """Start the writer, wait until it has flushed 3000 messages, SIGKILL it."""
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(path), mode, layout],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    watchdog = threading.Timer(30, child.kill)
    watchdog.start()
    try:
        line = child.stdout.readline() if child.stdout else ""
        assert line.startswith("flushed"), (line, child.stderr.read() if child.stderr else "")
        if mode == "messages":
            os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=30)
    finally:
        watchdog.cancel()
        child.kill()
        child.wait()
    assert child.returncode == -signal.SIGKILL
    return int(line.split()[1])


@pytest.mark.parametrize("mode", ["messages", "close"])
def test_killed_writer_is_recovered(tmp_path: Path, mode: str) -> None:
    final = tmp_path / "rec.nanover.zip"
    flushed = _run_child_and_kill(final, mode)
    partial = partial_path(final)
    assert not final.exists()
    assert partial.exists()
    with pytest.raises(zipfile.BadZipFile):
        zipfile.ZipFile(partial)
    assert not verify(partial).ok
    with pytest.raises(NanorecError):
        ArchiveReader(partial)

    out = tmp_path / "out.nanover.zip"
    result = recover(partial, out)
    assert result.messages >= flushed
    assert result.unknown_timestamps == 0
    if mode == "close":
        assert result.messages == flushed
        assert result.stop_reason == "end of data"
        assert result.discarded_bytes == 0
    with ArchiveReader(out) as reader:
        assert len(reader) == result.messages
        assert reader.index.timestamp_us.tolist() == [_stamp(i) for i in range(len(reader))]
        for i in (0, 1, flushed - 1, len(reader) - 1):
            assert reader[i] == _message(i)
        assert reader.description is not None
        assert reader.description["source"]["recovered_from"] == partial.name
    report = verify(out)
    assert report.ok, report.problems
    recover_again = tmp_path / "again.zip"
    assert recover(out, recover_again).messages == result.messages  # a complete file works too


def test_recover_keeps_flags_with_flags_of(tmp_path: Path) -> None:
    final = tmp_path / "rec.nanover.zip"
    _run_child_and_kill(final, "close")
    out = tmp_path / "out.zip"
    recover(partial_path(final), out, flags_of=lambda m: m["frame"]["frame.index"] % 3)
    with ArchiveReader(out) as reader:
        assert reader.index.flags.tolist() == [i % 3 for i in range(len(reader))]


def test_recover_a_crashed_nanover_recording(tmp_path: Path) -> None:
    """NanoVer's own writer, cut before close: messages recovered, times unknown."""
    buffer = io.BytesIO()
    writer = NanoverRecordingWriter(buffer)
    for i in range(50):
        writer.write_message_event(
            MessageEvent(timestamp=i, message={"state": {"updates": {"i": i}}})
        )
    writer.messagesfile.flush()
    crashed = tmp_path / "crashed.nanover.zip"
    crashed.write_bytes(buffer.getvalue()[:-7])  # and the last message cut short
    out = tmp_path / "out.zip"
    result = recover(crashed, out)
    assert result.messages == 49
    assert result.unknown_timestamps == 49
    assert result.stop_reason == "incomplete message"
    with ArchiveReader(out) as reader:
        assert reader[48] == {"state": {"updates": {"i": 48}}}
        assert set(reader.index.timestamp_us.tolist()) == {0}


def test_recover_refuses_what_is_not_an_archive(tmp_path: Path) -> None:
    junk = tmp_path / "junk"
    junk.write_bytes(b"not a zip at all, just text" * 3)
    with pytest.raises(ArchiveError):
        recover(junk, tmp_path / "out.zip")
    assert not (tmp_path / "out.zip").exists()


def test_recover_stops_at_damage(tmp_path: Path) -> None:
    final = tmp_path / "rec.nanover.zip"
    _run_child_and_kill(final, "close", "stored")  # damage at a message's stored offset
    partial = partial_path(final)
    data = bytearray(partial.read_bytes())
    # Turn message 10's first byte (its map header) into a non-map value.
    start = 66 + sum(len(embed_timestamp(msgpack.packb(_message(i)), _stamp(i))) for i in range(10))
    data[start] = 0x01
    damaged = tmp_path / "damaged"
    damaged.write_bytes(bytes(data))
    result = recover(damaged, tmp_path / "out.zip")
    assert result.messages == 10
    assert result.stop_reason.startswith("not a map")
