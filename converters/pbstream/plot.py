"""`nanorec plot x.pbstream`: trajectories (optimised node poses), submap origins and
constraints (intra-submap grey, inter-submap red) over the assembled 2D map, in metres.
Needs matplotlib (the plot extra)."""

from __future__ import annotations

import io
from pathlib import Path
from typing import TYPE_CHECKING

from nanorec.atomic import atomic_output
from nanorec.errors import UsageError

if TYPE_CHECKING:
    from .recording import PbstreamRecording


def plot(
    rec: PbstreamRecording, output: Path, *, overwrite: bool = False, draw_map: bool = True
) -> int:
    """Draw `rec` into `output` (.png, .svg, .pdf); returns the file's size in bytes."""
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
        if draw_map:
            _draw_map(rec, axes)
        trajectories = rec.trajectories()
        nodes: dict[tuple[int, int], tuple[float, float]] = {}
        for tid, poses in trajectories.items():
            xy = poses.translation[:, :2]
            axes.plot(xy[:, 0], xy[:, 1], lw=1.2, label=f"trajectory {tid} ({poses.source})")
            nodes.update(
                {
                    (tid, i): (x, y)
                    for i, (x, y) in zip(poses.index.tolist(), xy.tolist(), strict=True)
                }
            )
        submaps: dict[tuple[int, int], tuple[float, float]] = {}
        for tid, poses in rec.pose_graph().submaps.items():
            if len(poses):
                xy = poses.translation[:, :2]
                axes.scatter(xy[:, 0], xy[:, 1], marker="s", s=18, zorder=3, label=f"submaps {tid}")
                submaps.update(
                    {
                        (tid, i): (x, y)
                        for i, (x, y) in zip(poses.index.tolist(), xy.tolist(), strict=True)
                    }
                )
        for tag, colour in ((0, "0.6"), (1, "red")):
            segments = [
                (submaps[(int(c[0]), int(c[1]))], nodes[(int(c[2]), int(c[3]))])
                for c in rec.pose_graph().constraints.tolist()
                if c[4] == tag
                and (int(c[0]), int(c[1])) in submaps
                and (int(c[2]), int(c[3])) in nodes
            ]
            if segments:
                from matplotlib.collections import LineCollection

                axes.add_collection(
                    LineCollection(segments, colors=colour, linewidths=0.3, alpha=0.6)
                )
        axes.set_aspect("equal")
        axes.set_xlabel("x (m)")
        axes.set_ylabel("y (m)")
        axes.set_title(f"{rec.summary_name()} (pbstream v{rec.format_version})")
        if trajectories or submaps:
            axes.legend(loc="best", fontsize="small")
        buffer = io.BytesIO()
        figure.savefig(buffer, format=suffix, dpi=120)
    finally:
        plt.close(figure)
    data = buffer.getvalue()
    with atomic_output(output, overwrite=overwrite) as stream:
        stream.write(data)
    return len(data)


def _draw_map(rec: PbstreamRecording, axes: object) -> None:
    from .rosmap import assemble

    try:
        grid = assemble(rec)
    except UsageError:
        return  # no 2D submap: paths only
    height, width = grid.image.shape
    x0, y0 = grid.origin
    extent = (x0, x0 + width * grid.resolution, y0, y0 + height * grid.resolution)
    axes.imshow(grid.image, cmap="gray", vmin=0, vmax=255, extent=extent, origin="upper")  # type: ignore[attr-defined]


__all__ = ["plot"]
