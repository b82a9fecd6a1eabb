"""A pbstream draws itself for `nanorec view`: `plot`'s map as a PNG over its extent, the
trajectories, submaps and constraints by kind, and the nodes reached at each record."""

from __future__ import annotations

import struct
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from nanorec import registry
from nanorec.contract import Viewable
from nanorec.converters.pbstream.plot import KINDS, constraint_kind
from nanorec.converters.pbstream.recording import PbstreamRecording
from nanorec.converters.pbstream.records import NODE
from nanorec.converters.pbstream.rosmap import assemble
from nanorec.converters.pbstream.view import MAX_NODES
from nanorec.errors import OutOfRangeError
from nanorec.outputs.layers import check_view
from tests.conftest import REALDATA, SAMPLES

SAMPLE = SAMPLES / "pbstream-small.pbstream"
LEGACY = SAMPLES / "pbstream-legacy-small.pbstream"


def layer(view: dict[str, Any], name: str) -> dict[str, Any]:
    (found,) = [lay for lay in view["layers"] if lay["name"] == name]
    return found  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def rec() -> Iterator[PbstreamRecording]:
    with registry.open(SAMPLE) as opened:
        assert isinstance(opened, PbstreamRecording)
        yield opened


def test_the_overview_is_plots_picture(rec: PbstreamRecording) -> None:
    assert isinstance(rec, Viewable)
    overview = rec.view_overview()
    check_view(overview, overview=True)
    grid = assemble(rec)
    picture = layer(overview, "map")
    assert picture["mime"] == "image/png" and picture["data"][:4] == b"\x89PNG"
    height, width = grid.image.shape
    assert struct.unpack(">II", picture["data"][16:24]) == (width, height)  # plot's size
    x0, y0 = grid.origin
    assert picture["extent"] == pytest.approx(
        [x0, y0, x0 + width * grid.resolution, y0 + height * grid.resolution]
    )
    paths = rec.trajectories()
    tracks = layer(overview, "trajectories")
    assert tracks["classes"] == [f"trajectory {tid}" for tid in paths]
    xy = np.concatenate([p.translation[:, :2] for p in paths.values()])
    assert np.array_equal(np.column_stack((tracks["x"], tracks["y"])), xy)
    assert tracks["starts"].tolist() == [0, len(paths[0])]
    constraints = layer(overview, "constraints")
    every = Counter(constraint_kind(c) for c in rec.pose_graph().constraints.tolist())
    drawn = Counter(constraints["classes"][c] for c in constraints["class"].tolist())
    assert constraints["classes"] == list(KINDS) and drawn == every
    assert len(constraints["x"]) == 2 * len(constraints["starts"])  # one segment each
    assert len(layer(overview, "submaps")["x"]) == 4
    bx0, _by0, bx1, by1 = overview["bounds"]
    assert bx0 <= picture["extent"][0] and bx1 >= picture["extent"][2]
    assert bx0 <= xy[:, 0].min() and by1 >= xy[:, 1].max()


def test_scenes_reach_the_nodes_record_by_record(rec: PbstreamRecording) -> None:
    numbers = rec.numbers_of(NODE)
    paths = rec.trajectories()
    where = {
        (tid, int(i)): tuple(p.translation[row, :2])
        for tid, p in paths.items()
        for row, i in enumerate(p.index.tolist())
    }
    for number in sorted({0, int(numbers[0]), int(numbers[5]), int(numbers[-1]), len(rec) - 1}):
        scene = rec.view_scene(number)
        check_view(scene, overview=False)
        reached = numbers[numbers <= number]
        assert len(layer(scene, "nodes")["x"]) == len(reached)
        now = layer(scene, "current node")
        if not len(reached):
            assert not len(now["x"]) and "follow" not in scene
            continue
        last = int(reached[-1])
        key = (int(rec.trajectory_ids[last]), int(rec.indexes[last]))
        assert (now["x"][0], now["y"][0]) == pytest.approx(where[key])
        assert scene["follow"] == pytest.approx(list(where[key]))
        assert now["classes"][now["class"][0]] == f"trajectory {key[0]}"


def test_out_of_range_and_negative(rec: PbstreamRecording) -> None:
    with pytest.raises(OutOfRangeError):
        rec.view_scene(len(rec))
    assert layer(rec.view_scene(-1), "nodes")["x"].tolist() == (
        layer(rec.view_scene(len(rec) - 1), "nodes")["x"].tolist()
    )


def test_a_legacy_state_views() -> None:
    with registry.open(LEGACY) as rec:
        check_view(rec.view_overview(), overview=True)
        for number in (0, len(rec) // 2, len(rec) - 1):
            check_view(rec.view_scene(number), overview=False)


def test_nodes_per_scene_are_bounded(rec: PbstreamRecording, monkeypatch: Any) -> None:
    from nanorec.converters.pbstream import view

    monkeypatch.setattr(view, "MAX_NODES", 7)
    scene = view.PbstreamView(rec).scene(len(rec) - 1)
    nodes = layer(scene, "nodes")
    assert len(nodes["x"]) == 7
    assert nodes["x"][-1] == layer(scene, "current node")["x"][0]  # the last one kept
    assert MAX_NODES > 7


@pytest.mark.realdata
@pytest.mark.parametrize(
    "path", sorted((REALDATA / "pbstream").glob("*.pbstream")), ids=lambda p: p.name
)
def test_real_states_view(path: Path) -> None:
    with registry.open(path) as rec:
        overview = rec.view_overview()
        check_view(overview, overview=True)
        for number in (0, len(rec) // 2, len(rec) - 1):
            check_view(rec.view_scene(number), overview=False)
