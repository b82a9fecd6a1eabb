"""`nanorec roundtrip`: per-file report, exit status 0 / 1 (not identical) / 2 (unreadable)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import Result

from nanorec.cli import _register, app
from nanorec.converters.carla import roundtrip as roundtrip_module
from nanorec.converters.carla.ids import FAMILIES
from tests.conftest import make_runner
from tests.converters.carla import carla_bytes as cb

runner = make_runner()


def _invoke(*args: str) -> Result:
    _register()
    return runner.invoke(app, ["carla", "roundtrip", *args])


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    family = FAMILIES["0.9.16"]
    good = tmp_path / "good.log"
    good.write_bytes(cb.recording(family, 3))
    cut = tmp_path / "crashed.log"
    cut.write_bytes(cb.recording(family, 3)[:-20])
    junk = tmp_path / "junk.log"
    junk.write_bytes(b"this is not a recording")
    return {"good": good, "cut": cut, "junk": junk}


def test_one_line_per_file(files: dict[str, Path]) -> None:
    """As the generic `nanorec roundtrip` prints, for one file as for several."""
    result = _invoke(str(files["good"]), str(files["cut"]))
    assert result.exit_code == 0, result.output
    good, cut = result.stdout.splitlines()
    assert good.startswith(f"{files['good']}: carla 0.9.16, 3 frames, archive ")
    assert good.endswith(" bytes: identical")
    assert cut.startswith(f"{files['cut']}: carla 0.9.16, 3 frames (cut short at byte ")
    assert cut.endswith(": identical")
    _register()
    top = runner.invoke(app, ["roundtrip", str(files["good"])])
    assert top.exit_code == 0 and top.stdout == good + "\n"


def test_reports_each_file(files: dict[str, Path]) -> None:
    result = _invoke("--verbose", str(files["good"]), str(files["cut"]))
    assert result.exit_code == 0, result.output
    out = result.output
    assert "family:      0.9.16 (detected; PhysicsControl wheels 48 B)" in out
    assert "frames:      3 (the last one incomplete)" in out
    assert "truncated:   yes, at byte" in out
    assert "identical:   yes" in out and "NO" not in out


def test_json_and_forced_family(files: dict[str, Path]) -> None:
    result = _invoke("--json", "--family", "0.9.15", str(files["good"]))
    assert result.exit_code == 0, result.output
    (report,) = json.loads(result.output)
    assert report["family"] == "0.9.15" and report["forced"]
    assert report["identical"] and report["raw_by_id"] == {"23": 3}
    assert report["truncated"] is False


def test_unreadable_input_exits_2_with_one_line(files: dict[str, Path], tmp_path: Path) -> None:
    for bad in (files["junk"], tmp_path / "missing.log"):
        result = _invoke(str(files["good"]), str(bad))
        assert result.exit_code == 2
        errors = [line for line in result.stderr.splitlines() if line.startswith("nanorec:")]
        assert len(errors) == 1 and str(bad) in errors[0]
        assert "Traceback" not in result.stdout + result.stderr
    result = _invoke("--family", "0.9.99", str(files["good"]))
    assert result.exit_code == 2 and "unknown CARLA release family" in result.stderr


def test_not_identical_exits_1(files: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    real = roundtrip_module.roundtrip

    def broken(*args: object, **kwargs: object) -> roundtrip_module.RoundtripReport:
        report = real(*args, **kwargs)  # type: ignore[arg-type]
        return roundtrip_module.RoundtripReport(
            **{**report.__dict__, "identical": False, "first_difference": 40}
        )

    monkeypatch.setattr(roundtrip_module, "roundtrip", broken)
    result = _invoke(str(files["good"]))
    assert result.exit_code == 1
    assert result.stdout.endswith(": NOT IDENTICAL (first difference at byte 40)\n")
    result = _invoke("-v", str(files["good"]))
    assert result.exit_code == 1
    assert "identical:   NO (first difference at byte 40)" in result.output
