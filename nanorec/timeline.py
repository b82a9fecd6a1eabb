"""A picture of any recording: how many messages of each kind arrive over time.

The fallback `nanorec plot` for a format that draws nothing of its own (and for NanoVer's
recordings): one line per kind, messages per second against seconds from the start, from
the index alone (no message is decoded). Needs matplotlib (`pip install nanorec[plot]`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from nanorec.atomic import atomic_output
from nanorec.errors import UnsupportedError
from nanorec.selection import Selection

#: Time bins of the picture.
BINS = 200


def plot_timeline(
    recording: Any, output: Path, *, overwrite: bool = False, selection: Selection | None = None
) -> int:
    """Draw `recording`'s message rate per kind (of the selected messages) into `output`
    (.png, .svg, .pdf); returns the file's size. Raises `UnsupportedError` without
    matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise UnsupportedError("plot needs matplotlib: pip install 'nanorec[plot]'") from None
    index = recording.reader.index
    chosen = np.zeros(len(index), dtype=bool)
    chosen[(selection or Selection()).numbers(index)] = True
    seconds = (index.timestamp_us - (index.timestamp_us[0] if len(index) else 0)) / 1e6
    edges = np.linspace(0.0, max(float(seconds.max()) if len(index) else 0.0, 1e-3), BINS + 1)
    width = edges[1] - edges[0]
    figure, axes = plt.subplots(figsize=(10, 4), dpi=100)
    for kind in recording.table_kinds()[:20]:
        counts, _ = np.histogram(seconds[index.has_type(kind) & chosen], bins=edges)
        axes.plot(edges[:-1], counts / width, label=kind, linewidth=1)
    axes.set_xlabel("seconds from the first message")
    axes.set_ylabel("messages per second")
    axes.set_title(f"{recording.reader.path.name}: {len(index)} messages")
    if recording.table_kinds():
        axes.legend(fontsize="small", loc="upper right")
    suffix = output.suffix.lower().lstrip(".") or "png"
    with atomic_output(output, overwrite=overwrite) as stream:
        figure.savefig(stream, format=suffix)
    plt.close(figure)
    return output.stat().st_size
