"""`nanorec plot x.bag`: the ROS picture of the core (`nanorec.converters.ros.common.rosplot`:
tracks, paths per frame, time series, contact sheets, the rate strip), drawn from a ROS1 bag. Thin
on purpose: ROS 2 bags draw the same picture, so what the standard types mean is said once, there.
"""

from __future__ import annotations

from pathlib import Path

from nanorec.selection import Selection

from ..common.rosplot import RosPlotReport
from ..common.rosplot import plot as ros_plot
from .recording import BagRecording

#: The report `plot` returns (the core's, under the name this module always gave it).
BagPlotReport = RosPlotReport


def plot(
    rec: BagRecording,
    output: Path,
    *,
    selection: Selection | None = None,
    overwrite: bool = False,
    dpi: int = 100,
) -> BagPlotReport:
    """Draw the selected messages of the bag `rec` into `output` (see
    `nanorec.converters.ros.common.rosplot.plot` for what is drawn and raised)."""
    return ros_plot(rec, output, selection=selection, overwrite=overwrite, dpi=dpi)


__all__ = ["BagPlotReport", "plot"]
