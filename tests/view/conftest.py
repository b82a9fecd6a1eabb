"""What the view's tests share: a `nanorec view` server on 127.0.0.1 in a thread, over an
open recording, and a synthetic `Viewable` wrapper (a scene whose item counts vary with the
message number), so drawing is tested whatever the formats draw yet."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from nanorec.errors import UnsupportedError
from nanorec.view.api import ViewApi
from nanorec.view.server import ViewServer
from tests.conftest import SAMPLES

#: One sample of every format, and the other samples of each (`every_sample`).
ONE_PER_FORMAT = {
    "carla": "carla-0.9.15-town03.log",
    "rosbag": "rosbag-robot.bag",
    "ros2": "ros2-robot.db3",
    "pbstream": "pbstream-small.pbstream",
}
#: Every recording in samples/ (the JSON twins, the generator and its bytecode apart).
EVERY_SAMPLE = sorted(
    p.name
    for p in SAMPLES.iterdir()
    if p.suffix not in (".json", ".py", ".md", ".csv") and not p.name.startswith((".", "__"))
)


class Served:
    """A running server (ours, or a `nanorec view` process): GET as (status, JSON)."""

    def __init__(self, url: str) -> None:
        self.url = url

    def get(self, path: str) -> tuple[int, Any]:
        try:
            with urllib.request.urlopen(self.url + path.lstrip("/"), timeout=60) as answer:
                return answer.status, json.loads(answer.read())
        except urllib.error.HTTPError as error:
            with error:
                return error.code, json.loads(error.read())

    def ok(self, path: str) -> Any:
        status, body = self.get(path)
        assert status == 200, (path, body)
        return body


@pytest.fixture
def serve() -> Iterator[Any]:
    """`serve(recording)` starts a server over it (stopped after the test)."""
    started: list[ViewServer] = []

    def start(recording: Any) -> Served:
        server = ViewServer(ViewApi(recording), 0)
        threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
        started.append(server)
        return Served(server.url)

    yield start
    for server in started:
        server.shutdown()
        server.server_close()


def open_sample(name: str) -> Any:
    """The sample's recording (skipped when it needs an extra that is not installed)."""
    from nanorec import registry

    try:
        return registry.open(SAMPLES / name)
    except ImportError as error:  # the lowest-versions lane: core only
        pytest.skip(f"{name} needs {error.name}")
    except UnsupportedError as error:  # a format saying which extra it needs
        if "pip install" not in str(error):
            raise
        pytest.skip(f"{name}: {error}")


class NotDrawn:
    """`recording` without its scene, as a format that draws nothing is served."""

    def __init__(self, recording: Any) -> None:
        self._recording = recording

    def __getattr__(self, name: str) -> Any:
        if name.startswith("view_"):
            raise AttributeError(name)
        return getattr(self._recording, name)

    def __len__(self) -> int:
        return len(self._recording)


#: An 8x8 PNG: a map in the world, a camera beside it.
_PIXEL = (Path(__file__).parent / "pixel.png").read_bytes()


class Drawn:
    """`recording` with a synthetic scene (`Viewable`): message n shows n % 7 boxes, n % 5
    points, n % 3 polylines, n % 2 markers, a camera image when n % 4 == 0; the overview a
    polyline and an image map."""

    def __init__(self, recording: Any) -> None:
        self._recording = recording

    def __getattr__(self, name: str) -> Any:
        return getattr(self._recording, name)

    def __len__(self) -> int:
        return len(self._recording)

    def view_overview(self) -> dict[str, Any]:
        ring = np.linspace(0, 2 * np.pi, 50)
        return {
            "bounds": np.array([-60.0, -60.0, 60.0, 60.0]),  # numpy or lists: both taken
            "layers": [
                {
                    "kind": "lines",
                    "name": "track",
                    "x": (50 * np.cos(ring)).astype(np.float32),
                    "y": (50 * np.sin(ring)).astype(np.float32),
                    "starts": np.array([0], np.int32),
                    "class": np.array([0], np.uint8),
                    "classes": ["road"],
                },
                {
                    "kind": "image",
                    "name": "map",
                    "mime": "image/png",
                    "data": _PIXEL,
                    "extent": [-60.0, -60.0, 60.0, 60.0],
                },
            ],
        }

    def view_scene(self, number: int) -> dict[str, Any]:
        rng = np.random.default_rng(number)
        boxes, points, lines, markers = number % 7, number % 5, number % 3, number % 2
        line_x = rng.uniform(-50, 50, 4 * lines)
        camera = {"kind": "image", "name": "camera", "mime": "image/png", "data": _PIXEL}
        return {
            "follow": np.array([number % 10, 0.0], np.float32),
            "layers": [
                {
                    "kind": "boxes",
                    "name": "actors",
                    "x": rng.uniform(-50, 50, boxes),
                    "y": rng.uniform(-50, 50, boxes).astype(np.float32),
                    "yaw": rng.uniform(-180, 180, boxes).astype(np.float32),
                    "length": np.full(boxes, 4.5, np.float32),
                    "width": np.full(boxes, 2.0, np.float32),
                    "class": (np.arange(boxes) % 2).astype(np.uint8),
                    "classes": np.array(["vehicle", "walker"]),  # numpy or a list
                },
                {
                    "kind": "points",
                    "name": "gps",
                    "x": rng.uniform(-50, 50, points),
                    "y": rng.uniform(-50, 50, points),
                    "class": np.zeros(points, np.int64),
                    "classes": ["fix"],
                },
                {
                    "kind": "lines",
                    "name": "paths",
                    "x": line_x,
                    "y": line_x[::-1].copy(),
                    "starts": np.arange(0, 4 * lines, 4, dtype=np.int64),
                    "class": np.zeros(lines, np.uint8),
                    "classes": ["path"],
                },
                {
                    "kind": "markers",
                    "name": "collisions",
                    "x": np.zeros(markers),
                    "y": np.zeros(markers),
                    "label": [f"hit {number}"] * markers,
                },
                *([camera] if number % 4 == 0 else []),
            ],
        }


def drawn_counts(scene: dict[str, Any]) -> dict[str, int]:
    """What a scene's JSON holds, by item kind (the page must say it drew as many)."""
    counts = {"boxes": 0, "points": 0, "lines": 0, "markers": 0, "images": 0}
    for layer in scene.get("layers", ()):
        kind = layer["kind"]
        if kind == "image":
            counts["images"] += 1
            continue
        counts[kind] += _length(layer["starts" if kind == "lines" else "x"])
    return counts


def _length(column: Any) -> int:
    """Items of a column as the server sends it: a typed block, `{"list": ...}` or a list."""
    if isinstance(column, dict):
        return int(column["shape"][0]) if "shape" in column else len(column["list"])
    return len(column)
