"""`nanorec.open` on a native file: its temporary archive never outlives the recording."""

from __future__ import annotations

import gc
import tempfile
from pathlib import Path

import pytest

import nanorec
from nanorec.contract import Recording
from tests.conftest import SAMPLES

SAMPLE = SAMPLES / "carla-0.9.16-town03.log"


def _ours() -> set[Path]:
    return set(Path(tempfile.gettempdir()).glob("nanorec-*"))


def test_closed_or_collected_recordings_leave_no_temporary_archive(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # alone in it, whatever else runs
    before = _ours()
    rec = nanorec.open(SAMPLE)
    assert isinstance(rec, Recording) and len(_ours() - before) == 1
    rec.close()
    assert _ours() == before
    for _ in range(3):  # a notebook re-running a cell, never closing
        rec = nanorec.open(SAMPLE)
        len(rec)
    del rec
    gc.collect()
    assert _ours() == before


def test_reprs_are_one_line() -> None:
    with nanorec.open(SAMPLE) as rec:
        assert "\n" not in repr(rec) and "frames" in repr(rec)
        assert "\n" not in repr(rec.reader)


def test_carla_values_print_on_one_line() -> None:
    from nanorec.converters.carla.ids import FAMILIES

    assert repr(FAMILIES["0.9.16"]).startswith("<Family 0.9.16")
    with nanorec.open(SAMPLE) as rec:
        world = rec.frame(5)
        for value in (world, world.actors, rec.trajectory(6)):
            text = repr(value)
            assert "\n" not in text and " at 0x" not in text and len(text) < 400, text
