"""A bag's poses and images for `nanorec view` (`nanorec.contract.Viewable`), ROS1 and ROS 2
alike through `rosplot_data.RosMessages`.

The overview is what `plot` draws as paths: one polyline per pose-like topic (odometry,
poses, points, turtlesim and 2D poses: `rosplot_data.contents` reads at most its
`MAX_MESSAGES` per topic) and per `tf` parent -> child, classed by that label; GPS fixes
(`NavSatFix`) become metres east and north of the first fix (equirectangular, as `plot`
measures a track). Each source stays in its own frame: nothing is transformed, as in `plot`.

A scene at message N is, for each source, its position in the latest message at or before
N's time (one decode per topic, found by `searchsorted` in the topic's message numbers; tf
looks back at most `TF_LOOKBACK` messages), and the latest image of each image topic
(`sensor_msgs/Image` encoded as PNG at zlib level 1: scrubbing wants it soon more than small,
`CompressedImage` as its bytes with their mime), so a
call costs a few decodes whatever the bag's length. The message numbers of the drawn topics
are the only per-recording cache (4 bytes a message).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from functools import cached_property
from typing import Any

import numpy as np
import numpy.typing as npt

from nanorec.errors import FormatError, UsageError
from nanorec.outputs import layers
from nanorec.outputs.png import PNG_MIME, png_bytes

from .rosplot_data import (
    EARTH_RADIUS_M,
    POSITION_PATHS,
    TF_TYPES,
    Path,
    RosMessages,
    contents,
    image_frame,
    pixel_bytes,
    pose_paths,
    pose_track,
    ros_type,
    tf_paths,
)

__all__ = ["IMAGE_TYPES", "MAX_IMAGE_TOPICS", "TF_LOOKBACK", "RosView"]

GPS = "sensor_msgs/NavSatFix"
IMAGE_TYPES = ("sensor_msgs/Image", "sensor_msgs/CompressedImage")
#: A scene shows the latest image of at most this many image topics (the first by name).
MAX_IMAGE_TOPICS = 4
#: A scene's tf positions come from at most this many latest messages of each tf topic.
TF_LOOKBACK = 64
_MIMES = {"jpeg": "image/jpeg", "jpg": "image/jpeg", "png": "image/png"}


class RosView:
    """What a bag shows; the overview and the drawn topics' message numbers are cached."""

    def __init__(self, rec: RosMessages) -> None:
        self.rec = rec
        self._images: dict[str, tuple[int, dict[str, Any] | None]] = {}

    @cached_property
    def kinds(self) -> dict[str, str]:
        """The drawn topics -> their type (ROS1 spelling): poses, tf, GPS, images."""
        drawn = {*POSITION_PATHS, *TF_TYPES, GPS, *IMAGE_TYPES}
        found = {topic: ros_type(self.rec.type_of(topic)) for topic in self.rec.table_kinds()}
        return {topic: kind for topic, kind in sorted(found.items()) if kind in drawn}

    @cached_property
    def numbers(self) -> dict[str, npt.NDArray[np.int64]]:
        """Each drawn topic's message numbers, rising (uint32 kept while they fit)."""
        index = self.rec.reader.index
        small = np.uint32 if len(index) < 1 << 32 else np.int64
        return {topic: np.flatnonzero(index.has_type(topic)).astype(small) for topic in self.kinds}

    @cached_property
    def overview(self) -> dict[str, Any]:
        """Every pose-like source's path as a line, classed by its label, and their bounds."""
        poses = [topic for topic, kind in self.kinds.items() if kind not in IMAGE_TYPES]
        index = self.rec.reader.index
        found = contents(self.rec, np.arange(len(index), dtype=np.int64), poses)
        paths = list(found.paths)
        paths += [Path(t.topic, "", self._metres(t.lon, t.lat)) for t in found.tracks]
        labels = sorted({path.label for path in paths})
        line_layer = layers.lines(
            "tracks",
            [path.xy for path in paths],
            [labels.index(path.label) for path in paths],
            labels,
        )
        return {"bounds": layers.bounds_of([line_layer]), "layers": [line_layer]}

    @cached_property
    def _gps_origin(self) -> tuple[float, float] | None:
        """The first fix of the first GPS topic (longitude, latitude): the metres' origin."""
        for topic, kind in self.kinds.items():
            if kind != GPS:
                continue
            for number in self.numbers[topic][:64].tolist():
                track = pose_track(topic, [self._decode(number)], np.zeros(1))
                if track is not None:
                    return float(track.lon[0]), float(track.lat[0])
        return None

    def _metres(
        self, lon: npt.NDArray[np.float64], lat: npt.NDArray[np.float64]
    ) -> npt.NDArray[np.float64]:
        """Longitudes, latitudes as metres east and north of `_gps_origin`."""
        lon0, lat0 = self._gps_origin or (float(lon[0]), float(lat[0]))
        scale = math.cos(math.radians(lat0))
        x = np.radians(lon - lon0) * scale * EARTH_RADIUS_M
        y = np.radians(lat - lat0) * EARTH_RADIUS_M
        return np.column_stack((x, y))

    def scene(self, number: int) -> dict[str, Any]:
        """Each source's latest position at or before message `number`'s time, and each image
        topic's latest image. Raises `OutOfRangeError` outside the recording."""
        index = self.rec.reader.index
        number = index.normalize(number)
        last = index.position_at_time(int(index.timestamp_us[number]))
        last = number if last is None else max(last, number)
        places: list[Path] = []
        images: list[dict[str, Any]] = []
        for topic, kind in self.kinds.items():
            mine = self.numbers[topic]
            k = int(np.searchsorted(mine, last, side="right"))
            if not k:
                continue
            if kind in IMAGE_TYPES:
                if len(images) < MAX_IMAGE_TOPICS:
                    picture = self._image(topic, kind, int(mine[k - 1]))
                    if picture is not None:
                        images.append(picture)
            elif kind in TF_TYPES:
                values = [self._decode(n) for n in mine[max(0, k - TF_LOOKBACK) : k].tolist()]
                places += [Path(p.label, p.frame, p.xy[-1:]) for p in tf_paths(values)]
            else:
                places += self._place(topic, kind, int(mine[k - 1]))
        labels = sorted({place.label for place in places})
        xy = np.concatenate([p.xy for p in places]) if places else np.zeros((0, 2))
        point_layer = layers.points(
            "poses", xy[:, 0], xy[:, 1], [labels.index(p.label) for p in places], labels
        )
        return {"layers": [point_layer, *images]}

    def _place(self, topic: str, kind: str, number: int) -> list[Path]:
        """The position in message `number` of a pose-like or GPS topic (none: no position)."""
        value = self._decode(number)
        if kind != GPS:
            return pose_paths(topic, kind, [value])
        track = pose_track(topic, [value], np.zeros(1))
        return [] if track is None else [Path(topic, "", self._metres(track.lon, track.lat))]

    def _image(self, topic: str, kind: str, number: int) -> dict[str, Any] | None:
        """Message `number` of an image topic as an image layer (None: not shown), the
        last one of each topic kept (a scrubbed page asks the same frame again)."""
        kept = self._images.get(topic)
        if kept is not None and kept[0] == number:
            return kept[1]
        value = self._decode(number)
        picture = None
        if kind == "sensor_msgs/CompressedImage" and isinstance(value, Mapping):
            mime = _mime(str(value.get("format", "")))
            data = value.get("data")
            if mime is not None and data is not None:
                picture = layers.image(topic, mime, pixel_bytes(data).tobytes())
        elif kind == "sensor_msgs/Image":
            frame = image_frame(value, 0.0)
            if frame is not None:
                pixels = np.round(np.clip(frame.pixels, 0.0, 1.0) * 255).astype(np.uint8)
                try:
                    picture = layers.image(topic, PNG_MIME, png_bytes(pixels, level=1))
                except UsageError:
                    picture = None
        self._images[topic] = (number, picture)
        return picture

    def _decode(self, number: int) -> Any:
        """Message `number` decoded; None when it does not decode (a view of the rest)."""
        try:
            return self.rec.decode(number)
        except FormatError:
            return None


def _mime(form: str) -> str | None:
    """A CompressedImage's `format` ("jpeg", "png", "rgb8; jpeg compressed bgr8") as a mime."""
    words = form.lower().replace(";", " ").split()
    for word in reversed(words):
        if word in _MIMES:
            return _MIMES[word]
    return None
