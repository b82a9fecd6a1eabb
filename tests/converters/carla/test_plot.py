"""`nanorec plot`: every sample renders to a readable PNG; options and errors."""

from __future__ import annotations

import struct
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest
from typer.testing import CliRunner

from nanorec.cli import _register, app
from nanorec.converters.carla.plot import plot
from nanorec.converters.carla.recording import CarlaRecording
from nanorec.errors import EmptySelectionError, OutputExistsError, UnsupportedError
from tests.conftest import SAMPLES, carla_realdata, make_runner

pytest.importorskip("matplotlib")

SAMPLE_FILES = sorted(SAMPLES.glob("*.log"))
SAMPLE = SAMPLES / "carla-0.9.15-town03.log"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def png_pixels(path: Path) -> npt.NDArray[np.float32]:
    from matplotlib.image import imread

    return np.asarray(imread(path))


def assert_readable_png(path: Path, width: int = 800, height: int | None = None) -> None:
    """`height` None: as high as the view needs, at most `width` (the picture's default)."""
    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC and data[12:16] == b"IHDR"
    found_width, found_height = struct.unpack(">II", data[16:24])
    assert found_width == width
    assert found_height == height if height is not None else 300 <= found_height <= width
    assert 20_000 < len(data) < 400_000
    pixels = png_pixels(path)[..., :3]
    colours = np.unique((pixels * 255).round().reshape(-1, 3), axis=0)
    assert len(colours) > 50  # lines, boxes, lights and text, not a blank canvas
    white = np.all(pixels > 0.99, axis=-1).mean()
    assert 0.3 < white < 0.98  # mostly background, but plenty drawn


@pytest.fixture(scope="module")
def rec() -> Iterator[CarlaRecording]:
    with CarlaRecording.open(SAMPLE) as opened:
        yield opened


@pytest.mark.slow
@pytest.mark.parametrize("path", SAMPLE_FILES, ids=lambda p: p.name)
def test_every_sample_renders(path: Path, tmp_path: Path) -> None:
    out = tmp_path / "view.png"
    with CarlaRecording.open(path) as rec:
        report = plot(rec, out)
    assert report.output == out and report.size == out.stat().st_size
    assert report.actors > 5 and report.frame == report.stop - 1
    assert_readable_png(out)


@pytest.mark.slow
def test_options(rec: CarlaRecording, tmp_path: Path) -> None:
    report = plot(rec, tmp_path / "a.png", frame=10)
    assert (report.start, report.stop, report.frame) == (0, len(rec), 10)
    report = plot(rec, tmp_path / "b.png", frame=-1, start_s=2.0, stop_s=4.0, actors=[6, 16])
    assert (report.start, report.stop, report.frame, report.actors) == (40, 81, 299, 1)
    assert_readable_png(tmp_path / "b.png")
    report = plot(rec, tmp_path / "c.svg", actors=[6], max_frames=10)
    assert (tmp_path / "c.svg").read_bytes().lstrip().startswith(b"<?xml")


@pytest.mark.slow
def test_errors(rec: CarlaRecording, tmp_path: Path) -> None:
    out = tmp_path / "a.png"
    out.write_bytes(b"mine")
    with pytest.raises(OutputExistsError):
        plot(rec, out)
    assert out.read_bytes() == b"mine"
    plot(rec, out, overwrite=True, actors=[6])
    assert out.read_bytes()[:8] == PNG_MAGIC
    with pytest.raises(ValueError, match="actor 999 never appears"):
        plot(rec, tmp_path / "b.png", actors=[999])
    with pytest.raises(ValueError, match="frame 300 out of range"):
        plot(rec, tmp_path / "b.png", frame=300)
    with pytest.raises(EmptySelectionError, match="--start 100 selects no message"):
        plot(rec, tmp_path / "b.png", start_s=100.0)
    with pytest.raises(ValueError, match="cannot write 'bmpx'"):
        plot(rec, tmp_path / "b.bmpx")
    assert not (tmp_path / "b.png").exists()


def test_missing_matplotlib(
    rec: CarlaRecording, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib.backends.backend_agg", None)
    with pytest.raises(UnsupportedError, match=r"pip install 'nanorec\[plot\]'"):
        plot(rec, tmp_path / "a.png")


@pytest.mark.realdata
@pytest.mark.parametrize("path", carla_realdata()[:2], ids=lambda p: p.name)
def test_real_recordings_render(path: Path, tmp_path: Path, realdata_dir: Path) -> None:
    with CarlaRecording.open(path) as rec:
        plot(rec, tmp_path / "real.png")
    data = (tmp_path / "real.png").read_bytes()
    assert data[:8] == PNG_MAGIC and len(data) > 10_000


@pytest.fixture(scope="module")
def runner() -> CliRunner:
    _register()
    return make_runner()


@pytest.mark.slow
def test_cli(runner: CliRunner, tmp_path: Path) -> None:
    out = tmp_path / "view.png"
    args = ["plot", str(SAMPLE), "-o", str(out), "--start", "1", "--end", "5", "-a", "6", "-a", "7"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.stderr
    assert "2 actors drawn at frame 100" in result.stdout
    assert_readable_png(out)
    for bad in (
        args,  # exists, no --force
        ["plot", str(SAMPLE), "-o", str(tmp_path / "x.png"), "--actor", "999"],
        ["plot", str(SAMPLE), "-o", str(tmp_path / "x.png"), "--frame", "5000"],
        ["plot", str(SAMPLE), "-o", str(tmp_path / "x.png"), "--start", "9", "--end", "1"],
        ["plot", str(tmp_path / "missing.log"), "-o", str(tmp_path / "x.png")],
    ):
        result = runner.invoke(app, bad)
        assert result.exit_code == 2, bad
        assert result.stderr.count("\n") == 1 and result.stderr.startswith("nanorec: "), bad
    assert runner.invoke(app, [*args, "--force"]).exit_code == 0
    result = runner.invoke(app, ["plot", "--help"])
    assert result.exit_code == 0 and "Example: nanorec plot" in result.stdout


@pytest.mark.slow
def test_cli_takes_the_common_selection(runner: CliRunner, tmp_path: Path) -> None:
    """--messages/--frames, --duration and --type (actor kinds) pick what is drawn; an empty
    selection is the one error naming the option, and writes nothing."""
    out = tmp_path / "window.png"
    result = runner.invoke(app, ["plot", str(SAMPLE), "-o", str(out), "--messages", "40:81"])
    assert result.exit_code == 0, result.stderr
    assert "paths over frames 40-80" in result.stdout and "at frame 80" in result.stdout
    assert_readable_png(out)
    args = ["plot", str(SAMPLE), "-o", str(out), "--force", "-s", "2", "-u", "2", "-t", "walker"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.stderr
    assert "paths over frames 40-80, 4 actors drawn" in result.stdout
    empty = tmp_path / "empty.png"
    result = runner.invoke(app, ["plot", str(SAMPLE), "-o", str(empty), "--start", "1e6"])
    assert result.exit_code == 2 and not empty.exists()
    assert result.stderr.startswith("nanorec: --start 1000000 selects no message")
    result = runner.invoke(app, ["plot", str(SAMPLE), "-o", str(empty), "-t", "position"])
    assert result.exit_code == 2 and "--type takes" in result.stderr
