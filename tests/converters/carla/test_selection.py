"""CARLA's converter says an empty selection the way every format does (`EmptySelectionError`
naming the option), also when called from Python rather than through `nanorec export`."""

from __future__ import annotations

from pathlib import Path

import pytest

import nanorec
from nanorec.contract import ExportRequest
from nanorec.errors import EmptySelectionError
from tests.conftest import SAMPLES


def test_export_of_an_empty_selection(tmp_path: Path) -> None:
    converter = nanorec.registry.get("carla")
    with nanorec.open(SAMPLES / "carla-0.9.16-town03.log") as rec:
        for selection, says in (
            (nanorec.Selection.make(start=1e6), "--start 1000000 selects no message"),
            (nanorec.Selection.make(messages="5:2"), "--messages 5:2 selects no message"),
        ):
            with pytest.raises(EmptySelectionError, match=says):
                converter.export(rec.reader, tmp_path / "clip.log", ExportRequest(selection))
    assert not list(tmp_path.iterdir())


def test_export_to_tables_and_mcap_takes_their_own_kinds(tmp_path: Path) -> None:
    """For Parquet and MCAP, --type names a table or a topic (CARLA's `position`, `scene`),
    not a kind of archive message: the range is checked without it."""
    from nanorec.cli import _register, app
    from tests.conftest import make_runner

    pytest.importorskip("pyarrow")
    pytest.importorskip("mcap")
    _register()
    runner = make_runner()
    sample = str(SAMPLES / "carla-0.9.16-town03.log")
    for fmt, kind in (("parquet", "position"), ("mcap", "scene")):
        out = tmp_path / fmt
        args = ["export", sample, "-o", str(out), "-F", fmt, "-t", kind, "--messages", "0:2"]
        result = runner.invoke(app, args)
        assert result.exit_code == 0, (fmt, result.stderr)
        assert out.exists()
        result = runner.invoke(app, [*args[:-1], "5:2", "--force"])
        assert result.exit_code == 2 and "--messages 5:2 selects no message" in result.stderr
