"""`nanorec carla metrics LOG --metric MODULE`: a scenario_runner metric without a server.

scenario_runner's `metrics_manager.py` starts a client for two things: the recorder text
its `MetricsLog` parses and the town map. Here the log is `metrics.MetricsLog` over the
recording, and the map is None: metrics that use only the log run unmodified. The metric
module is loaded as scenario_runner would (a `BasicMetric` subclass); when `srunner` is
not importable, a one-class stand-in for `srunner.metrics.examples.basic_metric` is put in
its place, so the module imports as written.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import json
import sys
import types
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Protocol, TypeGuard

import typer

from nanorec.cli import run
from nanorec.cli.inputs import check_input
from nanorec.errors import NanorecError, UsageError
from nanorec.untyped import Json

from .cli import FamilyOption, app, check_family

if TYPE_CHECKING:
    from .metrics import MetricsLog
    from .metrics_types import CarlaObject

_BASIC = "srunner.metrics.examples.basic_metric"


class Metric(Protocol):
    """A scenario_runner metric: a class whose `_create_metric` reads the log (and the
    town map, None here, and the criteria JSON)."""

    def _create_metric(self, town_map: CarlaObject, log: MetricsLog, criteria: Json) -> None: ...


class BasicMetric:
    """scenario_runner's `BasicMetric`: the constructor runs `_create_metric`."""

    def __init__(self, town_map: CarlaObject, log: MetricsLog, criteria: Json = None) -> None:
        self._create_metric(town_map, log, criteria)

    def _create_metric(self, town_map: CarlaObject, log: MetricsLog, criteria: Json) -> None:
        raise NotImplementedError("This function should be re-implemented by all metrics")


def _provide_basic_metric() -> None:
    """Make `from srunner.metrics.examples.basic_metric import BasicMetric` work."""
    try:
        importlib.import_module(_BASIC)
        return
    except ImportError:
        pass
    parts = _BASIC.split(".")
    for depth in range(1, len(parts) + 1):
        name = ".".join(parts[:depth])
        if name not in sys.modules:
            module = types.ModuleType(name)
            module.__path__ = []  # a package, so the next level imports
            sys.modules[name] = module
    sys.modules[_BASIC].BasicMetric = BasicMetric  # type: ignore[attr-defined]


def _is_metric(value: object) -> TypeGuard[type[Metric]]:
    """Whether `value` is a class defining `_create_metric` itself."""
    return inspect.isclass(value) and "_create_metric" in vars(value)


def load_metric(spec: str, class_name: str | None = None) -> type[Metric]:
    """The metric class in `spec` (a .py file or a dotted module): `class_name`, or the one
    class defining `_create_metric` there. Raises UsageError when there is none or several."""
    _provide_basic_metric()
    try:
        if spec.endswith(".py"):
            path = Path(spec)
            if not path.is_file():
                raise UsageError(f"--metric {spec}: no such file")
            found = importlib.util.spec_from_file_location(f"nanorec_metric_{path.stem}", path)
            if found is None or found.loader is None:
                raise UsageError(f"--metric {spec}: not a Python module")
            module = importlib.util.module_from_spec(found)
            sys.modules[found.name] = module
            found.loader.exec_module(module)
        else:
            module = importlib.import_module(spec)
    except NanorecError:
        raise
    except Exception as error:  # the metric's own import failed: say so in one line
        raise UsageError(
            f"--metric {spec}: cannot import it: {type(error).__name__}: {error}"
        ) from None
    classes = [
        value
        for name, value in vars(module).items()
        if _is_metric(value)
        and value.__module__ == module.__name__
        and (class_name is None or name == class_name)
    ]
    if len(classes) != 1:
        what = f"class {class_name}" if class_name else "one class with _create_metric"
        raise UsageError(f"--metric {spec}: expected {what}, found {len(classes)}")
    return classes[0]


def run_metric(metric: type[Metric], log: MetricsLog, criteria: Json) -> None:
    """`metric._create_metric(None, log, criteria)` as BasicMetric's constructor calls it."""
    instance = object.__new__(metric)
    try:
        instance._create_metric(None, log, criteria)
    except AttributeError as error:
        if "'NoneType'" in str(error):
            raise UsageError(
                f"{metric.__name__} needs the town map, which only a CARLA server has "
                f"(town_map is None here): {error}"
            ) from None
        raise UsageError(f"{metric.__name__} failed: AttributeError: {error}") from None
    except NanorecError:
        raise
    except Exception as error:
        raise UsageError(f"{metric.__name__} failed: {type(error).__name__}: {error}") from None


@app.command("metrics")
def metrics_command(
    file: Annotated[Path, typer.Argument(help="CARLA recorder file (.log/.rec) or its archive.")],
    metric: Annotated[
        str,
        typer.Option(
            "--metric",
            help="The scenario_runner metric: a .py file or a dotted module name.",
            metavar="MODULE",
        ),
    ],
    criteria: Annotated[
        Path | None,
        typer.Option("--criteria", help="scenario_runner's criteria JSON file.", metavar="JSON"),
    ] = None,
    class_name: Annotated[
        str | None,
        typer.Option("--class", help="The metric class, when the module has several."),
    ] = None,
    family: FamilyOption = None,
) -> None:
    """Run a scenario_runner metric on a recording, without a CARLA server.

    The metric's _create_metric(town_map, log, criteria) runs unmodified with log a
    MetricsLog over the recording (frames 1-based, as scenario_runner's) and town_map None:
    metrics that need the map stop with one line saying so. What it prints is the output.

    Example: nanorec carla metrics run.log --metric distance_between_vehicles.py
    """
    from .metrics import MetricsLog
    from .recording import CarlaRecording

    def action() -> None:
        check_family(family)
        check_input(file)
        criteria_dict = None
        if criteria is not None:
            check_input(criteria)
            try:
                criteria_dict = json.loads(criteria.read_text())
            except ValueError as error:
                raise UsageError(f"--criteria {criteria}: not JSON: {error}") from None
        metric_class = load_metric(metric, class_name)
        with CarlaRecording.open(file, family=family) as rec, MetricsLog(rec) as log:
            run_metric(metric_class, log, criteria_dict)

    run(action)
