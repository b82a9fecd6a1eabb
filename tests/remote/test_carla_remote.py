"""A CARLA archive read by URL (#36, what was left): open + `frame(n)` cold in at most 3
requests and 512 KiB (the tail, which now holds the recording's side members, one index page,
the frame's blocks), at most 2 after the first; the world equal to the local archive's.
Counted on the logging Range server, with small pages so that the archive has several."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("obstore")

from nanorec import registry
from nanorec.archive import pages
from nanorec.converters.carla.convert import convert
from nanorec.converters.carla.generate import generate_to
from nanorec.converters.carla.recording import CarlaRecording
from nanorec.selection import Selection

from .servers import RangeServer

COLD_BYTES = 512 << 10
PER_PAGE = 64  # ~200 frames: several pages


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("carla-remote")
    source = out / "town.log"
    generate_to(source, "0.9.16", target_bytes=4_000_000, vehicles=40, walkers=8, seed=3)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(pages, "PAGE_MESSAGES", PER_PAGE)
        convert(source, out / "town.nanover.zip")
    source.unlink()
    return out


@pytest.fixture
def server(folder: Path) -> Iterator[RangeServer]:
    with RangeServer(folder).running() as running:
        yield running


def _frames(count: int) -> list[int]:
    return [0, PER_PAGE - 1, PER_PAGE, count - 1, *random.Random(5).sample(range(count), 6)]


def test_the_side_members_lie_in_the_tail_after_the_pages(folder: Path) -> None:
    with CarlaRecording.open(folder / "town.nanover.zip") as local:
        reader = local.reader
        assert reader.pages is not None and reader.pages.pages >= 3
        names = reader.member_names
        assert names.index("nanorec.pages") < names.index("carla.msgpack.zlib")
        assert names[-1] == "nanorec.msgpack"


def test_open_and_frame_n_cold_then_warm(server: RangeServer, folder: Path) -> None:
    url = server.url("town.nanover.zip")
    with CarlaRecording.open(folder / "town.nanover.zip") as local:
        count = len(local)
        for number in _frames(count):  # each from a fresh open: cold
            server.reset()
            with registry.open(url) as remote:
                assert isinstance(remote, CarlaRecording)
                assert server.requests == 1, server.log  # the tail: members and page table
                world = remote.frame(number)
                assert server.requests <= 3 and server.sent <= COLD_BYTES, (number, server.log)
                assert world.to_json() == local.frame(number).to_json()
                assert len(remote) == count and remote.duration == local.duration
        with registry.open(url) as remote:
            assert isinstance(remote, CarlaRecording)
            remote.frame(0)
            for number in random.Random(9).sample(range(count), 12):  # warm
                server.reset()
                assert remote.frame(number).to_json() == local.frame(number).to_json()
                assert server.requests <= 2, (number, server.log)


def test_the_world_at_time_t_cold(server: RangeServer, folder: Path) -> None:
    url = server.url("town.nanover.zip")
    with CarlaRecording.open(folder / "town.nanover.zip") as local:
        for seconds in (0.0, local.duration / 3, local.duration):
            server.reset()
            with registry.open(url) as remote:
                assert isinstance(remote, CarlaRecording)
                world = remote.at(seconds)
                assert server.requests <= 3 and server.sent <= COLD_BYTES, server.log
                assert world.to_json() == local.at(seconds).to_json()


def test_rows_of_a_time_window_by_url_read_its_frames_only(
    server: RangeServer, folder: Path
) -> None:
    """`cat URL --type position --start a --end b`: the window's pages and frames, not the
    whole index."""
    selection = Selection.make(start=1.0, end=1.5, kinds=["position"])
    with CarlaRecording.open(folder / "town.nanover.zip") as local:
        expected = list(local.rows("position", selection))
    server.reset()
    with registry.open(server.url("town.nanover.zip")) as remote:
        found = list(remote.rows("position", selection))  # type: ignore[attr-defined]
        assert server.requests <= 4, server.log  # the tail, the window's pages, its frames
        assert remote.reader._index is None  # the whole index was not read
    assert expected and repr(found) == repr(expected)


def test_the_frames_of_a_time_window_by_url_come_in_one_range(
    server: RangeServer, folder: Path
) -> None:
    """`cat URL --start a --end b`: the tail, the window's page, then its frames' blocks in
    one range (read ahead no further than they reach), not a request a frame."""
    selection = Selection.make(start=2.0, end=4.0)
    with CarlaRecording.open(folder / "town.nanover.zip") as local:
        expected = [m.value.to_json() for m in local.messages(selection)]
    server.reset()
    with registry.open(server.url("town.nanover.zip")) as remote:
        found = [m.value.to_json() for m in remote.messages(selection)]
        assert server.requests <= 3, server.log
    assert len(found) > 10 and found == expected
