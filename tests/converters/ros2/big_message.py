"""A sqlite3 bag holding one honest, huge camera image in rosbag2's per-message zstd
compression (tests of #34 item 3): the generator's bag, its first image replaced by a
mono8 `sensor_msgs/msg/Image` of about `size` bytes of zeros, compressed a MiB at a time
(the file stays small; the frame declares its size, as rosbag2's ZSTD_compress writes it)."""

from __future__ import annotations

import math
import sqlite3
from pathlib import Path

from nanorec.converters.ros.ros2.generate import START_NS, image, write_db3


def image_frame(size: int) -> bytes:
    """The zstd frame of an Image of at least `size` bytes of zero pixels."""
    import zstandard

    width = math.isqrt(4 * size // 3) + 1
    pixels = width * (width * 3 // 4)
    head = image(START_NS, width, b"")
    compressor = zstandard.ZstdCompressor(level=3).compressobj(size=len(head) + pixels)
    pieces = [compressor.compress(head)]
    block = bytes(1 << 20)
    for at in range(0, pixels, len(block)):
        pieces.append(compressor.compress(block[: min(len(block), pixels - at)]))
    pieces.append(compressor.flush())
    return b"".join(pieces)


def big_image_db3(path: Path, size: int) -> Path:
    """The bag's storage file at `path` (see the module)."""
    write_db3(path, 0.5, 64)
    with sqlite3.connect(path) as db:
        db.execute(
            "UPDATE messages SET data = ? WHERE id = "
            "(SELECT min(id) FROM messages WHERE topic_id = 3)",
            (image_frame(size),),
        )
    db.close()
    return path
