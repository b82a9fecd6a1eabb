"""A bird's-eye picture of a CARLA recording: trajectories, actor footprints, traffic lights.

People would rather look than read: one PNG shows where every vehicle and walker went over
a time range, where each one is (its bounding box, turned by its yaw) at one frame, and the
state of the traffic lights then. Axes are in metres (the file's cm divided by 100) with
CARLA's y axis pointing down, as seen from above in the simulator.

Positions are gathered in one pass over the frames of the range, reading at most
`max_frames` evenly spaced frames, so the cost and memory stay bounded on a 1 GB recording
(a picture needs no more points). matplotlib is an optional extra (`nanorec[plot]`); it is
imported only here, and only its object API with the Agg canvas is used, so the caller's
pyplot backend is left alone.
"""

from __future__ import annotations

import io
import math
import os
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from nanorec.atomic import atomic_output
from nanorec.errors import UnsupportedError, UsageError
from nanorec.selection import Selection, index_span_s

from .ids import ActorType, Kind, TrafficLightState
from .message import records
from .recording import CarlaRecording
from .table import frame_span
from .world import Actor

CM_PER_M = 100.0
# Half-sizes (cm) for actors whose bounding box was not recorded (it is only with
# additional_data): a typical car, a motorbike, a pedestrian.
DEFAULT_EXTENT_CM = {"vehicle": (230.0, 100.0), "bike": (110.0, 40.0), "walker": (30.0, 30.0)}
_LIGHT_COLOURS = {
    TrafficLightState.RED: "#d62728",
    TrafficLightState.YELLOW: "#ffbf00",
    TrafficLightState.GREEN: "#2ca02c",
}
_OFF_COLOUR = "#7f7f7f"
_PLOTTED_TYPES = (ActorType.VEHICLE, ActorType.WALKER)
#: What `_actor_kinds` calls actors (`--type`); all but "other" are drawn by default.
ACTOR_KINDS = ("vehicle", "bike", "walker", "other")


@dataclass(frozen=True)
class PlotReport:
    """What `plot` drew: archive frames `start:stop` for the paths, footprints at `frame`."""

    output: Path
    start: int
    stop: int
    frame: int
    actors: int
    size: int


@dataclass
class _Track:
    actor_id: int
    kind: str  # "vehicle" or "walker" or "other"
    hero: bool
    segments: list[npt.NDArray[np.float64]]  # (n, 2) x, y in m, one per continuous stretch


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
    max_frames: int = 4000,
    size_in: tuple[float, float] = (8.0, 8.0),
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
    (`ACTOR_KINDS`).

    Raises `UnsupportedError` when matplotlib is missing, ValueError for a bad option
    (an empty range, a frame out of range, an actor never in the recording, an unknown
    format), `OutputExistsError` when `output` exists and not `overwrite`.
    """
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
        from matplotlib.lines import Line2D
        from matplotlib.patches import Polygon
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
    kinds = _actor_kinds(rec)
    wanted = _wanted(kinds, actors, types)
    tracks = _tracks(rec, span, wanted, kinds, max_frames)
    world = rec.frame(frame)

    figure = Figure(figsize=size_in, dpi=dpi, layout="constrained")
    canvas = FigureCanvasAgg(figure)
    if fmt not in canvas.get_supported_filetypes():
        raise UsageError(
            f"cannot write {fmt!r} pictures; use one of: "
            + ", ".join(sorted(canvas.get_supported_filetypes()))
        )
    axes = figure.add_subplot()
    colours = _colours(sorted(wanted))
    points: list[npt.NDArray[np.float64]] = []
    gone = False
    for track in tracks:
        colour = colours[track.actor_id]
        if track.actor_id not in world.actors and track.segments:
            end = track.segments[-1][-1]
            axes.plot([end[0]], [end[1]], marker="x", markersize=6, color=colour, zorder=3)
            gone = True
        style = "-" if track.kind != "walker" else (0, (2, 1.5))
        for segment in track.segments:
            points.append(segment)
            axes.plot(
                segment[:, 0],
                segment[:, 1],
                linestyle=style,
                linewidth=2.6 if track.hero else 1.4,
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
    drawn = 0
    for actor_id in world.actors:
        if actor_id not in wanted:
            continue
        actor = world.actors[actor_id]
        corners = _footprint(actor, kinds.get(actor_id, "other"))
        points.append(corners)
        colour = colours[actor_id]
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
        axes.plot(
            [centre[0], nose[0]], [centre[1], nose[1]], color="black", linewidth=0.8, zorder=5
        )
        if kinds.get(actor_id) == "walker":  # a box a few pixels wide: add a visible dot
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
        drawn += 1
    lights = _traffic_lights(world.traffic_lights, world.actors)
    for (x, y), colour in lights:
        points.append(np.array([[x, y]]))
        axes.scatter(
            [x], [y], s=70, c=[colour], edgecolors="black", linewidths=0.8, marker="o", zorder=5
        )

    _frame_axes(axes, points)
    times = rec.reader.index.timestamp_us
    axes.set_title(
        f"{rec.map_name}: paths {times[span.start] / 1e6:.2f}-{times[span[-1]] / 1e6:.2f} s "
        f"(frames {span.start}-{span[-1]}), boxes at frame {frame} "
        f"({times[frame] / 1e6:.2f} s)",
        fontsize=10,
    )
    figure.suptitle(rec.reader.path.name.removesuffix(".nanover.zip"), fontsize=9, color="0.4")
    handles = [
        Line2D([], [], color="0.2", linewidth=1.4, label="vehicle path"),
        Line2D([], [], color="0.2", linewidth=1.4, linestyle=(0, (2, 1.5)), label="walker path"),
        Line2D([], [], color="0.2", linewidth=2.6, label="hero path"),
        Line2D(
            [],
            [],
            marker="o",
            linestyle="",
            markerfacecolor="white",
            markeredgecolor="0.2",
            label="path start",
        ),
        Line2D(
            [],
            [],
            marker="s",
            linestyle="",
            markerfacecolor="0.6",
            markeredgecolor="black",
            label=f"footprint at frame {frame}",
        ),
    ]
    if gone:
        handles.append(
            Line2D([], [], marker="x", linestyle="", color="0.2", label="path end (gone)")
        )
    for state, colour in (*_LIGHT_COLOURS.items(), (TrafficLightState.OFF, _OFF_COLOUR)):
        if any(found == colour for _, found in lights):
            handles.append(
                Line2D(
                    [],
                    [],
                    marker="o",
                    linestyle="",
                    markerfacecolor=colour,
                    markeredgecolor="black",
                    label=f"traffic light {state.name.lower()}",
                )
            )
    figure.legend(handles=handles, loc="outside lower center", ncols=4, fontsize=8)

    buffer = io.BytesIO()
    figure.savefig(buffer, format=fmt, dpi=dpi)
    data = buffer.getvalue()
    with atomic_output(target, overwrite=overwrite) as stream:
        stream.write(data)
    return PlotReport(target, span.start, span.stop, frame, drawn, len(data))


def _actor_kinds(rec: CarlaRecording) -> dict[int, str]:
    """actor id -> "vehicle", "bike", "walker" or "other" (latest spawn wins)."""
    kinds: dict[int, str] = {}
    tables = rec.tables
    for row, actor_id in enumerate(tables.spawn_ids.tolist()):
        desc = tables.description(row)
        if desc.type == ActorType.VEHICLE:
            two = desc.attributes.get("number_of_wheels") == "2"
            kinds[actor_id] = "bike" if two else "vehicle"
        elif desc.type == ActorType.WALKER:
            kinds[actor_id] = "walker"
        else:
            kinds[actor_id] = "other"
    return kinds


def _wanted(
    kinds: Mapping[int, str], actors: Collection[int] | None, types: Collection[str] | None
) -> set[int]:
    unknown = sorted(set(types or ()) - set(ACTOR_KINDS))
    if unknown:
        raise UsageError(f"--type takes {', '.join(ACTOR_KINDS)}; not {unknown[0]!r}")
    if actors is None:
        drawn = set(types or ACTOR_KINDS[:-1])
        return {actor_id for actor_id, kind in kinds.items() if kind in drawn}
    missing = sorted(set(actors) - kinds.keys())
    if missing:
        raise UsageError(f"actor {missing[0]} never appears in the recording")
    return {actor_id for actor_id in actors if types is None or kinds[actor_id] in types}


def _heroes(rec: CarlaRecording) -> set[int]:
    tables = rec.tables
    return {
        actor_id
        for row, actor_id in enumerate(tables.spawn_ids.tolist())
        if tables.description(row).attributes.get("role_name") == "hero"
    }


def _tracks(
    rec: CarlaRecording,
    span: range,
    wanted: set[int],
    kinds: Mapping[int, str],
    max_frames: int,
) -> list[_Track]:
    """Each wanted actor's path over `span`, from at most `max_frames` evenly spaced frames.

    A path is cut where the actor is missing from a sampled frame (destroyed and
    re-spawned under the same id, or not positioned), so no line jumps across the map.
    """
    stride = max(1, math.ceil(len(span) / max(1, max_frames)))
    numbers = list(span[::stride])
    if numbers[-1] != span[-1]:
        numbers.append(span[-1])
    engine = rec.family.engine
    wanted_ids = np.fromiter(wanted, np.uint32, len(wanted))
    ids: list[npt.NDArray[Any]] = []
    xy: list[npt.NDArray[Any]] = []
    samples: list[npt.NDArray[np.int64]] = []
    for sample, number in enumerate(numbers):
        frame = rec.reader[number].get("frame")
        if not isinstance(frame, Mapping):
            continue
        poses = records(frame, Kind.POSITION, engine)
        poses = poses[np.isin(poses["id"], wanted_ids)]
        if not len(poses):
            continue
        ids.append(poses["id"].astype(np.int64))
        xy.append(poses["location"][:, :2].astype(np.float64) / CM_PER_M)
        samples.append(np.full(len(poses), sample, np.int64))
    if not ids:
        return []
    all_ids = np.concatenate(ids)
    all_xy = np.concatenate(xy)
    all_samples = np.concatenate(samples)
    order = np.argsort(all_ids, kind="stable")
    all_ids, all_xy, all_samples = all_ids[order], all_xy[order], all_samples[order]
    heroes = _heroes(rec)
    tracks: list[_Track] = []
    bounds = np.flatnonzero(np.diff(all_ids)) + 1
    for chunk_ids, chunk_xy, chunk_samples in zip(
        np.split(all_ids, bounds),
        np.split(all_xy, bounds),
        np.split(all_samples, bounds),
        strict=True,
    ):
        actor_id = int(chunk_ids[0])
        cuts = np.flatnonzero(np.diff(chunk_samples) != 1) + 1
        segments = [part for part in np.split(chunk_xy, cuts) if len(part)]
        kind = kinds.get(actor_id, "other")
        tracks.append(
            _Track(actor_id, "walker" if kind == "walker" else kind, actor_id in heroes, segments)
        )
    return tracks


def _colours(actor_ids: list[int]) -> dict[int, Any]:
    from matplotlib import colormaps

    palette = colormaps["tab20"]
    return {actor_id: palette((i * 2) % 20 + (i // 10) % 2) for i, actor_id in enumerate(actor_ids)}


def _footprint(actor: Actor, kind: str) -> npt.NDArray[np.float64]:
    """The actor's box seen from above: 4 corners (m), rear-left first, front edge 1-2."""
    box = actor.bounding_box
    if box is not None and box.extent.x > 0 and box.extent.y > 0:
        half_x, half_y = box.extent.x, box.extent.y
        off_x, off_y = box.location.x, box.location.y
    else:
        half_x, half_y = DEFAULT_EXTENT_CM.get(kind, (50.0, 50.0))
        off_x = off_y = 0.0
    yaw = math.radians(actor.rotation.yaw)
    cos, sin = math.cos(yaw), math.sin(yaw)
    local = np.array(
        [
            [off_x - half_x, off_y - half_y],
            [off_x + half_x, off_y - half_y],
            [off_x + half_x, off_y + half_y],
            [off_x - half_x, off_y + half_y],
        ]
    )
    turn = np.array([[cos, -sin], [sin, cos]])
    corners = local @ turn.T + [actor.location.x, actor.location.y]
    return np.asarray(corners / CM_PER_M, dtype=np.float64)


def _traffic_lights(
    lights: Mapping[int, Any], actors: Mapping[int, Actor]
) -> list[tuple[tuple[float, float], str]]:
    found: list[tuple[tuple[float, float], str]] = []
    for light_id, light in lights.items():
        actor = actors.get(light_id)
        if actor is None:
            continue
        colour = _LIGHT_COLOURS.get(light.state, _OFF_COLOUR)
        found.append(((actor.location.x / CM_PER_M, actor.location.y / CM_PER_M), colour))
    return found


def _frame_axes(axes: Any, points: list[npt.NDArray[np.float64]]) -> None:
    # A square window around everything drawn, so equal aspect needs no limit adjusting.
    if points:
        every = np.concatenate(points)
        low, high = every.min(axis=0), every.max(axis=0)
        centre = (low + high) / 2
        half = max(10.0, 0.55 * float((high - low).max()))
        axes.set_xlim(centre[0] - half, centre[0] + half)
        axes.set_ylim(centre[1] + half, centre[1] - half)  # y down, as CARLA's top view
    else:
        axes.invert_yaxis()
    axes.set_aspect("equal", adjustable="box")
    axes.set_xlabel("x (m)")
    axes.set_ylabel("y (m, down as in CARLA's top view)")
    axes.grid(True, linewidth=0.4, alpha=0.5)


__all__ = ["DEFAULT_EXTENT_CM", "PlotReport", "plot"]
