"""`nanorec plot BAG_FOLDER`: the ROS picture of the core (`nanorec.converters.ros.common.rosplot`:
tracks, paths per frame, time series, contact sheets, the rate strip), drawn from a ROS 2 bag. Thin
on purpose: ROS1 bags draw the same picture, and the core normalises ROS 2's spellings
(`pkg/msg/Type`, `sec/nanosec`, `tf2_msgs/msg/TFMessage`), so nothing of it is ROS 2's own."""

from __future__ import annotations

from pathlib import Path

from nanorec.selection import Selection

from ..common.rosplot import RosPlotReport
from ..common.rosplot import plot as ros_plot
from .recording import Ros2Recording


def plot(
    rec: Ros2Recording,
    output: Path,
    *,
    selection: Selection | None = None,
    overwrite: bool = False,
    dpi: int = 100,
) -> RosPlotReport:
    """Draw the selected messages of the bag `rec` into `output` (see
    `nanorec.converters.ros.common.rosplot.plot` for what is drawn and raised)."""
    return ros_plot(rec, output, selection=selection, overwrite=overwrite, dpi=dpi)


__all__ = ["plot"]
