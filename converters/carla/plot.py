"""A bird's-eye picture of a CARLA recording: trajectories, actor footprints, collisions.

People would rather look than read: one PNG shows where every vehicle and walker went over
a time range, where each one is (its bounding box, turned by its yaw) at one frame, where
and when actors collided, which actor is the hero, and the traffic lights near the paths
then. The view frames the actors' paths (or one followed actor's), with a margin; the
map's other traffic lights stay out. Axes are in metres (the file's cm divided by 100)
with CARLA's y axis pointing down, as seen from above in the simulator.

Positions are gathered in one pass over the frames of the range, reading at most
`max_frames` evenly spaced frames, so the cost and memory stay bounded on a 1 GB recording
(a picture needs no more points). matplotlib is an optional extra (`nanorec[plot]`); it is
imported only here, and only its object API with the Agg canvas is used, so the caller's
pyplot backend is left alone. What is drawn is computed in `plot_data`.
"""

from __future__ import annotations

import io
import os
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias

import numpy as np
import numpy.typing as npt

from nanorec.archive.atomic import atomic_output
from nanorec.errors import UnsupportedError, UsageError
from nanorec.selection import Selection, index_span_s

from .ids import TrafficLightState
from .plot_data import (
    ACTOR_KINDS,
    DEFAULT_EXTENT_CM,
    LIGHT_COLOURS,
    OFF_COLOUR,
    Collision,
    Track,
    View,
    actor_kinds,
    actor_name,
    bounds_of,
    collisions,
    footprint,
    frame_view,
    nothing_drawn,
    tracks,
    traffic_lights,
    wanted_actors,
)
from .recording import CarlaRecording
from .table import frame_span

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.lines import Line2D

#: An actor's colour: RGBA from the tab20 colour map.
Colour: TypeAlias = tuple[float, float, float, float]
#: A traffic light drawn: its place (m) and colour (`plot_data.traffic_lights`).
Light: TypeAlias = tuple[tuple[float, float], str]


@dataclass(frozen=True)
class PlotReport:
    """What `plot` drew: archive frames `start:stop` for the paths of `paths` actors,
    `actors` footprints at `frame`, the collisions starting in the range, the heroes
    labelled, the traffic lights inside the view; `bounds` is what the view frames (the
    paths and footprints, or the followed actor's) and `view` the axes' limits (m)."""

    output: Path
    start: int
    stop: int
    frame: int
    actors: int
    size: int
    paths: int = 0
    bounds: View | None = None
    view: View | None = None
    collisions: tuple[Collision, ...] = ()
    heroes: tuple[int, ...] = ()
    lights: int = 0
    follow: int | None = None

    def line(self) -> str:
        """The one line `nanorec plot` prints."""
        text = (
            f"{self.output}: {self.size} bytes; paths over frames {self.start}-{self.stop - 1}, "
            f"{self.actors} actors drawn at frame {self.frame}; {self.paths} paths, "
            f"{len(self.collisions)} collision{'' if len(self.collisions) == 1 else 's'}"
        )
        for hit in self.collisions[:3]:
            who = f"{actor_name(hit.actor1)}-{actor_name(hit.actor2)}"
            text += f" ({who} at {hit.time:.2f} s, frame {hit.recorder_frame})"
        text += f", {self.lights} traffic lights"
        if self.heroes:
            text += ", hero " + ", ".join(map(str, self.heroes))
        if self.follow is not None:
            text += f", following {self.follow}"
        return text


def plot(
    rec: CarlaRecording,
    output: str | os.PathLike[str],
    *,
    frame: int | None = None,
    start_s: float | None = None,
    stop_s: float | None = None,
    actors: Collection[int] | None = None,
    frames: range | None = None,
    types: Collection[str] | None = None,
    follow: int | None = None,
    max_frames: int = 4000,
    size_in: tuple[float, float] | None = None,
    dpi: int = 100,
    overwrite: bool = False,
) -> PlotReport:
    """Draw the recording from above into `output` (format from its suffix: png, svg, pdf).

    Paths cover the frames with `start_s <= elapsed <= stop_s` (seconds; the whole recording
    by default); footprints and traffic lights are drawn at archive frame `frame` (0-based,
    negative from the end), by default the last frame of the range. With `frame` and no
    times, the paths cover the whole recording. `actors` limits the drawing to those actor
    ids (any type); by default every vehicle and walker is drawn. `frames` (archive frames,
    what a `Selection` chose) replaces the times; `types` keeps actors of those kinds
    (`ACTOR_KINDS`). `follow` frames the view around that actor's path alone (it is drawn
    whatever `actors` and `types` say). `size_in` is the figure's size in inches: by
    default 8 wide and as high as the view needs (at most 8).

    Raises `UnsupportedError` when matplotlib is missing, ValueError for a bad option
    (an empty range, a frame out of range, an actor never in the recording, an unknown
    format), `OutputExistsError` when `output` exists and not `overwrite`.
    """
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise UnsupportedError("plotting needs matplotlib: pip install 'nanorec[plot]'") from None
    target = Path(output)
    fmt = target.suffix.lstrip(".").lower() or "png"
    span = frame_span(rec, start_s, stop_s) if frames is None else frames
    if not span:
        selection = (
            Selection(start_s, stop_s)
            if frames is None
            else Selection(first=frames.start, stop=frames.stop)
        )
        raise selection.empty(len(rec), index_span_s(rec.reader.index))
    if frame is not None:
        if not -len(rec) <= frame < len(rec):
            raise UsageError(f"frame {frame} out of range: the recording has {len(rec)} frames")
        frame %= len(rec)
    else:
        frame = span[-1]
    kinds = actor_kinds(rec)
    wanted = wanted_actors(kinds, actors, types)
    if not wanted and follow is None and (actors is not None or types):
        raise nothing_drawn(kinds, actors, types)
    if follow is not None:
        if follow not in kinds:
            raise UsageError(f"actor {follow} never appears in the recording (--follow)")
        wanted.add(follow)
    paths = tracks(rec, span, wanted, kinds, max_frames)
    world = rec.frame(frame)
    boxes = {
        actor_id: footprint(world.actors[actor_id], kinds.get(actor_id, "other"))
        for actor_id in world.actors
        if actor_id in wanted
    }
    framed = [
        part
        for track in paths
        if follow is None or track.actor_id == follow
        for part in track.segments
    ]
    framed += [box for actor_id, box in boxes.items() if follow is None or actor_id == follow]
    bounds = bounds_of(framed)
    view = None if bounds is None else frame_view(bounds)
    lights = traffic_lights(world.traffic_lights, world.actors, view)
    hits = collisions(rec, span, wanted)

    if size_in is None:
        shape = 1.0 if view is None else (view[3] - view[2]) / (view[1] - view[0])
        size_in = (8.0, min(8.0, 8.0 * shape + 1.8))
    figure = Figure(figsize=size_in, dpi=dpi, layout="constrained")
    canvas = FigureCanvasAgg(figure)
    if fmt not in canvas.get_supported_filetypes():
        raise UsageError(
            f"cannot write {fmt!r} pictures; use one of: "
            + ", ".join(sorted(canvas.get_supported_filetypes()))
        )
    axes = figure.add_subplot()
    colours = _colours(sorted(wanted))
    gone = _draw_paths(axes, paths, colours, world.actors, follow)
    for actor_id, corners in boxes.items():
        _draw_box(axes, actor_id, corners, colours[actor_id], kinds.get(actor_id) == "walker")
    for (x, y), colour in lights:
        axes.scatter(
            [x], [y], s=40, c=[colour], edgecolors="0.3", linewidths=0.6, alpha=0.6, zorder=1
        )
    for hit in hits:
        _draw_collision(axes, hit)
    _frame_axes(axes, view)
    times = rec.reader.index.timestamp_us
    following = "" if follow is None else f", following actor {follow}"
    axes.set_title(
        f"{rec.map_name}: paths {times[span.start] / 1e6:.2f}-{times[span[-1]] / 1e6:.2f} s "
        f"(frames {span.start}-{span[-1]}), boxes at frame {frame} "
        f"({times[frame] / 1e6:.2f} s){following}",
        fontsize=10,
    )
    figure.suptitle(rec.reader.path.name.removesuffix(".nanover.zip"), fontsize=9, color="0.4")
    figure.legend(
        handles=_legend(frame, gone, lights, bool(hits)),
        loc="outside lower center",
        ncols=4,
        fontsize=8,
    )

    buffer = io.BytesIO()
    figure.savefig(buffer, format=fmt, dpi=dpi)
    data = buffer.getvalue()
    with atomic_output(target, overwrite=overwrite) as stream:
        stream.write(data)
    return PlotReport(
        target,
        span.start,
        span.stop,
        frame,
        len(boxes),
        len(data),
        paths=sum(1 for track in paths if track.segments),
        bounds=bounds,
        view=view,
        collisions=tuple(hits),
        heroes=tuple(sorted(track.actor_id for track in paths if track.hero)),
        lights=len(lights),
        follow=follow,
    )


def _draw_paths(
    axes: Axes,
    paths: list[Track],
    colours: dict[int, Colour],
    present: Collection[int],
    follow: int | None,
) -> bool:
    """Each path, its start (o), its end when the actor is gone (x), the hero's label;
    True when some actor is gone."""
    gone = False
    for track in paths:
        if not track.segments:
            continue
        colour = colours[track.actor_id]
        end = track.segments[-1][-1]
        if track.actor_id not in present:
            axes.plot([end[0]], [end[1]], marker="x", markersize=6, color=colour, zorder=3)
            gone = True
        style = "-" if track.kind != "walker" else (0, (2, 1.5))
        wide = track.hero or track.actor_id == follow
        for segment in track.segments:
            axes.plot(
                segment[:, 0],
                segment[:, 1],
                linestyle=style,
                linewidth=2.6 if wide else 1.4,
                color=colour,
                alpha=0.9,
                zorder=2,
            )
            axes.plot(
                segment[:1, 0],
                segment[:1, 1],
                marker="o",
                markersize=4,
                markerfacecolor="white",
                markeredgecolor=colour,
                zorder=3,
            )
        if track.hero:
            axes.annotate(
                f"hero {track.actor_id}",
                (float(end[0]), float(end[1])),
                xytext=(-8, 10),
                textcoords="offset points",
                ha="right",
                fontsize=8,
                fontweight="bold",
                bbox={"boxstyle": "round,pad=0.2", "facecolor": "white", "alpha": 0.8},
                zorder=7,
            )
    return gone


def _draw_box(
    axes: Axes, actor_id: int, corners: npt.NDArray[np.float64], colour: Colour, walker: bool
) -> None:
    from matplotlib.patches import Polygon

    axes.add_patch(
        Polygon(
            corners,
            closed=True,
            facecolor=colour,
            edgecolor="black",
            linewidth=0.8,
            alpha=0.85,
            zorder=4,
        )
    )
    nose = corners[1:3].mean(axis=0)  # the front edge: a tick shows the heading
    centre = corners.mean(axis=0)
    axes.plot([centre[0], nose[0]], [centre[1], nose[1]], color="black", linewidth=0.8, zorder=5)
    if walker:  # a box a few pixels wide: add a visible dot
        axes.plot(
            [centre[0]],
            [centre[1]],
            marker="o",
            markersize=5,
            markerfacecolor=colour,
            markeredgecolor="black",
            markeredgewidth=0.6,
            zorder=5,
        )
    axes.annotate(
        str(actor_id),
        (float(centre[0]), float(centre[1])),
        xytext=(4, 4),
        textcoords="offset points",
        fontsize=7,
        zorder=6,
    )


def _draw_collision(axes: Axes, hit: Collision) -> None:
    axes.plot(
        [hit.x],
        [hit.y],
        marker="*",
        markersize=16,
        markerfacecolor="#ff3b00",
        markeredgecolor="black",
        linestyle="",
        zorder=8,
    )
    axes.annotate(
        f"collision {actor_name(hit.actor1)}-{actor_name(hit.actor2)}\n"
        f"{hit.time:.2f} s, frame {hit.recorder_frame}",
        (hit.x, hit.y),
        xytext=(8, 8),
        textcoords="offset points",
        fontsize=7,
        color="#a02000",
        bbox={"boxstyle": "round,pad=0.2", "facecolor": "white", "alpha": 0.85},
        zorder=8,
    )


def _legend(frame: int, gone: bool, lights: list[Light], collided: bool) -> list[Line2D]:
    from matplotlib.lines import Line2D

    def mark(label: str, marker: str, face: str, edge: str = "black") -> Line2D:
        return Line2D(
            [], [], marker=marker, linestyle="", markerfacecolor=face, markeredgecolor=edge,
            label=label,
        )  # fmt: skip

    handles = [
        Line2D([], [], color="0.2", linewidth=1.4, label="vehicle path"),
        Line2D([], [], color="0.2", linewidth=1.4, linestyle=(0, (2, 1.5)), label="walker path"),
        Line2D([], [], color="0.2", linewidth=2.6, label="hero path"),
        mark("path start", "o", "white", "0.2"),
        mark(f"footprint at frame {frame}", "s", "0.6"),
    ]
    if gone:
        handles.append(
            Line2D([], [], marker="x", linestyle="", color="0.2", label="path end (gone)")
        )
    if collided:
        handles.append(mark("collision (first contact)", "*", "#ff3b00"))
    for state, colour in (*LIGHT_COLOURS.items(), (TrafficLightState.OFF, OFF_COLOUR)):
        if any(found == colour for _, found in lights):
            handles.append(mark(f"traffic light {state.name.lower()}", "o", colour))
    return handles


def _colours(actor_ids: list[int]) -> dict[int, Colour]:
    from matplotlib import colormaps

    palette = colormaps["tab20"]
    return {actor_id: palette((i * 2) % 20 + (i // 10) % 2) for i, actor_id in enumerate(actor_ids)}


def _frame_axes(axes: Axes, view: View | None) -> None:
    if view is not None:
        axes.set_xlim(view[0], view[1])
        axes.set_ylim(view[3], view[2])  # y down, as CARLA's top view
    else:
        axes.invert_yaxis()
    axes.set_aspect("equal", adjustable="box")
    axes.set_xlabel("x (m)")
    axes.set_ylabel("y (m, down as in CARLA's top view)")
    axes.grid(True, linewidth=0.4, alpha=0.5)


__all__ = ["ACTOR_KINDS", "DEFAULT_EXTENT_CM", "PlotReport", "plot"]
