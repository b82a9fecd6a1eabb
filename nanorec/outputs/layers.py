"""The layers a `Viewable` recording draws (see `nanorec.contract.Viewable`), built and
checked in one place so every format hands `nanorec view` the same shapes.

A layer is a dict: `kind`, `name`, flat numpy columns (one value per item, world metres, x
right and y up, yaw in degrees counter-clockwise from +x) and, where items have a `class`,
`classes` (the names the indices point into). `lines` hold their vertices in `x`/`y` and
one row per polyline in `starts` (the offset of its first vertex) and `class`; `markers`
carry `label` (a list of str, one per marker). `check_layer` is what the contract suite and
the tests ask of every layer.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from nanorec.errors import FormatError

__all__ = [
    "EMPTY_BOUNDS",
    "KINDS",
    "bounds_of",
    "boxes",
    "check_layer",
    "check_view",
    "image",
    "lines",
    "markers",
    "points",
]

#: Each kind's columns: those of one row per item (all the same length), then the others.
KINDS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "boxes": (("x", "y", "yaw", "length", "width", "class"), ()),
    "points": (("x", "y", "class"), ()),
    "lines": (("starts", "class"), ("x", "y")),
    "markers": (("x", "y"), ()),
    "image": ((), ()),
}

Floats = npt.ArrayLike


def _f64(values: Floats) -> npt.NDArray[np.float64]:
    return np.ascontiguousarray(values, dtype=np.float64).reshape(-1)


def _classes(values: npt.ArrayLike) -> npt.NDArray[np.int32]:
    return np.ascontiguousarray(values, dtype=np.int32).reshape(-1)


def boxes(
    name: str,
    x: Floats,
    y: Floats,
    yaw: Floats,
    length: Floats,
    width: Floats,
    classes_of: npt.ArrayLike,
    classes: Sequence[str],
) -> dict[str, Any]:
    """Rectangles centred on (x, y), `length` along the heading `yaw` (degrees), `width`
    across it (m)."""
    return {
        "kind": "boxes",
        "name": name,
        "x": _f64(x),
        "y": _f64(y),
        "yaw": np.ascontiguousarray(yaw, dtype=np.float32).reshape(-1),
        "length": np.ascontiguousarray(length, dtype=np.float32).reshape(-1),
        "width": np.ascontiguousarray(width, dtype=np.float32).reshape(-1),
        "class": _classes(classes_of),
        "classes": list(classes),
    }


def points(
    name: str, x: Floats, y: Floats, classes_of: npt.ArrayLike, classes: Sequence[str]
) -> dict[str, Any]:
    return {
        "kind": "points",
        "name": name,
        "x": _f64(x),
        "y": _f64(y),
        "class": _classes(classes_of),
        "classes": list(classes),
    }


def lines(
    name: str,
    polylines: Sequence[npt.NDArray[np.float64]],
    classes_of: npt.ArrayLike,
    classes: Sequence[str],
) -> dict[str, Any]:
    """Polylines, each an (n, 2) array of x, y (m), flattened: `starts` are the offsets of
    each one's first vertex in `x`/`y`."""
    sizes = [len(line) for line in polylines]
    every = (
        np.concatenate([np.asarray(line, np.float64).reshape(-1, 2) for line in polylines])
        if polylines
        else np.zeros((0, 2))
    )
    starts = np.zeros(len(sizes), np.int64)
    if sizes:
        starts[1:] = np.cumsum(sizes)[:-1]
    return {
        "kind": "lines",
        "name": name,
        "x": _f64(every[:, 0]),
        "y": _f64(every[:, 1]),
        "starts": starts,
        "class": _classes(classes_of),
        "classes": list(classes),
    }


def markers(name: str, x: Floats, y: Floats, labels: Sequence[str]) -> dict[str, Any]:
    return {"kind": "markers", "name": name, "x": _f64(x), "y": _f64(y), "label": list(labels)}


def image(
    name: str,
    mime: str,
    data: bytes,
    extent: tuple[float, float, float, float] | None = None,
) -> dict[str, Any]:
    """A picture: in the world over `extent` [x0, y0, x1, y1] (m), else beside it."""
    layer: dict[str, Any] = {"kind": "image", "name": name, "mime": mime, "data": bytes(data)}
    if extent is not None:
        layer["extent"] = [float(v) for v in extent]
    return layer


#: The bounds of a view that has nothing to place: ten metres around the origin.
EMPTY_BOUNDS = (-5.0, -5.0, 5.0, 5.0)


def bounds_of(layers: Sequence[Mapping[str, Any]]) -> list[float]:
    """[x0, y0, x1, y1] around every finite x, y of `layers` (`EMPTY_BOUNDS` for none)."""
    xs = [layer["x"] for layer in layers if "x" in layer]
    ys = [layer["y"] for layer in layers if "y" in layer]
    x = np.concatenate(xs) if xs else np.zeros(0)
    y = np.concatenate(ys) if ys else np.zeros(0)
    keep = np.isfinite(x) & np.isfinite(y)
    if not keep.any():
        return list(EMPTY_BOUNDS)
    x, y = x[keep], y[keep]
    return [float(x.min()), float(y.min()), float(x.max()), float(y.max())]


def check_layer(layer: Mapping[str, Any]) -> None:
    """Raise `FormatError` saying what is wrong with `layer`: an unknown kind, a missing or
    non-numeric column, columns of different lengths, a class index out of `classes`, lines
    whose `starts` do not rise inside the vertices, an image without bytes."""
    kind, name = layer.get("kind"), layer.get("name")
    if kind not in KINDS or not isinstance(name, str):
        raise FormatError(f"a layer needs a known kind and a name, not {kind!r}, {name!r}")
    per_item, others = KINDS[kind]
    where = f"{kind} layer {name!r}"
    for column in (*per_item, *others):
        values = layer.get(column)
        if not isinstance(values, np.ndarray) or values.ndim != 1 or values.dtype.kind not in "iuf":
            raise FormatError(f"{where}: column {column!r} is not a flat numeric array")
    lengths = {column: len(layer[column]) for column in per_item}
    if len(set(lengths.values())) > 1:
        raise FormatError(f"{where}: columns of different lengths {lengths}")
    if kind == "lines" and len(layer["x"]) != len(layer["y"]):
        raise FormatError(f"{where}: {len(layer['x'])} x but {len(layer['y'])} y")
    if "class" in per_item:
        classes = layer.get("classes")
        found = layer["class"]
        if not isinstance(classes, list) or not all(isinstance(c, str) for c in classes):
            raise FormatError(f"{where}: classes must be a list of names")
        if len(found) and (int(found.min()) < 0 or int(found.max()) >= len(classes)):
            raise FormatError(f"{where}: a class index is outside its {len(classes)} classes")
    if kind == "lines":
        starts = layer["starts"]
        if len(starts) and (
            int(starts[0]) != 0
            or bool(np.any(np.diff(starts) < 0))
            or int(starts[-1]) > len(layer["x"])
        ):
            raise FormatError(f"{where}: starts must rise from 0 within the vertices")
    if kind == "markers":
        labels = layer.get("label")
        if not isinstance(labels, list) or len(labels) != len(layer["x"]):
            raise FormatError(f"{where}: one label per marker")
    if kind == "image":
        if not isinstance(layer.get("mime"), str) or not isinstance(layer.get("data"), bytes):
            raise FormatError(f"{where}: an image needs a mime and its bytes")
        extent = layer.get("extent")
        if extent is not None and (len(extent) != 4 or not all(np.isfinite(extent))):
            raise FormatError(f"{where}: extent must be four finite numbers")


def check_view(view: Mapping[str, Any], *, overview: bool) -> None:
    """`check_layer` for each layer of what `view_overview` (`overview`) or `view_scene`
    returned, and its bounds or follow point."""
    if overview:
        bounds = view.get("bounds")
        if not isinstance(bounds, list) or len(bounds) != 4 or not all(np.isfinite(bounds)):
            raise FormatError(f"an overview needs bounds [x0, y0, x1, y1], not {bounds!r}")
        if bounds[0] > bounds[2] or bounds[1] > bounds[3]:
            raise FormatError(f"bounds {bounds} are upside down")
    follow = view.get("follow")
    if follow is not None and (len(follow) != 2 or not all(np.isfinite(follow))):
        raise FormatError(f"follow must be [x, y], not {follow!r}")
    layers = view.get("layers")
    if not isinstance(layers, list):
        raise FormatError("a view needs a list of layers")
    for layer in layers:
        check_layer(layer)
