"""The verbs on an archive given by URL (#36 item 1): `info`, `cat --messages N:N+1`,
`export` and `verify` of `http://127.0.0.1/...` read it in place, with the answers a local
path gives; `cat` of one message moves a few pages, not the archive."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("obstore")

from nanorec import registry
from nanorec.cli import _register, app

from ..conftest import SAMPLES, make_runner
from ..container.helpers import sample_messages, write_archive
from .servers import RangeServer

CARLA = SAMPLES / "carla-0.9.15-town03.log"
runner = make_runner()
_register()


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("remote-cli")
    registry.get("carla").convert(CARLA, out / "carla.nanover.zip")
    write_archive(out / "many.nanover.zip", sample_messages(60_000))
    return out


@pytest.fixture
def server(folder: Path) -> Iterator[RangeServer]:
    with RangeServer(folder).running() as running:
        yield running


def _both(args: list[str], url: str, local: Path) -> tuple[str, str]:
    remote = runner.invoke(app, [args[0], url, *args[1:]])
    here = runner.invoke(app, [args[0], str(local), *args[1:]])
    assert remote.exit_code == 0, remote.output
    assert here.exit_code == 0, here.output
    return remote.stdout, here.stdout


def test_info_and_cat_by_url_answer_as_the_local_path(server: RangeServer, folder: Path) -> None:
    url, local = server.url("carla.nanover.zip"), folder / "carla.nanover.zip"
    remote, here = _both(["info", "--json"], url, local)
    assert json.loads(remote) == json.loads(here)
    remote, here = _both(["cat", "--messages", "40:41"], url, local)
    assert remote == here and remote.strip()


def test_cat_of_one_message_by_url_moves_pages(server: RangeServer, folder: Path) -> None:
    url, local = server.url("many.nanover.zip"), folder / "many.nanover.zip"
    remote, here = _both(["cat", "--messages", "12345:12346"], url, local)
    assert remote == here and remote.count("\n") == 1
    assert server.sent < local.stat().st_size / 4  # the tail and a page, not the archive


def test_export_and_verify_by_url(server: RangeServer, folder: Path, tmp_path: Path) -> None:
    url = server.url("carla.nanover.zip")
    out = tmp_path / "back.log"
    done = runner.invoke(app, ["export", url, "-o", str(out)])
    assert done.exit_code == 0, done.output
    assert out.read_bytes() == CARLA.read_bytes()
    checked = runner.invoke(app, ["verify", url, "--json"])
    assert checked.exit_code == 0, checked.output
    assert json.loads(checked.stdout)["ok"] is True


def test_a_missing_url_is_one_line(server: RangeServer) -> None:
    done = runner.invoke(app, ["info", server.url("nope.nanover.zip")])
    assert done.exit_code == 2
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("nanorec: ")
