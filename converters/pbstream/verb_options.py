"""What pbstream adds to the core's verbs, declared without importing the format (the core
builds the verbs' command lines from it: `nanorec.cli.hooks`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from nanorec.cli.hooks import option

Trajectory = Annotated[
    list[int] | None,
    option("--trajectory", help="Only this trajectory id (repeatable).", metavar="ID"),
]


@dataclass(frozen=True)
class PbstreamCatOptions:
    """`nanorec cat map.pbstream`: some trajectories."""

    trajectory: Trajectory = None


@dataclass(frozen=True)
class PbstreamPlotOptions:
    """`nanorec plot map.pbstream`: some trajectories, with or without the map."""

    trajectory: Trajectory = None
    no_map: Annotated[
        bool, option("--no-map", help="Do not draw the occupancy grid under the paths.")
    ] = False


@dataclass(frozen=True)
class PbstreamExportOptions:
    """`nanorec export map.pbstream`: a subset of the stream, the ROS map's resolution."""

    resolution: Annotated[
        float | None,
        option("--resolution", help="ros-map: metres per pixel (default: the submaps')."),
    ] = None
    trajectory: Trajectory = None
    nodes: Annotated[
        str | None, option("--nodes", help="Only node indexes A:B (B excluded).", metavar="A:B")
    ] = None


VERB_OPTIONS: dict[str, type] = {
    "cat": PbstreamCatOptions,
    "plot": PbstreamPlotOptions,
    "export": PbstreamExportOptions,
}
