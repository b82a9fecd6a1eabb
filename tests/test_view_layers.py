"""The layers every `Viewable` format hands `nanorec view` (`nanorec.outputs.layers`): built
in one shape and refused when malformed; pixels as PNG (`nanorec.outputs.png`)."""

from __future__ import annotations

import struct
import zlib
from typing import Any

import numpy as np
import pytest

from nanorec.errors import FormatError, UsageError
from nanorec.outputs import layers
from nanorec.outputs.png import png_bytes


def good() -> list[dict[str, Any]]:
    return [
        layers.boxes("a", [0, 1], [0, 1], [0, 90], [4, 4], [2, 2], [0, 1], ["car", "walker"]),
        layers.points("b", [0.5], [0.5], [0], ["x"]),
        layers.lines("c", [np.zeros((3, 2)), np.ones((2, 2))], [0, 0], ["path"]),
        layers.markers("d", [1.0], [2.0], ["hit"]),
        layers.image("e", "image/png", b"\x89PNG", (0, 0, 1, 1)),
    ]


def test_good_layers_pass() -> None:
    found = good()
    layers.check_view({"bounds": layers.bounds_of(found), "layers": found}, overview=True)
    assert layers.bounds_of(found) == [0.0, 0.0, 1.0, 2.0]
    assert found[2]["starts"].tolist() == [0, 3] and len(found[2]["x"]) == 5
    assert layers.bounds_of([]) == list(layers.EMPTY_BOUNDS)
    empty = layers.lines("none", [], [], [])
    layers.check_layer(empty)
    assert empty["x"].dtype == np.float64 and empty["starts"].dtype == np.int64


@pytest.mark.parametrize(
    ("layer", "problem"),
    [
        ({**good()[0], "kind": "circles"}, "known kind"),
        ({**good()[0], "y": np.zeros(3)}, "different lengths"),
        ({**good()[0], "x": ["a", "b"]}, "not a flat numeric"),
        ({**good()[0], "x": np.array(["a", "b"])}, "not a flat numeric"),
        ({**good()[0], "class": np.array([0, 2], np.int32)}, "outside its 2 classes"),
        ({**good()[0], "class": np.array([-1, 0], np.int32)}, "outside its 2 classes"),
        ({**good()[1], "classes": "x"}, "list of names"),
        ({**good()[2], "starts": np.array([0, 9])}, "starts must rise"),
        ({**good()[2], "starts": np.array([3, 0])}, "starts must rise"),
        ({**good()[2], "y": np.zeros(4)}, "5 x but 4 y"),
        ({**good()[3], "label": []}, "one label per marker"),
        ({**good()[4], "data": "text"}, "mime and its bytes"),
        ({**good()[4], "extent": [0, 0, 1, float("nan")]}, "four finite"),
    ],
)
def test_malformed_layers_are_refused(layer: dict[str, Any], problem: str) -> None:
    with pytest.raises(FormatError, match=problem):
        layers.check_layer(layer)


def test_views_need_bounds_and_finite_follow() -> None:
    with pytest.raises(FormatError, match="bounds"):
        layers.check_view({"layers": []}, overview=True)
    with pytest.raises(FormatError, match="upside down"):
        layers.check_view({"bounds": [1, 0, 0, 1], "layers": []}, overview=True)
    with pytest.raises(FormatError, match="follow"):
        layers.check_view({"layers": [], "follow": [0, float("inf")]}, overview=False)
    layers.check_view({"layers": [], "follow": [1.0, 2.0]}, overview=False)


def decode_png(data: bytes) -> tuple[int, int, int, bytes]:
    """(width, height, colour type, raw rows) of a PNG made of one IDAT."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    chunks = {}
    rest = data[8:]
    while rest:
        (size,) = struct.unpack(">I", rest[:4])
        kind, body = rest[4:8], rest[8 : 8 + size]
        assert struct.unpack(">I", rest[8 + size : 12 + size])[0] == zlib.crc32(kind + body)
        chunks[kind] = body
        rest = rest[12 + size :]
    width, height, depth, colour = struct.unpack(">IIBB", chunks[b"IHDR"][:10])
    assert depth == 8 and b"IEND" in chunks
    return width, height, colour, zlib.decompress(chunks[b"IDAT"])


@pytest.mark.parametrize(("channels", "colour"), [(None, 0), (1, 0), (2, 4), (3, 2), (4, 6)])
def test_png_round_trip(channels: int | None, colour: int) -> None:
    shape = (3, 5) if channels is None else (3, 5, channels)
    pixels = np.arange(np.prod(shape), dtype=np.uint8).reshape(shape)
    width, height, found, raw = decode_png(png_bytes(pixels))
    assert (width, height, found) == (5, 3, colour)
    rows = np.frombuffer(raw, np.uint8).reshape(3, -1)
    assert not rows[:, 0].any()  # filter None
    assert rows[:, 1:].tobytes() == pixels.tobytes()


def test_png_refuses_what_it_cannot_encode() -> None:
    with pytest.raises(UsageError):
        png_bytes(np.zeros((2, 2), np.float32))  # type: ignore[arg-type]
    with pytest.raises(UsageError):
        png_bytes(np.zeros((2, 2, 5), np.uint8))
    with pytest.raises(UsageError):
        png_bytes(np.zeros((0, 2), np.uint8))


def test_png_decodes_with_matplotlib() -> None:
    image = pytest.importorskip("matplotlib.image")
    import io

    pixels = (np.arange(60, dtype=np.uint8).reshape(4, 5, 3) * 4).astype(np.uint8)
    back = image.imread(io.BytesIO(png_bytes(pixels)), format="png")
    assert np.array_equal((np.asarray(back) * 255).round().astype(np.uint8), pixels)
