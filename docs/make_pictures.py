"""Render the README's pictures, one per format, from the bundled samples into docs/.

    python docs/make_pictures.py        # from the repository root; needs the plot extra

Each is what `nanorec plot SAMPLE -o docs/plot-FORMAT.png --force` draws; the line each
plot prints (what it drew) is printed too. Then, with Playwright and Debian's Chromium
(`/usr/bin/chromium`), what `nanorec view SAMPLE` shows halfway through, with a plot of a
numeric field, into docs/view-FORMAT.png (skipped, saying so, without them).
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

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
CHROMIUM = Path("/usr/bin/chromium")
#: The sample of each format `nanorec view` is shown on, and the field plotted.
VIEWED = {
    "carla": ("carla-0.9.15-crash-town05.log", "position", "location_x"),
    "rosbag": ("rosbag-robot.bag", "/odom", "pose.pose.position.x"),
    "ros2": ("ros2-robot", "/odom", "pose.position.x"),
    "pbstream": ("pbstream-small.pbstream", "imu_data", "angular_velocity_z"),
}


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
    view_pictures()


def view_pictures() -> None:
    """docs/view-FORMAT.png: the page of `nanorec view` on each format's sample."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        print("view pictures skipped: playwright is not installed")
        return
    if not CHROMIUM.exists():
        print(f"view pictures skipped: no Chromium at {CHROMIUM}")
        return
    from nanorec.view.api import ViewApi
    from nanorec.view.server import ViewServer

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM))
        for name, (sample, kind, field) in VIEWED.items():
            with registry.open(SAMPLES / sample) as recording:
                server = ViewServer(ViewApi(recording), 0)
                threading.Thread(target=server.serve_forever, daemon=True).start()
                try:
                    page = browser.new_page(viewport={"width": 1100, "height": 640})
                    page.goto(server.url)
                    page.wait_for_selector("body[data-ready='1']")
                    _halfway(page, len(recording), kind, field)
                    page.screenshot(path=DOCS / f"view-{name}.png")
                    print(f"docs/view-{name}.png: {sample}, {kind} {field}")
                finally:
                    server.shutdown()
                    server.server_close()
        browser.close()


def _halfway(page: Any, count: int, kind: str, field: str) -> None:
    page.evaluate(f"window.nanorecView.seek({count // 2})")
    page.wait_for_selector(f"#inspector[data-message='{count // 2}']")
    page.evaluate(f"window.nanorecView.addPlot({kind!r}, {field!r})")
    page.wait_for_selector(".plot[data-rows]")


if __name__ == "__main__":
    main()
