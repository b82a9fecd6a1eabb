"""A writer killed mid-way: `nanorec recover` gives back a pbstream archive whose export is
the exact start of the original stream (every record written before the kill)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from nanorec import registry
from nanorec.cli import _register, app
from nanorec.converters.pbstream.recording import PbstreamRecording
from tests.conftest import SAMPLES, make_runner

SAMPLE = SAMPLES / "pbstream-small.pbstream"
KILLED_AFTER = 120

_WRITER = """
import os, sys
from nanorec.archive.reader import ArchiveReader
from nanorec.archive.writer import ArchiveWriter
with ArchiveReader(sys.argv[1]) as reader:
    writer = ArchiveWriter(sys.argv[2], source_format="pbstream")
    for number in range(int(sys.argv[3])):
        writer.write(reader.read(number), timestamp_us=int(reader.index.timestamp_us[number]))
    writer.flush(fsync=True)
    os._exit(0)  # killed: nothing written at close
"""


def test_killed_writer_recovers_as_pbstream(tmp_path: Path) -> None:
    archive = tmp_path / "whole.nanover.zip"
    registry.get("pbstream").convert(SAMPLE, archive)
    out = tmp_path / "killed.nanover.zip"
    subprocess.run(
        [sys.executable, "-c", _WRITER, str(archive), str(out), str(KILLED_AFTER)], check=True
    )
    partial = tmp_path / ".killed.nanover.zip.partial"
    assert partial.exists() and not out.exists()
    _register()
    runner = make_runner()
    recovered = tmp_path / "recovered.nanover.zip"
    result = runner.invoke(app, ["recover", str(partial), "-o", str(recovered)])
    assert result.exit_code == 0, result.stderr
    assert "pbstream" in result.stdout
    with registry.open(recovered) as rec:
        assert isinstance(rec, PbstreamRecording) and len(rec) == KILLED_AFTER
        assert rec.summary()["format_version"] == "2"
    back = tmp_path / "back.pbstream"
    result = runner.invoke(app, ["export", str(recovered), "-o", str(back)])
    assert result.exit_code == 0, result.stderr
    data = back.read_bytes()
    assert len(data) > 10_000 and data == SAMPLE.read_bytes()[: len(data)]
