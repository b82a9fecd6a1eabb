"""Synthetic ROS 2 bags for samples, tests and benchmarks: a robot driving a circle
(`/odom` as `geometry_msgs/msg/PoseStamped`, `/status` as `std_msgs/msg/String`; with
`image`, `/camera` as `sensor_msgs/msg/Image`, mono8 at 10 Hz), written
as rosbag2's writers write them (sqlite3 schema 4 or MCAP profile `ros2`, definitions
included), as a bag folder with `metadata.yaml` or one storage file.

    python -m nanorec.converters.ros.ros2.generate OUT [--seconds S] [--storage mcap|sqlite3]
"""

from __future__ import annotations

import argparse
import collections
import functools
import math
import random
import sqlite3
import struct
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import numpy as np
from numpy.typing import NDArray

from nanorec.errors import UsageError

from .metadata import BagMetadata, FileInformation, TopicInformation, metadata_yaml
from .storage import Definition, Topic
from .writer import SCHEMA

_RULE = "=" * 80
POSE_STAMPED = "\n".join(
    [
        "std_msgs/Header header",
        "Pose pose",
        _RULE,
        "MSG: geometry_msgs/Pose",
        "Point position",
        "Quaternion orientation",
        _RULE,
        "MSG: geometry_msgs/Point",
        "float64 x\nfloat64 y\nfloat64 z",
        _RULE,
        "MSG: geometry_msgs/Quaternion",
        "float64 x 0\nfloat64 y 0\nfloat64 z 0\nfloat64 w 1",
        _RULE,
        "MSG: std_msgs/Header",
        "builtin_interfaces/Time stamp\nstring frame_id",
        _RULE,
        "MSG: builtin_interfaces/Time",
        "int32 sec\nuint32 nanosec",
    ]
)
QOS = (
    "- history: 3\n  depth: 0\n  reliability: 1\n  durability: 2\n  deadline:\n    sec: 0\n"
    "    nsec: 0\n  lifespan:\n    sec: 0\n    nsec: 0\n  liveliness: 1\n"
    "  liveliness_lease_duration:\n    sec: 0\n    nsec: 0\n  avoid_ros_namespace_conventions: "
    "false"
)
IMAGE = "\n".join(
    [
        "std_msgs/Header header\nuint32 height\nuint32 width\nstring encoding",
        "uint8 is_bigendian\nuint32 step\nuint8[] data",
        _RULE,
        "MSG: std_msgs/Header",
        "builtin_interfaces/Time stamp\nstring frame_id",
        _RULE,
        "MSG: builtin_interfaces/Time",
        "int32 sec\nuint32 nanosec",
    ]
)
TOPICS = [
    Topic(1, "/odom", "geometry_msgs/msg/PoseStamped", "cdr", QOS),
    Topic(2, "/status", "std_msgs/msg/String", "cdr", QOS),
    Topic(3, "/camera", "sensor_msgs/msg/Image", "cdr", QOS),
]
DEFINITIONS = [
    Definition("geometry_msgs/msg/PoseStamped", "ros2msg", POSE_STAMPED),
    Definition("std_msgs/msg/String", "ros2msg", "string data"),
    Definition("sensor_msgs/msg/Image", "ros2msg", IMAGE),
]
START_NS = 1_700_000_000_000_000_000


def _string(text: str, at: int) -> bytes:
    """A CDR string at payload offset `at` (aligned to 4), with its padding first."""
    raw = text.encode() + b"\0"
    return bytes(-at % 4) + struct.pack("<I", len(raw)) + raw


def string(text: str) -> bytes:
    return b"\x00\x01\x00\x00" + _string(text, 0)


def image(ns: int, width: int, pixels: bytes) -> bytes:
    """A mono8 `sensor_msgs/msg/Image` of `width` x 3/4 `width`."""
    height = width * 3 // 4
    head = struct.pack("<iI", ns // 1_000_000_000, ns % 1_000_000_000)
    body = head + _string("camera", len(head))
    body += bytes(-len(body) % 4) + struct.pack("<II", height, width)
    body += _string("mono8", len(body)) + b"\0"
    body += bytes(-len(body) % 4) + struct.pack("<II", width, height * width)
    return b"\x00\x01\x00\x00" + body + pixels[: height * width]


#: A `geometry_msgs/msg/PoseStamped` in CDR, fixed in size: encapsulation, stamp, frame
#: "map" (its length and text: the doubles then fall on 8-byte offsets), the pose.
_POSE_STAMPED = np.dtype(
    [
        ("encapsulation", "V4"),
        ("sec", "<i4"),
        ("nanosec", "<u4"),
        ("frame", "V8"),
        ("pose", "<f8", 7),
    ]
)


Steps = TypeVar("Steps", int, NDArray[np.int64])


def _receive_ns(step: Steps) -> Steps:
    """The receive time of odometry step `step` (an int, or an array of them)."""
    return START_NS + step * 50_000_000 + 17_000 * (step % 7)


def _odometry(steps: int) -> bytes:
    """The odometry messages of `steps` steps, joined, built as one array (the generator's
    millions of messages in seconds): the robot drives a circle of 10 m."""
    ns = _receive_ns(np.arange(steps, dtype=np.int64))
    records = np.zeros(steps, _POSE_STAMPED)
    records["encapsulation"] = np.void(b"\x00\x01\x00\x00")
    records["sec"] = ns // 1_000_000_000
    records["nanosec"] = ns % 1_000_000_000
    records["frame"] = np.void(struct.pack("<I", 4) + b"map\0")
    yaws = [s * 0.01 for s in range(steps)]
    headings = [yaw + math.pi / 2 for yaw in yaws]
    pose = records["pose"]
    pose[:, 0] = [10 * math.cos(yaw) for yaw in yaws]
    pose[:, 1] = [10 * math.sin(yaw) for yaw in yaws]
    pose[:, 5] = [math.sin(h / 2) for h in headings]  # the quaternion of the heading
    pose[:, 6] = [math.cos(h / 2) for h in headings]
    return records.tobytes()


def stamps(seconds: float, width: int = 0) -> Iterator[tuple[int, int]]:
    """(topic key, receive time ns) of `messages`, in its order, without their bytes."""
    for step in range(int(seconds * 20)):
        ns = _receive_ns(step)
        yield 1, ns
        if step % 20 == 0:
            yield 2, ns + 1_000
        if width and step % 2 == 0:
            yield 3, ns + 2_000


def messages(seconds: float, width: int = 0) -> Iterator[tuple[int, int, bytes]]:
    """(topic key, receive time ns, CDR) at 20 Hz (odometry), 1 Hz (status) and, with a
    `width`, 10 Hz (camera): `stamps`, each with its message."""
    # camera noise of 64 levels, new every frame: compresses about as real frames do
    levels = bytes(i & 0x3F for i in range(256))
    noise = random.Random(width)
    size = _POSE_STAMPED.itemsize
    odometry = _odometry(int(seconds * 20))
    poses = laps = 0
    for key, ns in stamps(seconds, width):
        if key == 1:
            yield key, ns, odometry[poses * size : (poses + 1) * size]
            poses += 1
        elif key == 2:
            yield key, ns, string(f"lap {laps}: all systems nominal")
            laps += 1
        else:
            pixels = noise.randbytes(width * width * 3 // 4).translate(levels)
            yield key, ns, image(ns - 2_000, width, pixels)  # stamped as its step's pose


#: Humble's sqlite3 schema (version 3): no type hashes, no message definitions.
HUMBLE_SCHEMA = (
    "CREATE TABLE schema(schema_version INTEGER PRIMARY KEY,ros_distro TEXT NOT NULL);",
    "CREATE TABLE metadata(id INTEGER PRIMARY KEY,metadata_version INTEGER NOT NULL,"
    "metadata TEXT NOT NULL);",
    "CREATE TABLE topics(id INTEGER PRIMARY KEY,name TEXT NOT NULL,type TEXT NOT NULL,"
    "serialization_format TEXT NOT NULL,offered_qos_profiles TEXT NOT NULL);",
    "CREATE TABLE messages(id INTEGER PRIMARY KEY,topic_id INTEGER NOT NULL,"
    "timestamp INTEGER NOT NULL, data BLOB NOT NULL);",
    "CREATE INDEX timestamp_idx ON messages (timestamp ASC);",
)


def write_db3(path: Path, seconds: float, width: int = 0, *, humble: bool = False) -> int:
    """A sqlite3 storage file as Jazzy's rosbag2 writes it (schema 4, definitions), or as
    Humble's (`humble`: schema 3, the types named only)."""
    path.unlink(missing_ok=True)
    with sqlite3.connect(path) as db:
        for statement in HUMBLE_SCHEMA if humble else SCHEMA:
            db.execute(statement)
        schema = (3, "humble") if humble else (4, "jazzy")
        db.execute("INSERT INTO schema (schema_version, ros_distro) VALUES (?, ?)", schema)
        columns = "?, ?, ?, ?, ?" if humble else "?, ?, ?, ?, ?, ''"  # Humble: no type hash
        for t in TOPICS[: 3 if width else 2]:
            db.execute(
                f"INSERT INTO topics VALUES ({columns})",
                (t.key, t.name, t.type, t.serialization_format, t.offered_qos_profiles),
            )
        for d in [] if humble else DEFINITIONS[: 3 if width else 2]:
            db.execute(
                "INSERT INTO message_definitions (topic_type, encoding, "
                "encoded_message_definition, type_description_hash) VALUES (?, ?, ?, '')",
                (d.type, d.encoding, d.text),
            )
        rows = ((ns, key, data) for key, ns, data in messages(seconds, width))
        inserted = db.executemany(
            "INSERT INTO messages (timestamp, topic_id, data) VALUES (?, ?, ?)", rows
        )
        count = max(inserted.rowcount, 0)
    db.close()
    return count


def write_mcap(path: Path, seconds: float, width: int = 0) -> int:
    from mcap.writer import Writer

    count = 0
    with path.open("wb") as stream:
        writer = Writer(stream)
        writer.start(profile="ros2", library="nanorec generate")
        for d, t in zip(DEFINITIONS[: 3 if width else 2], TOPICS, strict=False):
            schema = writer.register_schema(d.type, d.encoding, d.text.encode())
            writer.register_channel(
                t.name, t.serialization_format, schema, {"offered_qos_profiles": QOS}
            )
        for sequence, (key, ns, data) in enumerate(messages(seconds, width)):
            writer.add_message(key, ns, data, ns, sequence=sequence)
            count += 1
        writer.finish()  # type: ignore[no-untyped-call]
    return count


def generate(
    output: Path,
    *,
    seconds: float = 30.0,
    storage: str = "mcap",
    folder: bool = True,
    image: int = 0,
    humble: bool = False,
) -> Path:
    """Write a bag at `output` (a folder with metadata.yaml, or one storage file); `humble`:
    as Humble's rosbag2 wrote it (sqlite3 only: no definitions, metadata.yaml version 5)."""
    if humble and storage != "sqlite3":
        raise UsageError("a Humble-era bag is sqlite3 here (its MCAP plugin stored schemas)")
    write: Callable[[Path, float, int], int] = (
        write_mcap if storage == "mcap" else functools.partial(write_db3, humble=humble)
    )
    if not folder:
        write(output, seconds, image)
        return output
    output.mkdir(parents=True, exist_ok=True)
    name = f"{output.name}_0.{'mcap' if storage == 'mcap' else 'db3'}"
    write(output / name, seconds, image)
    counts: collections.Counter[int] = collections.Counter()
    first = last = 0
    for key, last in stamps(seconds, image):  # in time order: the last is the latest
        counts[key] += 1
        first = first or last
    infos = tuple(
        TopicInformation(t.name, t.type, t.serialization_format, QOS, "", counts[t.key])
        for t in TOPICS[: 3 if image else 2]
    )
    meta = BagMetadata(
        version=5 if humble else 8,
        storage_identifier=storage,
        duration_ns=last - first,
        starting_time_ns=first,
        message_count=counts.total(),
        topics_with_message_count=infos,
        relative_file_paths=(name,),
        files=(FileInformation(name, first, last - first, counts.total()),),
        ros_distro="" if humble else "jazzy",
    )
    version = 5 if humble else 8
    (output / "metadata.yaml").write_text(metadata_yaml(meta, version=version), encoding="utf-8")
    return output


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("output", type=Path)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--storage", choices=("mcap", "sqlite3"), default="mcap")
    parser.add_argument("--file", action="store_true", help="one storage file, no folder")
    parser.add_argument("--image", type=int, default=0, help="camera image width (0: none)")
    parser.add_argument("--humble", action="store_true", help="as Humble wrote it (sqlite3)")
    args = parser.parse_args()
    generate(
        args.output,
        seconds=args.seconds,
        storage=args.storage,
        folder=not args.file,
        image=args.image,
        humble=args.humble,
    )


if __name__ == "__main__":
    main()
