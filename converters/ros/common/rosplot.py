"""`nanorec plot` of a ROS bag, ROS1 or ROS 2: what its standard messages mean, in one picture.

From the top: the `NavSatFix` tracks (longitude, latitude, equirectangular: a metre is as
long both ways) and the paths of odometry, poses and `tf` (one panel per frame, in metres),
then the time series (`Imu`, and every topic of a few numbers), a contact sheet of a few
frames per `Image` topic, and the message rates of every topic as one heat strip. What is
drawn comes from `rosplot_data`; the report says it in numbers and in one line. In the core
so that both bag converters draw the same picture through the `RosMessages` protocol, each
keeping only a thin `plot` command.
"""

from __future__ import annotations

import io
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path as FilePath
from typing import Any, TypeAlias

import numpy as np

from nanorec.archive.atomic import atomic_output
from nanorec.errors import UnsupportedError, UsageError
from nanorec.outputs.timeline import MAX_KINDS, draw_rates
from nanorec.selection import Selection

from .rosplot_data import (
    Contents,
    Frame,
    Path,
    RosMessages,
    Series,
    Track,
    contents,
)

#: Panels of each sort drawn at most (the first ones, by topic).
MAX_MAPS = 3
MAX_SERIES = 8
MAX_SHEETS = 3

Box = tuple[float, float, float, float]  # x_min, x_max, y_min, y_max

#: matplotlib's objects (matplotlib is optional and loosely typed): a panel's axes, the
#: figure, and a cell of its grid (`SubplotSpec`).
Axes: TypeAlias = Any
Figure: TypeAlias = Any
GridCell: TypeAlias = Any


@dataclass(frozen=True)
class RosPlotReport:
    """What `plot` drew. `tracks`: topic -> (lon min, lon max, lat min, lat max) of the
    line drawn; `paths`: label -> (x min, x max, y min, y max); `views`: each map panel's
    title -> its axes' limits; `series`: the time-series panels; `images`: topic -> frames;
    `rates`: the topics of the heat strip; `undecoded`: messages left out, not decoding."""

    output: FilePath
    size: int
    tracks: dict[str, Box] = field(default_factory=dict)
    paths: dict[str, Box] = field(default_factory=dict)
    views: dict[str, Box] = field(default_factory=dict)
    series: tuple[str, ...] = ()
    images: dict[str, int] = field(default_factory=dict)
    rates: tuple[str, ...] = ()
    panels: int = 0
    undecoded: int = 0

    def line(self) -> str:
        """The one line `nanorec plot` prints."""

        def some(names: Iterable[str]) -> str:
            names = list(names)
            return f" ({', '.join(names[:4])}{', ...' if len(names) > 4 else ''})" if names else ""

        frames = sum(self.images.values())
        return (
            f"{self.output}: {self.size} bytes; {len(self.tracks)} GPS tracks{some(self.tracks)}, "
            f"{len(self.paths)} paths{some(self.paths)}, {len(self.series)} time series"
            f"{some(self.series)}, {frames} images{some(self.images)}, message rates of "
            f"{len(self.rates)} topics; {self.panels} panels"
            + (f"; {self.undecoded} messages did not decode" if self.undecoded else "")
        )


def plot(
    rec: RosMessages,
    output: FilePath,
    *,
    selection: Selection | None = None,
    overwrite: bool = False,
    dpi: int = 100,
    title: str | None = None,
) -> RosPlotReport:
    """Draw the selected messages of `rec` into `output` (.png, .svg, .pdf). Raises
    `EmptySelectionError` for a selection of nothing, `UnsupportedError` without
    matplotlib, `OutputExistsError` when `output` exists and not `overwrite`. `title` heads
    the picture (default: the archive's name; a converted folder's would be a cache's)."""
    selection = selection or Selection()
    index = rec.reader.index
    numbers = selection.chosen(index) if len(index) else np.zeros(0, np.int64)
    try:  # after the selection: one rule for a selection of nothing, with or without it
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise UnsupportedError("plot needs matplotlib: pip install 'nanorec[plot]'") from None
    topics = [t for t in rec.table_kinds() if selection.kinds is None or t in selection.kinds]
    found = contents(rec, np.asarray(numbers, dtype=np.int64), topics)
    maps = _map_panels(found)[:MAX_MAPS]
    series = found.series[:MAX_SERIES]
    sheets = list(found.images.items())[:MAX_SHEETS]
    strip_rows = min(max(len(topics), 1), MAX_KINDS)
    heights = ([4.5] if maps else []) + [1.7] * len(series) + [1.9] * len(sheets)
    heights.append(0.9 + 0.2 * strip_rows)
    figure = Figure(figsize=(10, sum(heights) + 0.5), dpi=dpi, layout="constrained")
    canvas = FigureCanvasAgg(figure)
    fmt = output.suffix.lower().lstrip(".") or "png"
    if fmt not in canvas.get_supported_filetypes():
        raise UsageError(f"cannot write {fmt!r} pictures; use .png, .svg or .pdf")
    grid = figure.add_gridspec(len(heights), 1, height_ratios=heights)
    row = 0
    tracks: dict[str, Box] = {}
    paths: dict[str, Box] = {}
    views: dict[str, Box] = {}
    if maps:
        cells = grid[row].subgridspec(1, len(maps))
        for i, (heading, items) in enumerate(maps):
            axes = figure.add_subplot(cells[0, i])
            drawn = _draw_map(axes, heading, items)
            (tracks if isinstance(items[0], Track) else paths).update(drawn)
            x0, x1 = axes.get_xlim()
            y0, y1 = axes.get_ylim()
            views[heading] = (float(x0), float(x1), float(y0), float(y1))
        row += 1
    for panel in series:
        _draw_series(figure.add_subplot(grid[row]), panel)
        row += 1
    for topic, frames in sheets:
        _draw_sheet(figure, grid[row], topic, frames)
        row += 1
    chosen = np.zeros(len(index), dtype=bool)
    chosen[numbers] = True
    rates = draw_rates(figure.add_subplot(grid[row]), rec, chosen, topics)
    if title is None:
        title = rec.reader.path.name.removesuffix(".nanover.zip")
    figure.suptitle(title, fontsize=10)
    buffer = io.BytesIO()
    figure.savefig(buffer, format=fmt, dpi=dpi)
    data = buffer.getvalue()
    with atomic_output(output, overwrite=overwrite) as stream:
        stream.write(data)
    return RosPlotReport(
        output,
        len(data),
        tracks=tracks,
        paths=paths,
        views=views,
        series=tuple(panel.title for panel in series),
        images={topic: len(frames) for topic, frames in sheets},
        rates=tuple(rates),
        panels=row + 1 + max(len(maps) - 1, 0),
        undecoded=found.undecoded,
    )


def _map_panels(found: Contents) -> list[tuple[str, list[Track] | list[Path]]]:
    """(title, items): the GPS tracks together, then the paths of each frame."""
    panels: list[tuple[str, list[Track] | list[Path]]] = []
    if found.tracks:
        panels.append(("GPS track (longitude, latitude)", list(found.tracks)))
    frames: dict[str, list[Path]] = {}
    for path in found.paths:
        frames.setdefault(path.frame, []).append(path)
    panels.extend(
        (f"paths in frame {frame}" if frame else "paths (no frame given)", items)
        for frame, items in frames.items()
    )
    return panels


def _draw_map(axes: Axes, title: str, items: list[Track] | list[Path]) -> dict[str, Box]:
    """Tracks or paths with their start (o) and end (x); returns each one's drawn extent."""
    drawn: dict[str, Box] = {}
    latitudes: list[float] = []
    for item in items:
        if isinstance(item, Track):
            label, xs, ys = item.topic, item.lon, item.lat
            label += f" ({item.length_m():.0f} m, {len(xs)} fixes)"
            latitudes.extend(item.lat.tolist())
        else:
            label, xs, ys = item.label, item.xy[:, 0], item.xy[:, 1]
        (line,) = axes.plot(xs, ys, linewidth=1.6, marker="." if len(xs) < 3 else None, label=label)
        colour = line.get_color()
        axes.plot(xs[:1], ys[:1], "o", markerfacecolor="white", markeredgecolor=colour)
        axes.plot(xs[-1:], ys[-1:], "x", color=colour)
        points = line.get_xydata()
        key = item.topic if isinstance(item, Track) else item.label
        drawn[key] = (
            float(points[:, 0].min()),
            float(points[:, 0].max()),
            float(points[:, 1].min()),
            float(points[:, 1].max()),
        )
    if latitudes:  # equirectangular: a degree of longitude is cos(latitude) of one of latitude
        axes.set_aspect(1 / max(math.cos(math.radians(float(np.mean(latitudes)))), 1e-6))
        axes.set_xlabel("longitude (°)")
        axes.set_ylabel("latitude (°)")
        axes.ticklabel_format(useOffset=False)
        axes.tick_params(axis="x", labelrotation=30)
    else:
        axes.set_aspect("equal", adjustable="datalim")
        axes.set_xlabel("x (m)")
        axes.set_ylabel("y (m)")
    axes.set_title(title, fontsize=9)
    axes.grid(True, linewidth=0.4, alpha=0.5)
    axes.legend(fontsize=7, loc="best")
    return drawn


def _draw_series(axes: Axes, panel: Series) -> None:
    for name, values in panel.lines.items():
        axes.plot(panel.t, values, linewidth=1.0, label=name)
    axes.set_title(panel.title, fontsize=9, loc="left")
    axes.set_xlabel("seconds from the first message", fontsize=8)
    axes.tick_params(labelsize=7)
    axes.grid(True, linewidth=0.4, alpha=0.5)
    axes.legend(fontsize=7, loc="upper right", ncols=min(len(panel.lines), 6))


def _draw_sheet(figure: Figure, cell: GridCell, topic: str, frames: list[Frame]) -> None:
    cells = cell.subgridspec(1, max(len(frames), 1))
    for i, frame in enumerate(frames):
        axes = figure.add_subplot(cells[i])
        axes.imshow(frame.pixels, cmap="gray" if frame.pixels.ndim == 2 else None)
        axes.set_axis_off()
        axes.set_title(f"{topic} {frame.t:.2f} s" if i == 0 else f"{frame.t:.2f} s", fontsize=8)


__all__ = ["RosMessages", "RosPlotReport", "plot"]
