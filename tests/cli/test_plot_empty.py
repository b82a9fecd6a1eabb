"""`plot` with a selection that selects nothing (issue 34, item 14) is the one-line
`EmptySelectionError` (exit 2, no picture) for every format, as for every other verb: a
`--type` of a kind or topic the recording lacks, or a `--start` past its end. CARLA's
`--type walker` on a recording without walkers drew its traffic lights and exited 0."""

from __future__ import annotations

from pathlib import Path

import pytest

from nanorec.cli import _register, app
from tests.conftest import SAMPLES, make_runner
from tests.container.helpers import sample_messages, write_archive

pytest.importorskip("matplotlib")
runner = make_runner()

#: (recording, a --type it has none of)
SOURCES = [
    ("carla-ue5-0.10-town10hd.log", "bike"),
    ("rosbag-robot.bag", "/no/such/topic"),
    ("ros2-robot", "/no/such/topic"),
    ("pbstream-small.pbstream", "no_such_kind"),
    ("plain", "no_such_kind"),
]


def _source(name: str, tmp_path: Path) -> Path:
    if name == "plain":
        return write_archive(tmp_path / "plain.nanover.zip", sample_messages(5))
    return SAMPLES / name


def _assert_one_line_refusal(args: list[str], picture: Path) -> None:
    _register()
    result = runner.invoke(app, ["plot", *args, "-o", str(picture)])
    assert result.exit_code == 2, (result.stdout, result.stderr)
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("nanorec: "), result.stderr
    assert "select" in lines[0], lines[0]
    assert not picture.exists()


@pytest.mark.parametrize(("name", "absent"), SOURCES, ids=[s[0] for s in SOURCES])
def test_a_type_the_recording_lacks(tmp_path: Path, name: str, absent: str) -> None:
    source = _source(name, tmp_path)
    _assert_one_line_refusal([str(source), "--type", absent], tmp_path / "x.png")


@pytest.mark.parametrize(("name", "absent"), SOURCES, ids=[s[0] for s in SOURCES])
def test_a_start_past_the_end(tmp_path: Path, name: str, absent: str) -> None:
    source = _source(name, tmp_path)
    _assert_one_line_refusal([str(source), "--start", "1e7"], tmp_path / "x.png")


def test_carla_actor_of_another_kind(tmp_path: Path) -> None:
    """`--actor` of a vehicle with `--type walker` selects no actor either."""
    import nanorec
    from nanorec.converters.carla.plot_data import actor_kinds

    source = SAMPLES / "carla-ue5-0.10-town10hd.log"
    with nanorec.open(source) as rec:
        car = min(a for a, kind in actor_kinds(rec).items() if kind == "vehicle")
    args = [str(source), "--actor", str(car), "--type", "walker"]
    _assert_one_line_refusal(args, tmp_path / "y.png")


@pytest.mark.realdata
def test_real_carla_recordings_without_walkers(realdata_dir: Path, tmp_path: Path) -> None:
    """The trial's case: real recordings with vehicles and traffic lights, no walker."""
    import nanorec
    from nanorec.converters.carla.plot_data import actor_kinds

    checked = 0
    for source in sorted((realdata_dir / "carla").glob("*.log"))[:2]:
        with nanorec.open(source) as rec:
            if "walker" in actor_kinds(rec).values():
                continue
        _assert_one_line_refusal([str(source), "--type", "walker"], tmp_path / "z.png")
        checked += 1
    if not checked:
        pytest.skip("no real CARLA recording without walkers")
