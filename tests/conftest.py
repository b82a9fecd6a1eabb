"""Shared fixtures: where the real recordings are (beside the project, when present)."""

from __future__ import annotations

import inspect
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner, Result

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
REALDATA = SHARED / "realdata"
SAMPLES = REPO / "samples"


def carla_realdata() -> list[Path]:
    """The real CARLA recordings of ../shared/realdata/carla (empty when absent)."""
    folder = REALDATA / "carla"
    return sorted(p for p in folder.iterdir() if p.is_file()) if folder.is_dir() else []


@pytest.fixture
def realdata_dir() -> Path:
    """../shared/realdata; skips the test when it is not there (a fresh clone)."""
    if not REALDATA.is_dir():
        pytest.skip("../shared/realdata is not present")
    return REALDATA


@pytest.fixture(scope="session", autouse=True)
def fake_plugin_installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Install `tests/converters/fake_plugin.py` as a third-party package would: a
    distribution whose metadata declares a `nanorec.converters` entry point. nanorec finds
    it through importlib.metadata alone."""
    from nanorec import registry
    from tests.converters.fake_plugin import install

    site = install(tmp_path_factory.mktemp("site"))
    try:
        yield
    finally:
        sys.path.remove(str(site))
        registry.converters.cache_clear()


class NanorecRunner(CliRunner):
    """Invokes nanorec's `app` as `main` does (`lazy_app`: each verb built when used)."""

    def invoke(self, app: typer.Typer, *args: Any, **kwargs: Any) -> Result:
        from nanorec.cli import app as nanorec_app
        from nanorec.cli import lazy_app

        return super().invoke(lazy_app() if app is nanorec_app else app, *args, **kwargs)


def make_runner() -> CliRunner:
    """A CliRunner keeping stderr apart from stdout on every click typer allows (click < 8.2
    needs `mix_stderr=False`, later ones have no such argument)."""
    if "mix_stderr" in inspect.signature(CliRunner.__init__).parameters:
        return NanorecRunner(mix_stderr=False)  # type: ignore[call-arg, unused-ignore]
    return NanorecRunner()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Modules holding slow-lane tests first, each kept whole (its fixtures made once), in
    their order (`-n auto` with `--dist worksteal`, pyproject.toml): the minute-long tests
    (the README in a fresh venv, the browser, the memory bounds) start while thousands of
    short ones remain to balance the workers, instead of one worker finishing them at the
    end while the other waits."""
    slow = {item.path for item in items if item.get_closest_marker("slow") is not None}
    items.sort(key=lambda item: item.path not in slow)
