"""CARLA's converter says an empty selection the way every format does (`EmptySelectionError`
naming the option), also when called from Python rather than through `nanorec export`."""

from __future__ import annotations

from pathlib import Path

import pytest

import nanorec
from nanorec.errors import EmptySelectionError
from tests.conftest import SAMPLES


def test_export_of_an_empty_selection(tmp_path: Path) -> None:
    converter = nanorec.registry.get("carla")
    with nanorec.open(SAMPLES / "carla-0.9.16-town03.log") as rec:
        for selection, says in (
            (nanorec.Selection.make(start=1e6), r"--start 1e\+06 selects no message"),
            (nanorec.Selection.make(messages="5:2"), "--messages 5:2 selects no message"),
        ):
            with pytest.raises(EmptySelectionError, match=says):
                converter.export(rec.reader, tmp_path / "clip.log", selection=selection)
    assert not list(tmp_path.iterdir())
