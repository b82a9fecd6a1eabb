"""The 2D occupancy grid of a pbstream, assembled from its submaps at their optimised poses,
and written as a ROS map_server map (PGM + YAML) the way `cartographer_pbstream_to_ros_map`
writes it.

Cartographer paints each submap texture over a canvas of red 0.5 with premultiplied OVER:
free cells add their value (saturating at 255), occupied cells scale the canvas down by
their alpha; the PGM is the red channel (128 = never observed). Here every canvas pixel
takes the nearest texture cell (Cairo filters bilinearly, so edges can differ by a pixel).
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from nanorec.atomic import atomic_output
from nanorec.errors import UsageError

from .decode import decode_record
from .grid import Texture, texture_3d, texture_of
from .records import SUBMAP
from .trajectory import pose7

if TYPE_CHECKING:
    from .recording import PbstreamRecording

PADDING = 5  # pixels around the map, as Cartographer's painter adds
UNKNOWN = 128


@dataclass(frozen=True)
class OccupancyMap:
    """`image` (height, width) uint8, row 0 at the top (+y up in the world), `resolution`
    metres per pixel, `origin` the world x, y of the bottom-left corner (map_server's)."""

    image: NDArray[np.uint8]
    resolution: float
    origin: tuple[float, float]
    submaps: int
    skipped: int

    def probability(self) -> NDArray[np.float64]:
        """Occupancy probability per pixel (NaN where never observed), map_server's reading
        of the PGM with negate 0."""
        p = (255.0 - self.image.astype(np.float64)) / 255.0
        return np.where(self.image == UNKNOWN, np.nan, p)


def textures(rec: PbstreamRecording) -> tuple[list[Texture], int]:
    """The 2D probability-grid textures in SubmapId order, and how many submaps were
    skipped (no grid, TSDF, 3D, or no pose in the pose graph)."""
    poses: dict[tuple[int, int], tuple[float, ...]] = {}
    for tid, submaps in rec.pose_graph().submaps.items():
        for row, index in enumerate(submaps.index.tolist()):
            poses[(tid, index)] = (
                *submaps.translation[row].tolist(),
                *submaps.rotation[row].tolist(),
            )
    found: list[tuple[tuple[int, int], Texture]] = []
    skipped = 0
    for number in rec.numbers_of(SUBMAP).tolist():
        _, entry = rec.entry(number)
        key = (int(entry.get("trajectory_id", 0)), int(entry.get("index", 0)))
        body = decode_record(SUBMAP, entry)
        two, three = body.get("submap_2d"), body.get("submap_3d")
        texture = None
        if two is not None and "grid" in two and key in poses:
            texture = texture_of(two["grid"], pose7(two.get("local_pose")), poses[key])
        elif three is not None and "low_resolution_hybrid_grid" in three and key in poses:
            high = three.get("high_resolution_hybrid_grid")
            texture = None if high is None else texture_3d(high, poses[key])
        if texture is None:
            skipped += 1
        else:
            found.append((key, texture))
    found.sort(key=lambda item: item[0])
    return [texture for _, texture in found], skipped


def _corners(texture: Texture) -> NDArray[np.float64]:
    """World x, y of the texture's four corners."""
    w, h = texture.width * texture.resolution, texture.height * texture.resolution
    uv = np.array([[0, 0], [w, 0], [0, h], [w, h]], np.float64)
    local = np.stack([-uv[:, 1], -uv[:, 0], np.zeros(4), np.ones(4)])
    corners: NDArray[np.float64] = (texture.to_world @ local)[:2].T
    return corners


def assemble(rec: PbstreamRecording, resolution: float | None = None) -> OccupancyMap:
    """Paint every 2D submap into one grid (`resolution`: default the first submap's)."""
    found, skipped = textures(rec)
    if not found:
        raise UsageError("the pbstream holds no 2D submap grid with a pose: no map to draw")
    res = float(resolution or found[0].resolution)
    if not (math.isfinite(res) and res > 0):
        raise UsageError(f"the resolution must be > 0, not {res}")
    device = [_corners(t) * np.array([1.0, -1.0]) / res for t in found]
    allpoints = np.concatenate(device)
    low, high = allpoints.min(axis=0), allpoints.max(axis=0)
    size = np.ceil(high - low).astype(np.int64) + 2 * PADDING
    if int(size[0]) * int(size[1]) > 1 << 30:
        raise UsageError(f"a {size[0]} x {size[1]} map is too large: choose a coarser resolution")
    origin = -low + PADDING
    canvas = np.full((int(size[1]), int(size[0])), UNKNOWN, np.int32)
    for texture, corners in zip(found, device, strict=True):
        _paint(canvas, texture, corners + origin, origin, res)
    image = canvas.astype(np.uint8)
    map_origin = (-float(origin[0]) * res, (float(origin[1]) - image.shape[0]) * res)
    return OccupancyMap(image, res, map_origin, len(found), skipped)


def _paint(
    canvas: NDArray[np.int32],
    texture: Texture,
    corners: NDArray[np.float64],
    origin: NDArray[np.float64],
    res: float,
) -> None:
    x0, y0 = np.floor(corners.min(axis=0)).astype(int)
    x1, y1 = np.ceil(corners.max(axis=0)).astype(int)
    x0, y0 = max(x0, 0), max(y0, 0)
    x1, y1 = min(x1, canvas.shape[1]), min(y1, canvas.shape[0])
    if x0 >= x1 or y0 >= y1:
        return
    px, py = np.meshgrid(np.arange(x0, x1) + 0.5, np.arange(y0, y1) + 0.5)
    world_x = (px - origin[0]) * res
    world_y = -(py - origin[1]) * res
    rotation = texture.to_world[:2, :2]
    shift = texture.to_world[:2, 3]
    inv = np.linalg.inv(rotation)
    a = inv[0, 0] * (world_x - shift[0]) + inv[0, 1] * (world_y - shift[1])
    b = inv[1, 0] * (world_x - shift[0]) + inv[1, 1] * (world_y - shift[1])
    col = np.floor(-b / texture.resolution).astype(np.int64)
    row = np.floor(-a / texture.resolution).astype(np.int64)
    inside = (col >= 0) & (col < texture.width) & (row >= 0) & (row < texture.height)
    value = np.zeros(col.shape, np.int32)
    alpha = np.zeros(col.shape, np.int32)
    value[inside] = texture.value[row[inside], col[inside]]
    alpha[inside] = texture.alpha[row[inside], col[inside]]
    region = canvas[y0:y1, x0:x1]
    product = region * (255 - alpha) + 128
    scaled = (product + (product >> 8)) >> 8  # pixman's exact division by 255
    painted = np.minimum(value + scaled, 255)
    drawn = inside & ((value > 0) | (alpha > 0))
    region[drawn] = painted[drawn]


@dataclass(frozen=True)
class RosMapExport:
    pgm: Path
    yaml: Path
    size: int
    sha256: str
    submaps: int
    details: dict[str, Any]


def export_ros_map(
    rec: PbstreamRecording,
    output: str | Path,
    *,
    resolution: float | None = None,
    overwrite: bool = False,
) -> RosMapExport:
    """Write `<stem>.pgm` and `<stem>.yaml` (`output` is the stem; a .pgm/.yaml suffix is
    dropped), as `cartographer_pbstream_to_ros_map -map_filestem` does."""
    grid = assemble(rec, resolution)
    stem = Path(output)
    if stem.suffix in (".pgm", ".yaml"):
        stem = stem.with_suffix("")
    pgm, yaml = stem.with_name(stem.name + ".pgm"), stem.with_name(stem.name + ".yaml")
    height, width = grid.image.shape
    header = f"P5\n# Cartographer map; {grid.resolution:.6f} m/pixel\n{width} {height}\n255\n"
    data = header.encode("ascii") + grid.image.tobytes()
    text = (
        f"image: {pgm.name}\nresolution: {grid.resolution:.6f}\n"
        f"origin: [{grid.origin[0]:.6f}, {grid.origin[1]:.6f}, 0.0]\n"
        "negate: 0\noccupied_thresh: 0.65\nfree_thresh: 0.196\n"
    )
    with atomic_output(pgm, overwrite=overwrite) as stream:
        stream.write(data)
    with atomic_output(yaml, overwrite=overwrite) as stream:
        stream.write(text.encode("ascii"))
    return RosMapExport(
        pgm,
        yaml,
        len(data),
        hashlib.sha256(data).hexdigest(),
        grid.submaps,
        {
            "yaml": str(yaml),
            "width": width,
            "height": height,
            "resolution": grid.resolution,
            "origin": list(grid.origin),
            "submaps_skipped": grid.skipped,
        },
    )


__all__ = ["OccupancyMap", "RosMapExport", "assemble", "export_ros_map", "textures"]
