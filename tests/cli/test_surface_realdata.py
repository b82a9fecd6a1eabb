"""The common options mean the same on every real recording of every format and on NanoVer's
own recording (`contract.check_common_options`): run on each file's archive, and the message
range on the native file too."""

from __future__ import annotations

from pathlib import Path

import pytest

from nanorec import registry
from nanorec.cli import _register, app
from tests.conftest import REALDATA, make_runner
from tests.converters.contract import check_common_options

FILES = sorted(
    p
    for folder in ("carla", "rosbag", "pbstream", "nanover")
    for p in (REALDATA / folder).glob("*")
    if p.suffix in (".log", ".rec", ".bag", ".pbstream", ".zip")
)


@pytest.mark.slow
@pytest.mark.realdata
@pytest.mark.skipif(not FILES, reason="../shared/realdata absent")
@pytest.mark.parametrize("source", FILES, ids=lambda p: p.name)
def test_common_options_on_every_real_file(source: Path, tmp_path: Path) -> None:
    if source.suffix == ".zip":
        archive = source
    else:
        archive = tmp_path / (source.name + ".nanover.zip")
        registry.for_native(source).convert(source, archive)
        _register()
        native = make_runner().invoke(app, ["cat", str(source), "--messages", "0:1"])
        assert native.exit_code == 0 and len(native.stdout.splitlines()) == 1, native.stderr
    check_common_options(archive, tmp_path)
