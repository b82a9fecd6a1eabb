"""One truth per number: a crashed file's frames, and a forced wrong release family."""

from __future__ import annotations

import json
from pathlib import Path

import nanorec
from nanorec.cli import _register, app
from tests.conftest import SAMPLES, make_runner

CRASH = SAMPLES / "carla-0.9.15-crash-town05.log"


def _run(*args: object) -> tuple[int, str, str]:
    _register()
    result = make_runner().invoke(app, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


def test_a_cut_file_counts_its_complete_frames_everywhere(tmp_path: Path) -> None:
    code, out, _ = _run("convert", CRASH, "-o", tmp_path / "a.zip")
    converted = int(out.split("carla: ")[1].split(" messages")[0])
    assert code == 0 and "cut short" in out
    info = json.loads(_run("info", CRASH, "--json")[1])
    with nanorec.open(tmp_path / "a.zip") as rec:
        assert converted == len(rec) == info["complete_frames"] == rec.summary()["frames"]
    text = _run("info", CRASH)[1]
    # CARLA's own text counts the frame the crash cut, as CARLA does: one more
    assert f"Frames: {info['frames']}\n" in text and info["frames"] == converted + 1


def test_a_forced_wrong_family_warns_and_fails(tmp_path: Path) -> None:
    code, out, _ = _run("convert", CRASH, "-o", tmp_path / "a.zip", "--family", "0.9.10-0.9.13")
    assert code == 1 and "warning: family 0.9.10-0.9.13 was forced" in out
    code, out, _ = _run(
        "convert", CRASH, "-o", tmp_path / "b.zip", "--family", "0.9.10-0.9.13", "--keep-going"
    )
    assert code == 0 and "warning" in out
    code, out, _ = _run("convert", CRASH, "-o", tmp_path / "c.zip", "--family", "0.9.15")
    assert code == 0 and "warning" not in out
