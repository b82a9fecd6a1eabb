"""`nanorec carla metrics LOG --metric MODULE`: scenario_runner's example metrics, unmodified.

Each example that needs no map is run twice: through the command (our `MetricsLog`, no
server) and as scenario_runner runs it (their `MetricsLog` on our info text); the outputs
must match. Metrics needing the map, and bad modules, end in one `nanorec:` line, exit 2.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from nanorec.cli import app
from nanorec.converters.carla.query import file_info
from tests.conftest import SAMPLES, carla_realdata, make_runner

from .metrics_reference import REFERENCE, load_reference, their_text
from .test_metrics import write_log

EXAMPLES = REFERENCE / "srunner" / "metrics" / "examples"


@pytest.fixture
def plots(monkeypatch: pytest.MonkeyPatch) -> list[tuple[list[Any], list[Any]]]:
    """What the metrics draw with matplotlib: the (x, y) of every `plt.plot`."""
    pyplot = pytest.importorskip("matplotlib.pyplot")
    drawn: list[tuple[list[Any], list[Any]]] = []
    monkeypatch.setattr(pyplot, "plot", lambda x, y, *a, **k: drawn.append((list(x), list(y))))
    monkeypatch.setattr(pyplot, "show", lambda *a, **k: None)
    return drawn


def run_theirs(monkeypatch: pytest.MonkeyPatch, log: Path, module: str, criteria: Any) -> None:
    """The metric as scenario_runner's metrics_manager runs it (town_map None)."""
    their_class, _ = load_reference(monkeypatch, prefer_real=False)
    example = __import__(f"srunner.metrics.examples.{module}", fromlist=["x"])
    metric = next(
        v
        for v in vars(example).values()
        if isinstance(v, type) and v.__module__ == example.__name__
    )
    metric(None, their_class(their_text(file_info(log, show_all=True))), criteria)


def test_distance_between_vehicles(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, plots: list[Any]
) -> None:
    log = write_log(tmp_path / "run.log", collide=False)
    result = make_runner().invoke(
        app,
        ["carla", "metrics", str(log), "--metric", str(EXAMPLES / "distance_between_vehicles.py")],
    )
    assert result.exit_code == 0, result.stderr
    ours = plots.pop()
    run_theirs(monkeypatch, log, "distance_between_vehicles", None)
    assert ours == plots.pop()
    assert ours[0] == [1]  # alive together in frames 1-2: range(1, 2)


def test_criteria_filter(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = write_log(tmp_path / "run.log", collide=False)
    criteria = {
        "CollisionTest": {"test_status": "SUCCESS", "actual_value": 0, "success_value": 0},
        "RouteCompletionTest": {"test_status": "FAILURE", "actual_value": 80, "success_value": 100},
    }
    (tmp_path / "criteria.json").write_text(json.dumps(criteria))
    results = Path("srunner/metrics/data/CriteriaFilter_results.json")  # where it writes
    monkeypatch.chdir(tmp_path)
    results.parent.mkdir(parents=True)
    result = make_runner().invoke(
        app,
        [
            "carla",
            "metrics",
            str(log),
            "--metric",
            str(EXAMPLES / "criteria_filter.py"),
            "--criteria",
            "criteria.json",
        ],
    )
    assert result.exit_code == 0, result.stderr
    ours = results.read_text()
    os.remove(results)
    run_theirs(monkeypatch, log, "criteria_filter", criteria)
    assert ours == results.read_text()
    assert json.loads(ours)["RouteCompletionTest"]["test_status"] == "FAILURE"


def test_a_metric_printing_from_a_real_log(tmp_path: Path) -> None:
    real = [p for p in carla_realdata() if p.name == "scenario_runner_DistanceToLaneCenter.log"]
    if not real:
        pytest.skip("../shared/realdata/carla is absent")
    module = tmp_path / "ego_speed.py"
    module.write_text(
        "from srunner.metrics.examples.basic_metric import BasicMetric\n\n\n"
        "class EgoSpeed(BasicMetric):\n"
        "    def _create_metric(self, town_map, log, criteria):\n"
        "        ego = log.get_ego_vehicle_id()\n"
        "        first, last = log.get_actor_alive_frames(ego)\n"
        "        speeds = [log.get_actor_velocity(ego, f) for f in range(first, last + 1)]\n"
        "        top = max((v.x ** 2 + v.y ** 2) ** 0.5 for v in speeds if v is not None)\n"
        "        print(f'ego {ego} frames {first}-{last} top speed {top:.2f} m/s')\n"
    )
    result = make_runner().invoke(app, ["carla", "metrics", str(real[0]), "--metric", str(module)])
    assert result.exit_code == 0, result.stderr
    assert result.stdout.startswith("ego ") and "top speed" in result.stdout


def test_the_example_metric_by_module_name() -> None:
    """The README's example: a dotted module name, on a bundled sample."""
    sample = str(SAMPLES / "carla-0.9.16-town03.log")
    module = "nanorec.converters.carla.metrics_example"
    result = make_runner().invoke(app, ["carla", "metrics", sample, "--metric", module])
    assert result.exit_code == 0, result.stderr
    assert result.stdout.startswith("ego 6: frames 1-300, ") and "m driven" in result.stdout
    result = make_runner().invoke(
        app, ["carla", "metrics", sample, "--metric", module, "--class", "Nope"]
    )
    assert result.exit_code == 2 and "expected class Nope, found 0" in result.stderr


def test_a_metric_needing_the_map_says_so(tmp_path: Path) -> None:
    log = write_log(tmp_path / "run.log")
    result = make_runner().invoke(
        app,
        ["carla", "metrics", str(log), "--metric", str(EXAMPLES.parent / "x" / "none.py")],
    )
    assert result.exit_code == 2 and result.stderr.startswith("nanorec: --metric ")
    lane = tmp_path / "lane.py"
    lane.write_text(
        "from srunner.metrics.examples.basic_metric import BasicMetric\n\n\n"
        "class Lane(BasicMetric):\n"
        "    def _create_metric(self, town_map, log, criteria):\n"
        "        town_map.get_waypoint(log.get_actor_transform(10, 1).location)\n"
    )
    result = make_runner().invoke(app, ["carla", "metrics", str(log), "--metric", str(lane)])
    assert result.exit_code == 2
    assert result.stderr.startswith("nanorec: Lane needs the town map")
    assert result.stderr.count("\n") == 1
    broken = tmp_path / "broken.py"
    broken.write_text("import no_such_module_here\n")
    result = make_runner().invoke(app, ["carla", "metrics", str(log), "--metric", str(broken)])
    assert result.exit_code == 2 and "cannot import it" in result.stderr
