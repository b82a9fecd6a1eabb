"""What a ROS picture draws, read from decoded messages: the standard types as what they
mean, for ROS1 and ROS 2 bags alike. `sensor_msgs/NavSatFix` is a track (longitude,
latitude); odometry, poses and `tf` are paths in their frame; `sensor_msgs/Imu` and topics of
a few numbers are time series; `sensor_msgs/Image` gives a few frames. Numbers only (no
matplotlib here), so the tests check what a picture holds without reading the image.

It lives in the core, not in a converter, because both bag formats decode to the same
dicts: only the spellings differ, and they are normalised here once (`ros_type`: ROS 2's
`pkg/msg/Type` is ROS1's `pkg/Type`; a time is `{secs, nsecs}` in ROS1, `{sec, nanosec}` in
ROS 2; `tf/tfMessage` and `tf2_msgs/(msg/)TFMessage` hold the same transforms). A format
takes part by offering `RosMessages`: its topics, each topic's type and decoded messages.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from nanorec.archive.reader import ArchiveReader
from nanorec.errors import FormatError

#: At most this many messages of one topic are decoded (evenly spaced).
MAX_MESSAGES = 3000
#: A topic is a time series when its message holds at most this many numbers.
MAX_SCALARS = 6
EARTH_RADIUS_M = 6_371_008.8


class RosMessages(Protocol):
    """A recording of ROS messages, whatever its format: one kind per topic (the index's
    types), `type_of(topic)` its message type in either spelling, `decode(n)` message `n`
    as nested dicts (bytes when it cannot be decoded: skipped)."""

    @property
    def reader(self) -> ArchiveReader: ...

    def table_kinds(self) -> list[str]: ...

    def type_of(self, topic: str) -> str: ...

    def decode(self, number: int) -> Any: ...


def ros_type(name: str) -> str:
    """`name` in ROS1's spelling: ROS 2's `pkg/msg/Type` is `pkg/Type`, so one table of
    standard types serves both."""
    parts = name.split("/")
    if len(parts) == 3 and parts[1] == "msg":
        return f"{parts[0]}/{parts[2]}"
    return name


POSITION_PATHS = {  # type (ROS1 spelling) -> the path of its position in the message
    "nav_msgs/Odometry": ("pose", "pose", "position"),
    "geometry_msgs/PoseStamped": ("pose", "position"),
    "geometry_msgs/PoseWithCovarianceStamped": ("pose", "pose", "position"),
    "geometry_msgs/PointStamped": ("point",),
    "turtlesim/Pose": (),
    "geometry_msgs/Pose2D": (),
}
TF_TYPES = ("tf/tfMessage", "tf2_msgs/TFMessage")
_DRAWN = {
    *POSITION_PATHS,
    *TF_TYPES,
    "sensor_msgs/NavSatFix",
    "sensor_msgs/Imu",
}  # types of their own
_IMU = {
    "angular velocity (rad/s)": "angular_velocity",
    "linear acceleration (m/s²)": "linear_acceleration",
}
_SKIPPED = {"header", "stamp"}
_TIMES = (("secs", "nsecs"), ("sec", "nanosec"))  # ROS1's time, ROS 2's builtin_interfaces/Time


@dataclass
class Track:
    """A `NavSatFix` topic's fixes: longitude, latitude (degrees), seconds from the start."""

    topic: str
    lon: npt.NDArray[np.float64]
    lat: npt.NDArray[np.float64]
    t: npt.NDArray[np.float64]

    def length_m(self) -> float:
        """The track's length over the ground (equirectangular, m)."""
        if len(self.lon) < 2:
            return 0.0
        scale = math.cos(math.radians(float(np.mean(self.lat))))
        dx = np.radians(np.diff(self.lon)) * scale
        dy = np.radians(np.diff(self.lat))
        return float(np.hypot(dx, dy).sum() * EARTH_RADIUS_M)


@dataclass
class Path:
    """Positions (x, y) of one source in `frame` ("" when the messages name none): a
    topic, or a tf parent -> child."""

    label: str
    frame: str
    xy: npt.NDArray[np.float64]


@dataclass
class Series:
    """A panel of time series: named lines over seconds from the start."""

    title: str
    t: npt.NDArray[np.float64]
    lines: dict[str, npt.NDArray[np.float64]] = field(default_factory=dict)


@dataclass
class Frame:
    """One image: seconds from the start, pixels (h, w) grey or (h, w, 3) RGB in 0..1."""

    t: float
    pixels: npt.NDArray[np.float64]


@dataclass
class Contents:
    """Everything one picture draws, by sort."""

    tracks: list[Track] = field(default_factory=list)
    paths: list[Path] = field(default_factory=list)
    series: list[Series] = field(default_factory=list)
    images: dict[str, list[Frame]] = field(default_factory=dict)
    #: Messages that did not decode (`FormatError`), left out of the picture.
    undecoded: int = 0


def contents(
    rec: RosMessages, numbers: npt.NDArray[np.int64], topics: list[str], max_images: int = 6
) -> Contents:
    """What the picture draws of the messages `numbers` of `topics`."""
    found = Contents()
    index = rec.reader.index
    origin = int(index.timestamp_us[0]) if len(index) else 0

    def t_of(number: int) -> float:
        return (int(index.timestamp_us[number]) - origin) / 1e6

    for topic in topics:
        kind = ros_type(rec.type_of(topic))
        mine = numbers[index.has_type(topic)[numbers]]
        if not len(mine):
            continue
        if kind == "sensor_msgs/Image":
            picked = mine[np.unique(np.linspace(0, len(mine) - 1, max_images).round().astype(int))]
            frames = [
                image_frame(_decode(rec, int(n), found), t_of(int(n))) for n in picked.tolist()
            ]
            shown = [f for f in frames if f is not None]
            if shown:
                found.images[topic] = shown
            continue
        leaves: list[str] = []
        if kind not in _DRAWN:  # a topic of a few numbers? Its first message says
            first = _decode(rec, int(mine[0]), found)
            leaves = _numbers(first) if isinstance(first, Mapping) else []
            if not 1 <= len(leaves) <= MAX_SCALARS:
                continue
        if len(mine) > MAX_MESSAGES:
            mine = mine[np.linspace(0, len(mine) - 1, MAX_MESSAGES).round().astype(int)]
        t = (index.timestamp_us[mine] - origin) / 1e6
        values = [_decode(rec, n, found) for n in mine.tolist()]
        if kind == "sensor_msgs/NavSatFix":
            track = pose_track(topic, values, t)
            if track is not None:
                found.tracks.append(track)
        elif kind in POSITION_PATHS:
            found.paths.extend(pose_paths(topic, kind, values))
        elif kind in TF_TYPES:
            found.paths.extend(tf_paths(values))
        elif kind == "sensor_msgs/Imu":
            for title, name in _IMU.items():
                found.series.append(_series(f"{topic} {title}", t, values, (name,)))
        else:
            found.series.append(_scalar_series(topic, t, values, leaves))
    found.series = [s for s in found.series if s.lines]
    return found


def _decode(rec: RosMessages, number: int, found: Contents) -> Any:
    """Message `number` decoded; None (counted) when it does not decode: a picture of the
    rest beats no picture (the CLI's `Undecodable` warns of each before it gets here)."""
    try:
        return rec.decode(number)
    except FormatError:
        found.undecoded += 1
        return None


def _get(value: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        if not isinstance(value, Mapping):
            return None
        value = value.get(key)
    return value


def _seconds(value: Mapping[str, Any]) -> float | None:
    """A time in either ROS's spelling as seconds; None for any other mapping."""
    for whole, part in _TIMES:
        if len(value) == 2 and whole in value and part in value:
            return float(value[whole]) + float(value[part]) / 1e9
    return None


def _number(value: Any) -> float:
    if isinstance(value, (bool, int, float, np.number)):
        return float(value)
    if isinstance(value, Mapping):
        seconds = _seconds(value)
        return math.nan if seconds is None else seconds
    return math.nan


def pose_track(topic: str, values: list[Any], t: npt.NDArray[np.float64]) -> Track | None:
    """The fixes with a position: finite, and a status other than NO_FIX (-1)."""
    rows = []
    for value, when in zip(values, t.tolist(), strict=True):
        status = _number(_get(value, ("status", "status")))
        lon, lat = _number(_get(value, ("longitude",))), _number(_get(value, ("latitude",)))
        if status >= 0 and math.isfinite(lon) and math.isfinite(lat):
            rows.append((lon, lat, when))
    if not rows:
        return None
    table = np.array(rows, dtype=np.float64)
    return Track(topic, table[:, 0], table[:, 1], table[:, 2])


def pose_paths(topic: str, kind: str, values: list[Any]) -> list[Path]:
    where = POSITION_PATHS[kind]
    rows = []
    for value in values:
        point = _get(value, where)
        x, y = _number(_get(point, ("x",))), _number(_get(point, ("y",)))
        if math.isfinite(x) and math.isfinite(y):
            rows.append((x, y))
    frame = str(_get(values[0], ("header", "frame_id")) or "") if values else ""
    if not rows:
        return []
    return [Path(topic, frame, np.array(rows, dtype=np.float64))]


def tf_paths(values: list[Any]) -> list[Path]:
    """One path per parent -> child transform, in the parent's frame (ROS1's leading "/"
    dropped, so both ROS's frames read alike)."""
    rows: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for value in values:
        for item in _get(value, ("transforms",)) or ():
            parent = str(_get(item, ("header", "frame_id")) or "").lstrip("/")
            child = str(_get(item, ("child_frame_id",)) or "").lstrip("/")
            move = _get(item, ("transform", "translation"))
            x, y = _number(_get(move, ("x",))), _number(_get(move, ("y",)))
            if math.isfinite(x) and math.isfinite(y):
                rows.setdefault((parent, child), []).append((x, y))
    return [
        Path(f"tf {parent} → {child}", parent, np.array(xy, dtype=np.float64))
        for (parent, child), xy in sorted(rows.items())
    ]


def _numbers(value: Mapping[str, Any], prefix: str = "") -> list[str]:
    """The dotted names of a message's number fields (its header and covariances aside; a
    time counts as one number, its seconds); none when it holds anything else (text,
    arrays, lists: not a message of a few numbers)."""
    names: list[str] = []
    for key, item in value.items():
        if key in _SKIPPED or "covariance" in key:
            continue
        if isinstance(item, Mapping) and _seconds(item) is not None:
            names.append(f"{prefix}{key}")
        elif isinstance(item, Mapping):
            inner = _numbers(item, f"{prefix}{key}.")
            if not inner and item:
                return []
            names.extend(inner)
        elif isinstance(item, (bool, int, float, np.number)):
            names.append(f"{prefix}{key}")
        else:
            return []
    return names


def _series(
    title: str, t: npt.NDArray[np.float64], values: list[Any], where: tuple[str, ...]
) -> Series:
    series = Series(title, t)
    for axis in ("x", "y", "z"):
        line = np.array([_number(_get(v, (*where, axis))) for v in values], dtype=np.float64)
        if np.isfinite(line).any():
            series.lines[axis] = line
    return series


def _scalar_series(
    topic: str, t: npt.NDArray[np.float64], values: list[Any], names: list[str]
) -> Series:
    parts = [name.split(".") for name in names]
    common = 0  # the dotted prefix every name shares goes to the title
    while all(len(p) > common + 1 and p[common] == parts[0][common] for p in parts):
        common += 1
    prefix = ".".join(parts[0][:common])
    series = Series(f"{topic} {prefix}" if prefix else topic, t)
    for path in parts:
        line = np.array([_number(_get(v, tuple(path))) for v in values], dtype=np.float64)
        if np.isfinite(line).any():
            series.lines[".".join(path[common:])] = line
    return series


_CHANNELS = {"rgb8": 3, "bgr8": 3, "rgba8": 4, "bgra8": 4, "mono8": 1, "8UC1": 1, "8UC3": 3}
_WIDE = {"mono16": ">u2", "16UC1": ">u2", "32FC1": ">f4"}


def pixel_bytes(data: Any) -> npt.NDArray[np.uint8]:
    """An image's `data` as bytes: a numpy array (both decoders), or bytes and lists."""
    if isinstance(data, (bytes, bytearray, memoryview)):
        return np.frombuffer(bytes(data), dtype=np.uint8)
    array = np.asarray(data)
    if array.dtype != np.uint8:
        array = array.astype(np.uint8) if array.dtype.kind in "iub" else array.view(np.uint8)
    return np.ascontiguousarray(array).reshape(-1)


def image_frame(value: Any, t: float) -> Frame | None:
    """A `sensor_msgs/Image` at `t` s as pixels; None for an encoding not shown."""
    if not isinstance(value, Mapping):
        return None
    encoding = str(value.get("encoding", ""))
    height, width = int(value.get("height", 0)), int(value.get("width", 0))
    step = int(value.get("step", 0))
    data = pixel_bytes(value.get("data", b""))
    if not height or not width or not step or len(data) < height * step:
        return None
    rows = data[: height * step].reshape(height, step)
    if encoding in _CHANNELS:
        channels = _CHANNELS[encoding]
        if step < width * channels:
            return None
        pixels = rows[:, : width * channels].reshape(height, width, channels)[..., :3]
        if encoding.startswith("bgr"):
            pixels = pixels[..., ::-1]
        return Frame(t, (pixels[..., 0] if channels == 1 else pixels) / 255.0)
    if encoding in _WIDE:
        dtype = np.dtype(_WIDE[encoding])
        if step < width * dtype.itemsize:
            return None
        if not value.get("is_bigendian"):
            dtype = dtype.newbyteorder("<")
        grey = rows[:, : width * dtype.itemsize].copy().view(dtype).astype(np.float64)
        finite = grey[np.isfinite(grey)]
        low, high = (float(finite.min()), float(finite.max())) if len(finite) else (0.0, 1.0)
        return Frame(t, np.nan_to_num((grey - low) / max(high - low, 1e-12)))
    return None


__all__ = [
    "Contents",
    "Frame",
    "Path",
    "RosMessages",
    "Series",
    "Track",
    "contents",
    "ros_type",
]
