"""Pixels as a PNG file's bytes, with the standard library alone (zlib).

`nanorec view` shows a camera frame or a map as an `image` layer: a browser decodes PNG, and
the formats that draw such pictures (a bag's `sensor_msgs/Image`, a pbstream's occupancy
grid) need one encoder that does not pull in matplotlib or Pillow (the plot extra).
"""

from __future__ import annotations

import struct
import zlib

import numpy as np
import numpy.typing as npt

from nanorec.errors import UsageError

__all__ = ["PNG_MIME", "png_bytes"]

PNG_MIME = "image/png"
_SIGNATURE = b"\x89PNG\r\n\x1a\n"
#: PNG colour types by channel count: grey, grey + alpha, RGB, RGBA.
_COLOUR_TYPE = {1: 0, 2: 4, 3: 2, 4: 6}
#: The largest picture encoded (pixels): a bigger one is an error, not a huge allocation.
MAX_PIXELS = 1 << 26


def png_bytes(pixels: npt.NDArray[np.uint8], *, level: int = 6) -> bytes:
    """`pixels` (height, width) grey or (height, width, channels) with 1-4 channels, uint8,
    row 0 at the top, as a PNG file. Raises `UsageError` for another shape or dtype, or a
    picture of more than `MAX_PIXELS` pixels."""
    image = np.asarray(pixels)
    if image.ndim == 2:
        image = image[:, :, None]
    if image.ndim != 3 or image.dtype != np.uint8 or image.shape[2] not in _COLOUR_TYPE:
        raise UsageError(f"a PNG takes (h, w[, 1-4]) uint8 pixels, not {image.shape} {image.dtype}")
    height, width, channels = image.shape
    if not height or not width or height * width > MAX_PIXELS:
        raise UsageError(f"cannot encode a {width} x {height} picture as PNG")
    rows = np.zeros((height, 1 + width * channels), np.uint8)  # filter byte 0 (None) per row
    rows[:, 1:] = image.reshape(height, width * channels)
    header = struct.pack(">IIBBBBB", width, height, 8, _COLOUR_TYPE[channels], 0, 0, 0)
    return b"".join(
        (
            _SIGNATURE,
            _chunk(b"IHDR", header),
            _chunk(b"IDAT", zlib.compress(rows.tobytes(), level)),
            _chunk(b"IEND", b""),
        )
    )


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
