"""A picture of any recording: how many messages of each kind arrive over time.

`draw_rates` draws one panel: a heat strip per kind (a row of time bins shaded by the kind's
messages per second, each row scaled to its own peak, its mean rate in the label), readable
with 30 kinds. It is the fallback `nanorec plot` for a format that draws nothing of its own
(and for NanoVer's recordings), and a panel of the formats' own pictures (ROS bags). From
the index alone (no message is decoded). Needs matplotlib (`pip install nanorec[plot]`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from nanorec.archive.atomic import atomic_output
from nanorec.errors import UnsupportedError
from nanorec.selection import Selection

if TYPE_CHECKING:
    from nanorec.contract import Recording

#: Time bins of the picture.
BINS = 80
#: Kinds drawn at most (the busiest first beyond that).
MAX_KINDS = 60


def rate_rows(
    recording: Recording, chosen: npt.NDArray[np.bool_], kinds: list[str], bins: int = BINS
) -> tuple[npt.NDArray[np.float64], list[str], npt.NDArray[np.float64]]:
    """Bin edges (s from the first message), the kinds kept (those with a chosen message, at
    most MAX_KINDS, busiest first beyond that, else in the given order) and their
    messages-per-second rows (kinds x bins)."""
    index = recording.reader.index
    seconds = (index.timestamp_us - (index.timestamp_us[0] if len(index) else 0)) / 1e6
    last = float(seconds[chosen].max()) if chosen.any() else 0.0
    first = float(seconds[chosen].min()) if chosen.any() else 0.0
    edges = np.linspace(first, max(last, first + 1e-3), bins + 1)
    width = edges[1] - edges[0]
    rows: list[npt.NDArray[np.float64]] = []
    kept: list[str] = []
    for kind in kinds:
        mask = index.has_type(kind) & chosen
        if mask.any():
            counts, _ = np.histogram(seconds[mask], bins=edges)
            rows.append(counts / width)
            kept.append(kind)
    if len(kept) > MAX_KINDS:
        busiest = sorted(np.argsort([-row.sum() for row in rows], kind="stable")[:MAX_KINDS])
        kept = [kept[i] for i in busiest]
        rows = [rows[i] for i in busiest]
    table = np.array(rows, dtype=np.float64).reshape(len(kept), bins)
    return edges, kept, table


def draw_rates(
    axes: Any, recording: Any, chosen: npt.NDArray[np.bool_], kinds: list[str]
) -> list[str]:
    """The heat strip panel into `axes`; returns the kinds drawn (one row each)."""
    edges, kept, table = rate_rows(recording, chosen, kinds)
    if not kept:
        axes.set_axis_off()
        axes.set_title("no message in the selection", fontsize=9)
        return []
    peak = table.max(axis=1, keepdims=True)
    scaled = np.divide(table, peak, out=np.zeros_like(table), where=peak > 0)
    axes.imshow(
        scaled,
        aspect="auto",
        interpolation="nearest",
        cmap="Blues",
        vmin=0.0,
        vmax=1.0,
        extent=(float(edges[0]), float(edges[-1]), len(kept) - 0.5, -0.5),
    )
    span = max(float(edges[-1] - edges[0]), 1e-9)
    labels = [
        f"{kind} ({table[i].sum() * (edges[1] - edges[0]) / span:.3g}/s)"
        for i, kind in enumerate(kept)
    ]
    axes.set_yticks(range(len(kept)), labels, fontsize=7 if len(kept) > 12 else 8)
    axes.set_xlabel("seconds from the first message")
    axes.set_title("messages per second (each row shaded to its own peak)", fontsize=9)
    return kept


def plot_timeline(
    recording: Recording,
    output: Path,
    *,
    overwrite: bool = False,
    selection: Selection | None = None,
) -> int:
    """Draw `recording`'s message rate per kind (of the selected messages) into `output`
    (.png, .svg, .pdf); returns the file's size. Raises `UnsupportedError` without
    matplotlib."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise UnsupportedError("plot needs matplotlib: pip install 'nanorec[plot]'") from None
    index = recording.reader.index
    chosen = np.zeros(len(index), dtype=bool)
    chosen[(selection or Selection()).numbers(index)] = True
    kinds = list(recording.table_kinds())
    shown = min(len(kinds), MAX_KINDS)
    figure = Figure(figsize=(10, 1.6 + 0.22 * max(shown, 2)), dpi=100, layout="constrained")
    FigureCanvasAgg(figure)
    draw_rates(figure.add_subplot(), recording, chosen, kinds)
    figure.suptitle(f"{recording.reader.path.name}: {len(index)} messages", fontsize=10)
    suffix = output.suffix.lower().lstrip(".") or "png"
    with atomic_output(output, overwrite=overwrite) as stream:
        figure.savefig(stream, format=suffix)
    return output.stat().st_size
