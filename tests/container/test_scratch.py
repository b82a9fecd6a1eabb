"""Archives that live for one command (a verb given a native file, `nanorec.open` of one) are
scratch: stored, never synced; every other archive is compact and synced by default."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from nanorec import registry
from nanorec.archive.layout import durable, scratch
from nanorec.archive.writer import ArchiveWriter
from tests.conftest import REPO

SAMPLE = REPO / "samples" / "carla-0.9.16-town03.log"


def _count_syncs(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    for name in ("fsync", "fdatasync"):
        real = getattr(os, name)

        def counted(fd: int, real: object = real) -> None:
            calls.append(fd)
            real(fd)  # type: ignore[operator]

        monkeypatch.setattr(os, name, counted)
    return calls


def test_a_native_file_opens_through_a_scratch_archive(monkeypatch: pytest.MonkeyPatch) -> None:
    syncs = _count_syncs(monkeypatch)
    with registry.open(SAMPLE) as rec:
        assert not rec.reader.compact
        assert len(rec) > 0
    assert syncs == []


def test_archives_are_durable_outside_scratch(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    assert durable()
    syncs = _count_syncs(monkeypatch)
    with ArchiveWriter(tmp_path / "kept.nanover.zip") as writer:
        writer.write({"a": 1}, timestamp_us=0)
    assert syncs  # the archive a user keeps is on disk when the writer returns
    syncs.clear()
    with scratch(), ArchiveWriter(tmp_path / "scratch.nanover.zip") as writer:
        assert not writer.compact and not durable()
        writer.write({"a": 1}, timestamp_us=0)
    assert syncs == [] and durable()
