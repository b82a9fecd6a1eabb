"""The compact layout on every real recording: small (the issue's ratios), exported back
byte for byte, and read by NanoVer's reader (the reference copy; the real package when
installed)."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import pytest

from nanorec import ArchiveReader, registry
from nanorec.archive.atomic import file_sha256
from tests.conftest import REALDATA

from .nanover_reference import NanoverRecordingReader

_NATIVE = sorted(
    path
    for folder in ("carla", "rosbag", "pbstream")
    if (REALDATA / folder).is_dir()
    for path in (REALDATA / folder).iterdir()
    if path.suffix in (".log", ".rec", ".bag", ".pbstream")
)


@pytest.fixture(params=_NATIVE or [None], ids=[p.name for p in _NATIVE] or ["absent"])
def native(request: pytest.FixtureRequest, realdata_dir: Path) -> Path:
    if request.param is None:
        pytest.skip("no real recordings")
    path: Path = request.param
    return path


def _iterate_with(reader_class: Any, path: Path) -> int:
    with reader_class.from_path(path) as theirs:
        return sum(1 for _ in theirs.iter_message_events())


def test_compact_archive_is_small_exact_and_nanover_readable(native: Path, tmp_path: Path) -> None:
    converter = registry.for_native(native)
    archive = tmp_path / "a.nanover.zip"
    report = converter.convert(native, archive)
    ratio = archive.stat().st_size / native.stat().st_size
    per_message = native.stat().st_size / max(report.messages, 1)
    assert ratio <= (1.25 if per_message >= 100 else 2.0), (ratio, per_message)
    if converter.name == "carla":
        assert ratio < 1.0
    back = tmp_path / "back"
    with ArchiveReader(archive) as reader:
        assert reader.compact
        converter.export(reader, back)
        count = len(reader)
    assert file_sha256(back) == file_sha256(native)
    assert _iterate_with(NanoverRecordingReader, archive) == count
    try:
        reading = importlib.import_module("nanover.recording.reading")
    except ImportError:
        return
    assert _iterate_with(reading.NanoverRecordingReader, archive) == count
