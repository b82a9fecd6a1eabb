"""A bag conversion killed mid-way: `nanorec recover` gives back a bag archive.

The first archive message of each connection carries its connection record, so the
recovered messages (the bag's first ones in time: conversion writes them in time order)
come back with their topics, types and definitions: they decode, and `export` writes them
as a valid indexed bag (the layout of `--format indexed`). Not the original's bytes: its
chunk layout and record header field orders are written only when the conversion closes.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from nanorec import registry
from nanorec.cli import _register, app
from nanorec.converters.ros.ros1.recording import BagRecording
from nanorec.outputs.tables import dumps
from tests.conftest import make_runner
from tests.converters.rosbag.bags import make_bag

KILLED_AFTER = 300

_WRITER = """
import os, sys
from nanorec.archive.reader import ArchiveReader
from nanorec.archive.writer import ArchiveWriter
with ArchiveReader(sys.argv[1]) as reader:
    writer = ArchiveWriter(sys.argv[2], source_format="rosbag")
    for number in range(int(sys.argv[3])):
        writer.write(reader.read(number), timestamp_us=int(reader.index.timestamp_us[number]))
    writer.flush(fsync=True)
    os._exit(0)  # killed: nothing written at close
"""


def test_killed_conversion_recovers_as_a_bag(tmp_path: Path) -> None:
    bag = make_bag(tmp_path, seconds=2.0)
    archive = tmp_path / "whole.nanover.zip"
    registry.get("rosbag").convert(bag, archive)
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
    assert "rosbag" in result.stdout
    with registry.open(archive) as whole:
        expected = [(whole.kind_of(n), whole.time_ns(n), whole.raw(n)) for n in range(KILLED_AFTER)]
        decoded = [dumps(whole.decoded(n)) for n in range(KILLED_AFTER)]
    with registry.open(recovered) as rec:
        assert isinstance(rec, BagRecording) and len(rec) == KILLED_AFTER
        assert [dumps(rec.decoded(n)) for n in range(KILLED_AFTER)] == decoded
        assert {t["topic"] for t in rec.summary()["topics"]} == {t for t, _, _ in expected}
    result = runner.invoke(app, ["verify", str(recovered)])  # no template or rank: not due
    assert result.exit_code == 0, result.output
    back = tmp_path / "back.bag"
    result = runner.invoke(app, ["export", str(recovered), "-o", str(back)])
    assert result.exit_code == 0, result.stderr
    info = json.loads(runner.invoke(app, ["info", str(back), "--json"]).stdout)
    assert info["indexed"] and info["messages"] == KILLED_AFTER
    with registry.open(back) as again:
        got = [(again.kind_of(n), again.time_ns(n), again.raw(n)) for n in range(len(again))]
        latched = {c.topic for c in again.meta.connections.values() if c.latching}
    assert got == expected and latched == {"/map_name"}


def test_other_messages_are_not_adopted(tmp_path: Path) -> None:
    from nanorec.archive.reader import ArchiveReader
    from nanorec.archive.writer import ArchiveWriter
    from nanorec.converters.ros.ros1.adopt import rebuild_members

    path = tmp_path / "other.nanover.zip"
    with ArchiveWriter(path) as writer:
        writer.write({"/x": {"conn": 0, "sec": 1, "nsec": 2, "data": b""}}, timestamp_us=1)
    with ArchiveReader(path) as reader:
        assert rebuild_members(reader) is None  # no connection record: not a converted bag
