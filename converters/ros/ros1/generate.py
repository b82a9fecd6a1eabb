"""Synthetic bags for tests, samples and benchmarks, written with `BagWriter`.

A robot's usual topics at their usual rates (IMU, odometry, laser scan, point cloud, camera
image, /rosout from two publishers, a latched topic, std_msgs/Empty), ROS Noetic's real
definitions and md5sums (`stock.py`), receipt times slightly out of order as on a busy
machine, and optionally a crashed writer's ending (`crash=True`).
Payloads are serialized by `serialize.encode`, the inverse of `msgdef.Decoder`.

    python -m nanorec.converters.ros.ros1.generate out.bag --seconds 10 --compression bz2
"""

from __future__ import annotations

import argparse
import math
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from nanorec.archive.atomic import atomic_output

from .msgdef import parse_definition
from .records import Fields
from .serialize import encode
from .stock import STOCK
from .writer import BagWriter

START_NS = 1_700_000_000 * 1_000_000_000


def _header(seq: int, ns: int, frame: str) -> dict[str, Any]:
    return {"seq": seq, "stamp": {"secs": ns // 10**9, "nsecs": ns % 10**9}, "frame_id": frame}


def _xyz(x: float, y: float, z: float) -> dict[str, float]:
    return {"x": x, "y": y, "z": z}


def _message(topic: str, seq: int, ns: int, rng: random.Random, image: int) -> dict[str, Any]:
    t = (ns - START_NS) / 1e9
    if topic == "/imu":
        return {
            "header": _header(seq, ns, "imu"),
            "orientation": {"x": 0.0, "y": 0.0, "z": math.sin(t / 20), "w": math.cos(t / 20)},
            "orientation_covariance": np.full(9, 0.01),
            "angular_velocity": _xyz(0.0, 0.0, 0.1),
            "angular_velocity_covariance": np.zeros(9),
            "linear_acceleration": _xyz(rng.gauss(0, 0.05), rng.gauss(0, 0.05), 9.81),
            "linear_acceleration_covariance": np.zeros(9),
        }
    if topic == "/odom":
        return {
            "header": _header(seq, ns, "odom"),
            "child_frame_id": "base_link",
            "pose": {
                "pose": {
                    "position": _xyz(math.cos(t / 10) * 5, math.sin(t / 10) * 5, 0.0),
                    "orientation": {
                        "x": 0.0,
                        "y": 0.0,
                        "z": math.sin(t / 20),
                        "w": math.cos(t / 20),
                    },
                },
                "covariance": np.zeros(36),
            },
            "twist": {
                "twist": {"linear": _xyz(0.5, 0, 0), "angular": _xyz(0, 0, 0.1)},
                "covariance": np.zeros(36),
            },
        }
    if topic == "/scan":
        ranges = (np.abs(np.sin(np.arange(360) / 30 + t)) * 8 + 0.5).astype(np.float32)
        return {
            "header": _header(seq, ns, "laser"),
            "angle_min": -math.pi,
            "angle_max": math.pi,
            "angle_increment": 2 * math.pi / 360,
            "time_increment": 0.0,
            "scan_time": 0.1,
            "range_min": 0.1,
            "range_max": 30.0,
            "ranges": ranges,
            "intensities": np.zeros(0, dtype=np.float32),
        }
    if topic == "/points":
        points = np.random.default_rng(seq).random((256, 3), dtype=np.float32)
        fields = [
            {"name": axis, "offset": 4 * i, "datatype": 7, "count": 1}
            for i, axis in enumerate("xyz")
        ]
        return {
            "header": _header(seq, ns, "lidar"),
            "height": 1,
            "width": 256,
            "fields": fields,
            "is_bigendian": False,
            "point_step": 12,
            "row_step": 12 * 256,
            "data": np.frombuffer(points.tobytes(), dtype=np.uint8),
            "is_dense": True,
        }
    if topic == "/camera/image":
        height, width = image * 3 // 4, image
        pixels = np.full((height, width, 3), seq % 256, dtype=np.uint8)
        return {
            "header": _header(seq, ns, "camera"),
            "height": height,
            "width": width,
            "encoding": "rgb8",
            "is_bigendian": 0,
            "step": width * 3,
            "data": pixels.reshape(-1),
        }
    if topic == "/rosout":
        return {
            "header": _header(seq, ns, ""),
            "level": 2,
            "name": "/driver" if seq % 2 else "/planner",
            "msg": f"tick {seq}",
            "file": "node.py",
            "function": "loop",
            "line": 42,
            "topics": ["/odom"],
        }
    if topic in ("/chatter", "/map_name"):
        return {"data": f"hello {seq}" if topic == "/chatter" else "warehouse-2"}
    return {}


#: topic -> (type, Hz, latched). /rosout has two publishers (two connections).
TOPICS: dict[str, tuple[str, float, bool]] = {
    "/imu": ("sensor_msgs/Imu", 100.0, False),
    "/odom": ("nav_msgs/Odometry", 50.0, False),
    "/scan": ("sensor_msgs/LaserScan", 10.0, False),
    "/points": ("sensor_msgs/PointCloud2", 5.0, False),
    "/camera/image": ("sensor_msgs/Image", 2.0, False),
    "/rosout": ("rosgraph_msgs/Log", 2.0, False),
    "/chatter": ("std_msgs/String", 1.0, False),
    "/empty": ("std_msgs/Empty", 1.0, False),
    "/map_name": ("std_msgs/String", 0.0, True),
}


def connection_fields(topic: str, type_name: str, callerid: str, latched: bool) -> Fields:
    md5, definition = STOCK[type_name]
    return (
        (b"callerid", callerid.encode()),
        (b"latching", b"1" if latched else b"0"),
        (b"md5sum", md5.encode()),
        (b"message_definition", definition.encode()),
        (b"topic", topic.encode()),
        (b"type", type_name.encode()),
    )


def iter_messages(seconds: float, seed: int, image: int) -> Iterator[tuple[int, int, bytes]]:
    """(connection, receipt time ns, payload) in receipt order: stamps at each topic's rate,
    receipt a little later with jitter, so file order is not time order."""
    rng = random.Random(seed)
    parsed = {t: parse_definition(t, STOCK[t][1]) for t, _, _ in TOPICS.values()}
    events: list[tuple[int, int, str, int]] = []
    for conn, (topic, (_, hz, _)) in enumerate(TOPICS.items()):
        if hz == 0:
            events.append((START_NS, conn, topic, 0))
            continue
        for seq in range(int(seconds * hz)):
            events.append((START_NS + int(seq * 1e9 / hz) + 1000, conn, topic, seq))
    events.sort()
    rosout_second = len(TOPICS)
    for stamp, conn, topic, seq in events:
        type_name = TOPICS[topic][0]
        value = _message(topic, seq, stamp, rng, image)
        receipt = stamp + rng.randrange(0, 3_000_000)
        if topic == "/rosout" and seq % 2:
            conn = rosout_second
        yield conn, receipt, encode(parsed[type_name], type_name, value)


def generate(
    path: Path,
    *,
    seconds: float = 10.0,
    compression: str = "none",
    seed: int = 0,
    image: int = 64,
    chunk_threshold: int = 768 * 1024,
    crash: bool = False,
    cut: int = 0,
    overwrite: bool = True,
) -> Path:
    """Write a synthetic bag to `path` (see the module docstring); `image` is the camera's
    width in pixels (its size drives the bag's size)."""
    with atomic_output(path, overwrite=overwrite) as stream:
        bag = BagWriter(stream, compression=compression, chunk_threshold=chunk_threshold)
        for conn, (topic, (type_name, _, latched)) in enumerate(TOPICS.items()):
            caller = "/planner" if topic == "/rosout" else "/driver"
            bag.add_connection(conn, topic, connection_fields(topic, type_name, caller, latched))
        bag.add_connection(
            len(TOPICS),
            "/rosout",
            connection_fields("/rosout", "rosgraph_msgs/Log", "/driver", False),
        )
        for conn, ns, data in iter_messages(seconds, seed, image):
            bag.write(conn, ns, data)
        if crash:
            bag.crash(cut=cut)
        else:
            bag.close()
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output", type=Path)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--compression", default="none", choices=("none", "bz2", "lz4"))
    parser.add_argument("--image", type=int, default=64, help="camera width in pixels")
    parser.add_argument("--crash", action="store_true", help="end as a killed writer does")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    generate(
        args.output,
        seconds=args.seconds,
        compression=args.compression,
        image=args.image,
        crash=args.crash,
        seed=args.seed,
    )


if __name__ == "__main__":
    main()
