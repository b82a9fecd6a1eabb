"""The pbstream commands on the one surface of the CLI (issue 19): the common options of each
verb, by the core's spellings and with the core's meaning; an empty selection is exit 2 and
one line, never an empty output with exit 0."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nanorec import registry
from nanorec.cli import _register, app
from nanorec.converters.pbstream.generate import Plan, generate
from nanorec.converters.pbstream.plot import plotted
from nanorec.converters.pbstream.recording import PbstreamRecording
from nanorec.selection import Selection
from tests.conftest import SAMPLES, make_runner

SAMPLE = SAMPLES / "pbstream-small.pbstream"
_runner = make_runner()


def _run(*args: object) -> tuple[int, str, str]:
    _register()
    result = _runner.invoke(app, [str(a) for a in args])
    assert isinstance(result.exception, SystemExit | None), (args, result.exception)
    return result.exit_code, result.stdout, result.stderr


def _refused(*args: object, says: str) -> None:
    code, _, err = _run(*args)
    assert code == 2 and err.startswith("nanorec: ") and err.count("\n") == 1, (args, err)
    assert says in err, (args, err)


@pytest.fixture(scope="module")
def one_trajectory(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("one")
    return generate(folder / "one.pbstream", Plan(trajectories=1, nodes=20, grid_cells=30))


def test_export_takes_a_message_range(tmp_path: Path) -> None:
    out = tmp_path / "cut.pbstream"
    code, _, err = _run("export", SAMPLE, "-o", out, "--messages", "0:5")
    assert code == 0, err
    with registry.open(out) as cut:
        kinds = [cut.kind_of(i) for i in range(len(cut))]
    # header, pose graph and builder options always; then records 3 and 4 (two submaps)
    assert kinds == ["header", "pose_graph", "all_trajectory_builder_options", "submap", "submap"]


def test_cat_takes_the_topic_alias_and_several_kinds() -> None:
    code, out, err = _run("cat", SAMPLE, "--topic", "trajectory", "--topic", "constraint")
    assert code == 0, err
    rows = [json.loads(line) for line in out.splitlines()]
    assert sum("node_index" in r and "tag" not in r for r in rows) == 80
    assert any(r.get("tag") == "intra" for r in rows)
    _refused("cat", SAMPLE, "-t", "trajectory", "-t", "node", "-F", "csv", says="one --type")


def test_cat_lines_are_the_generic_message_lines() -> None:
    code, out, err = _run("cat", SAMPLE, "--messages", "0:2")
    assert code == 0, err
    lines = [json.loads(line) for line in out.splitlines()]
    assert [sorted(line) for line in lines] == [["kind", "number", "time", "value"]] * 2
    assert [line["kind"] for line in lines] == ["header", "pose_graph"]
    code, out, _ = _run("play", SAMPLE, "-i", "--messages", "0:2")
    assert code == 0 and len(out.splitlines()) == 2
    code, out, _ = _run("cat", SAMPLE, "--type", "header")  # a record kind with no table
    assert code == 0 and [json.loads(line)["kind"] for line in out.splitlines()] == ["header"]


def test_an_absent_trajectory_selects_nothing(one_trajectory: Path, tmp_path: Path) -> None:
    out = tmp_path / "t1.pbstream"
    says = "--trajectory 1 selects nothing: trajectories are 0"
    _refused("export", one_trajectory, "-o", out, "--trajectory", "1", says=says)
    _refused("cat", one_trajectory, "-t", "trajectory", "-F", "tum", "--trajectory", "1", says=says)
    _refused("plot", one_trajectory, "-o", tmp_path / "p.png", "--trajectory", "1", says=says)
    _refused("export", one_trajectory, "-o", out, "--nodes", "500:600", says="--nodes 500:600")
    assert not list(tmp_path.iterdir())


def test_empty_selections_are_refused(tmp_path: Path) -> None:
    _refused("cat", SAMPLE, "--start", "1000", says="--start 1000 selects no")
    _refused("cat", SAMPLE, "-t", "trajectory", "--start", "44.6", says="--type trajectory")
    _refused("cat", SAMPLE, "-t", "landmark_poses", "--trajectory", "9", says="--trajectory 9")
    _refused("plot", SAMPLE, "-o", tmp_path / "p.png", "-t", "imu_data", says="draws nothing")
    assert not list(tmp_path.iterdir())


def test_formats_are_checked(tmp_path: Path) -> None:
    _refused("cat", SAMPLE, "-F", "bogus", says="--format takes ndjson, csv, tum")
    says = "--format takes native, parquet, mcap, ros-map"
    _refused("export", SAMPLE, "-o", tmp_path / "x", "-F", "bogus", says=says)
    _refused("export", SAMPLE, "-o", tmp_path / "x", "-F", "mcap", "--trajectory", "1", says="")
    _refused("export", SAMPLE, "-o", tmp_path / "m", "-F", "ros-map", "--start", "1", says="")
    assert not list(tmp_path.iterdir())


def test_plot_draws_the_selected_window(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    with registry.open(SAMPLE) as rec:
        assert isinstance(rec, PbstreamRecording)
        every_node, _ = plotted(rec, Selection())
        assert every_node is None
        nodes, submaps = plotted(rec, Selection.make(start=0, end=19.5))
        assert nodes == {(0, i) for i in range(40)}
        assert submaps is not None and {t for t, _ in submaps} == {0}
        nodes, submaps = plotted(rec, Selection.make(messages="3:5"))
        assert nodes == set() and submaps == {(0, 0), (0, 1)}
    code, out, err = _run("plot", SAMPLE, "-o", tmp_path / "w.png", "--start", "0", "--end", "1")
    assert code == 0 and out.count("\n") == 1 and " bytes; 1 trajectories (nodes 0: " in out, err
