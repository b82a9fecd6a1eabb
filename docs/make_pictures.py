"""Render the README's pictures, one per format, from the bundled samples into docs/.

    python docs/make_pictures.py        # from the repository root; needs the plot extra

Each is what `nanorec plot SAMPLE -o docs/plot-FORMAT.png --force` draws; the line each
plot prints (what it drew) is printed too.
"""

from __future__ import annotations

from pathlib import Path

from nanorec import registry
from nanorec.converters.carla.plot import plot as plot_carla
from nanorec.converters.carla.recording import CarlaRecording
from nanorec.converters.pbstream.plot import plot as plot_pbstream
from nanorec.converters.pbstream.recording import PbstreamRecording
from nanorec.converters.ros.ros1.plot import plot as plot_bag
from nanorec.converters.ros.ros1.recording import BagRecording
from nanorec.converters.ros.ros2.plot import plot as plot_ros2
from nanorec.converters.ros.ros2.recording import Ros2Recording

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "samples"
DOCS = ROOT / "docs"


def main() -> None:
    with CarlaRecording.open(SAMPLES / "carla-0.9.15-crash-town05.log") as rec:
        print(plot_carla(rec, DOCS / "plot-carla.png", dpi=80, overwrite=True).line())
    with registry.open(SAMPLES / "rosbag-robot.bag") as bag:
        assert isinstance(bag, BagRecording)
        print(plot_bag(bag, DOCS / "plot-rosbag.png", dpi=70, overwrite=True).line())
    with registry.open(SAMPLES / "ros2-robot") as ros2:
        assert isinstance(ros2, Ros2Recording)
        print(plot_ros2(ros2, DOCS / "plot-ros2.png", dpi=70, overwrite=True).line())
    with registry.open(SAMPLES / "pbstream-small.pbstream") as state:
        assert isinstance(state, PbstreamRecording)
        print(plot_pbstream(state, DOCS / "plot-pbstream.png", dpi=70, overwrite=True).line())


if __name__ == "__main__":
    main()
