"""CARLA conversion runs with the cyclic collector paused, and leaves it as it was."""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Any

import pytest

from nanorec.converters.carla import convert as convert_module
from nanorec.converters.carla.generate import generate_to


def test_convert_pauses_the_collector(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = tmp_path / "in.log"
    generate_to(source, "0.9.16", target_bytes=200_000, vehicles=5, walkers=2)
    seen: list[bool] = []
    real = convert_module._convert

    def spy(*args: Any) -> Any:
        seen.append(gc.isenabled())
        return real(*args)

    monkeypatch.setattr(convert_module, "_convert", spy)
    assert gc.isenabled()
    report = convert_module.convert(source, tmp_path / "out.zip")
    assert seen == [False]
    assert gc.isenabled()
    assert report.messages > 0
