"""`nanorec plot x.pbstream`: trajectories (optimised node poses), submap origins and
constraints coloured by kind (intra-submap grey; inter-submap red within a trajectory, a
loop closure; purple across trajectories) over the assembled 2D map, in metres. Needs
matplotlib (the plot extra). `PlotReport` says what was drawn, in numbers and one line."""

from __future__ import annotations

import io
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nanorec.archive.atomic import atomic_output
from nanorec.errors import EmptySelectionError, UsageError
from nanorec.selection import Selection

from .records import NODE, SUBMAP
from .tables import in_range

if TYPE_CHECKING:
    from .recording import PbstreamRecording


Key = tuple[int, int]
#: Constraint kinds as drawn: (name, colour, line width).
KINDS = {
    "intra-submap": ("0.6", 0.3),
    "inter-submap": ("red", 0.6),
    "inter-trajectory": ("#9400d3", 0.8),
}


@dataclass(frozen=True)
class PlotReport:
    """What `plot` drew: the nodes per trajectory, the submaps, the constraints per kind
    (`KINDS`), the extent (x min, x max, y min, y max, m) of the trajectories drawn, and
    whether the map was under them."""

    output: Path
    size: int
    nodes: dict[int, int] = field(default_factory=dict)
    submaps: int = 0
    constraints: dict[str, int] = field(default_factory=dict)
    bounds: tuple[float, float, float, float] | None = None
    map: bool = False

    def line(self) -> str:
        """The one line `nanorec plot` prints."""
        paths = ", ".join(f"{tid}: {n}" for tid, n in sorted(self.nodes.items()))
        kinds = ", ".join(f"{n} {kind}" for kind, n in self.constraints.items() if n)
        return (
            f"{self.output}: {self.size} bytes; {len(self.nodes)} trajectories (nodes "
            f"{paths or 'none'}), {self.submaps} submaps, {sum(self.constraints.values())} "
            f"constraints{f' ({kinds})' if kinds else ''}" + (", over the map" if self.map else "")
        )


def plotted(
    rec: PbstreamRecording, selection: Selection, trajectories: Iterable[int] | None = None
) -> tuple[set[Key] | None, set[Key] | None]:
    """The (trajectory, index) of the nodes and of the submaps a selection draws (None: all).

    Nodes by their own time (a time range) or their record's number (a message range);
    submaps by their record's number, or, with a time range, those a constraint ties to a
    drawn node. `--type` keeps nodes only with `node`, submaps only with `submap`."""
    chosen = None if trajectories is None else set(trajectories)
    if selection.everything and chosen is None:
        return None, None
    graph = rec.pose_graph()
    nodes = {(tid, i) for tid, poses in rec.trajectories().items() for i in poses.index.tolist()}
    submaps = {(tid, i) for tid, poses in graph.submaps.items() for i in poses.index.tolist()}
    if selection.first is not None or selection.stop is not None:
        lo, hi = selection.span(rec.reader.index)
        nodes &= _records(rec, NODE, lo, hi)
        submaps &= _records(rec, SUBMAP, lo, hi)
    elif selection.start is not None or selection.end is not None:
        inside = in_range(rec, selection)
        nodes = {
            (tid, i)
            for tid, poses in rec.trajectories().items()
            for i, ticks in zip(poses.index.tolist(), poses.timestamp.tolist(), strict=True)
            if inside(ticks)
        }
        ties = graph.constraints.tolist()
        submaps &= {(int(c[0]), int(c[1])) for c in ties if (int(c[2]), int(c[3])) in nodes}
    if selection.kinds is not None:
        nodes = nodes if NODE in selection.kinds else set()
        submaps = submaps if SUBMAP in selection.kinds else set()
    if chosen is not None:
        nodes = {key for key in nodes if key[0] in chosen}
        submaps = {key for key in submaps if key[0] in chosen}
    return nodes, submaps


def _records(rec: PbstreamRecording, kind: str, lo: int, hi: int) -> set[Key]:
    numbers = rec.numbers_of(kind, Selection(first=lo, stop=hi)).tolist()
    return {(int(rec.trajectory_ids[n]), int(rec.indexes[n])) for n in numbers}


def plot(
    rec: PbstreamRecording,
    output: Path,
    *,
    overwrite: bool = False,
    draw_map: bool = True,
    selection: Selection | None = None,
    trajectories: Iterable[int] | None = None,
    dpi: int = 120,
) -> PlotReport:
    """Draw `rec` into `output` (.png, .svg, .pdf); returns what it drew. With a selection,
    only the nodes and submaps it picks (`plotted`), over the whole map."""
    keep_nodes, keep_submaps = plotted(rec, selection or Selection(), trajectories)
    if keep_nodes is not None and not keep_nodes and not keep_submaps:
        raise EmptySelectionError(
            "the selection draws nothing: no node or submap of the pose graph is in it"
        )
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise UsageError("plot needs matplotlib: pip install 'nanorec[plot]'") from None
    suffix = output.suffix.lower().lstrip(".")
    if suffix not in ("png", "svg", "pdf"):
        raise UsageError(f"plot writes .png, .svg or .pdf, not {output.name!r}")
    figure, axes = plt.subplots(figsize=(9, 9))
    try:
        mapped = _draw_map(rec, axes) if draw_map else False
        paths = rec.trajectories()
        nodes: dict[Key, tuple[float, float]] = {}
        counts: dict[int, int] = {}
        for tid, poses in paths.items():
            mask, picked = _kept(tid, poses.index.tolist(), keep_nodes)
            xy = poses.translation[:, :2][mask]
            if len(xy):
                axes.plot(xy[:, 0], xy[:, 1], lw=1.2, label=f"trajectory {tid} ({poses.source})")
                nodes.update({key: (x, y) for key, (x, y) in zip(picked, xy.tolist(), strict=True)})
                counts[tid] = len(xy)
        submaps: dict[Key, tuple[float, float]] = {}
        for tid, poses in rec.pose_graph().submaps.items():
            mask, picked = _kept(tid, poses.index.tolist(), keep_submaps)
            xy = poses.translation[:, :2][mask]
            if len(xy):
                axes.scatter(xy[:, 0], xy[:, 1], marker="s", s=18, zorder=3, label=f"submaps {tid}")
                submaps.update(
                    {key: (x, y) for key, (x, y) in zip(picked, xy.tolist(), strict=True)}
                )
        drawn = _draw_constraints(axes, rec, submaps, nodes)
        axes.set_aspect("equal")
        axes.set_xlabel("x (m)")
        axes.set_ylabel("y (m)")
        axes.set_title(f"{rec.summary_name()} (pbstream v{rec.format_version})")
        if nodes or submaps:
            axes.legend(loc="best", fontsize="small")
        buffer = io.BytesIO()
        figure.savefig(buffer, format=suffix, dpi=dpi)
    finally:
        plt.close(figure)
    data = buffer.getvalue()
    with atomic_output(output, overwrite=overwrite) as stream:
        stream.write(data)
    points = list(nodes.values())
    bounds = None
    if points:
        xs, ys = [p[0] for p in points], [p[1] for p in points]
        bounds = (min(xs), max(xs), min(ys), max(ys))
    return PlotReport(output, len(data), counts, len(submaps), drawn, bounds, mapped)


def constraint_kind(c: tuple[Any, ...]) -> str:
    """A constraint's kind (`KINDS`) from its row (CONSTRAINT_DTYPE, as a tuple):
    intra-submap, inter-submap within a trajectory, or inter-submap across trajectories."""
    if c[4] == 0:
        return "intra-submap"
    return "inter-submap" if c[0] == c[2] else "inter-trajectory"


def _draw_constraints(
    axes: object,
    rec: PbstreamRecording,
    submaps: dict[Key, tuple[float, float]],
    nodes: dict[Key, tuple[float, float]],
) -> dict[str, int]:
    """Each constraint between a drawn submap and a drawn node, coloured by kind (one
    legend entry per kind, with its count); returns the count per kind."""
    from matplotlib.collections import LineCollection

    segments: dict[str, list[Any]] = {kind: [] for kind in KINDS}
    for c in rec.pose_graph().constraints.tolist():
        submap, node = (int(c[0]), int(c[1])), (int(c[2]), int(c[3]))
        if submap in submaps and node in nodes:
            segments[constraint_kind(c)].append((submaps[submap], nodes[node]))
    for kind, lines in segments.items():
        if lines:
            colour, width = KINDS[kind]
            axes.add_collection(  # type: ignore[attr-defined]
                LineCollection(
                    lines,
                    colors=colour,
                    linewidths=width,
                    alpha=0.6,
                    label=f"{kind} constraints ({len(lines)})",
                )
            )
    return {kind: len(lines) for kind, lines in segments.items()}


def _kept(tid: int, indexes: list[int], keep: set[Key] | None) -> tuple[list[bool], list[Key]]:
    """Which of a trajectory's poses (by index) to draw, and their keys."""
    mask = [keep is None or (tid, i) in keep for i in indexes]
    return mask, [(tid, i) for i, kept in zip(indexes, mask, strict=True) if kept]


def _draw_map(rec: PbstreamRecording, axes: object) -> bool:
    """The assembled occupancy grid under the paths; False when there is none (3D)."""
    from .rosmap import assemble

    try:
        grid = assemble(rec)
    except UsageError:
        return False  # no 2D submap: paths only
    height, width = grid.image.shape
    x0, y0 = grid.origin
    extent = (x0, x0 + width * grid.resolution, y0, y0 + height * grid.resolution)
    axes.imshow(grid.image, cmap="gray", vmin=0, vmax=255, extent=extent, origin="upper")  # type: ignore[attr-defined]
    return True


__all__ = ["KINDS", "PlotReport", "constraint_kind", "plot", "plotted"]
