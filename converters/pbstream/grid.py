"""2D submap grids: decoded with numpy, turned into the (value, alpha) texture Cartographer
paints, and placed in the global frame (spec §8).

Cell `num_x_cells * j + i` of a grid lies at x = max.x - (j + 0.5) r, y = max.y - (i + 0.5) r
in the trajectory's local frame. Cartographer draws each submap's cells cropped to
`known_cells_box`, column i and row j, anchored at the crop's max corner, through
T = (pose graph submap pose) * (Submap2D local_pose)^-1 (`cartographer/io/submap_painter`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from nanorec.errors import FormatError

#: Cartographer's probability bounds (`probability_values.h`).
MIN_PROBABILITY = np.float32(0.1)
MAX_PROBABILITY = np.float32(0.9)


def _logit(p: NDArray[np.float32] | np.float32) -> Any:
    return np.log(p / (np.float32(1) - p))


_MIN_LOG_ODDS = _logit(MIN_PROBABILITY)
_MAX_LOG_ODDS = _logit(MAX_PROBABILITY)


def quaternion_matrix(q: NDArray[np.float64]) -> NDArray[np.float64]:
    """Rotation matrix of quaternion (x, y, z, w), normalised (a zero one gives identity)."""
    x, y, z, w = (float(v) for v in q)
    norm = x * x + y * y + z * z + w * w
    if norm == 0.0:
        return np.eye(3)
    s = 2.0 / norm
    return np.array(
        [
            [1 - s * (y * y + z * z), s * (x * y - z * w), s * (x * z + y * w)],
            [s * (x * y + z * w), 1 - s * (x * x + z * z), s * (y * z - x * w)],
            [s * (x * z - y * w), s * (y * z + x * w), 1 - s * (x * x + y * y)],
        ]
    )


def rigid(pose7: tuple[float, ...] | NDArray[np.float64]) -> NDArray[np.float64]:
    """A 4x4 homogeneous matrix from (x, y, z, qx, qy, qz, qw)."""
    values = np.asarray(pose7, np.float64)
    matrix = np.eye(4)
    matrix[:3, :3] = quaternion_matrix(values[3:])
    matrix[:3, 3] = values[:3]
    return matrix


def inverse(matrix: NDArray[np.float64]) -> NDArray[np.float64]:
    out = np.eye(4)
    out[:3, :3] = matrix[:3, :3].T
    out[:3, 3] = -matrix[:3, :3].T @ matrix[:3, 3]
    return out


@dataclass(frozen=True)
class Texture:
    """A submap's cropped texture: `value`/`alpha` (height, width) uint8 as Cartographer
    computes them, `resolution`, and `to_world`: texture metres (u along columns, v along
    rows) -> global frame, as a 4x4 matrix applied to (-v, -u, 0)."""

    value: NDArray[np.uint8]
    alpha: NDArray[np.uint8]
    resolution: float
    to_world: NDArray[np.float64]

    @property
    def width(self) -> int:
        return int(self.value.shape[1])

    @property
    def height(self) -> int:
        return int(self.value.shape[0])


def probability(cells: NDArray[np.int32], low: float, high: float) -> NDArray[np.float32]:
    """Occupancy probability of each cell value (1...32767 correspondence cost; 0 unknown
    gives NaN)."""
    scale = np.float32((np.float32(high) - np.float32(low)) / np.float32(32766))
    cost = cells.astype(np.float32) * scale + (np.float32(low) - scale)
    p = (np.float32(1) - cost).astype(np.float32)
    result: NDArray[np.float32] = np.where(cells > 0, p, np.float32(np.nan)).astype(np.float32)
    return result


def texture_of(
    grid: dict[str, Any], local_pose: tuple[float, ...], global_pose: tuple[float, ...]
) -> Texture | None:
    """The texture of a decoded Grid2D (None for a TSDF grid or one without limits)."""
    if "tsdf_2d" in grid:
        return None
    limits = grid.get("limits") or {}
    resolution = float(limits.get("resolution", 0.0))
    cells_limits = limits.get("cell_limits") or {}
    nx, ny = int(cells_limits.get("num_x_cells", 0)), int(cells_limits.get("num_y_cells", 0))
    if resolution <= 0 or nx <= 0 or ny <= 0:
        return None
    cells = np.asarray(grid.get("cells", np.zeros(0, np.int32)))
    if len(cells) != nx * ny:
        raise FormatError(f"a submap grid has {len(cells)} cells for {nx} x {ny}")
    table = cells.reshape(ny, nx)  # [j, i]
    box = grid.get("known_cells_box")
    if (
        box is None
        or box.get("min_x", 0) > box.get("max_x", 0)
        or box.get("min_y", 0) > box.get("max_y", 0)
    ):
        off_x = off_y = 0
        width = height = 1
    else:
        off_x, off_y = int(box.get("min_x", 0)), int(box.get("min_y", 0))
        width = int(box.get("max_x", 0)) - off_x + 1
        height = int(box.get("max_y", 0)) - off_y + 1
    crop = np.zeros((height, width), np.int32)
    j0, i0 = max(off_y, 0), max(off_x, 0)
    j1, i1 = min(off_y + height, ny), min(off_x + width, nx)
    if j0 < j1 and i0 < i1:
        crop[j0 - off_y : j1 - off_y, i0 - off_x : i1 - off_x] = table[j0:j1, i0:i1]
    crop &= 0x7FFF
    low = float(grid.get("min_correspondence_cost", 0.1)) or 0.1
    high = float(grid.get("max_correspondence_cost", 0.9)) or 0.9
    value_of, alpha_of = _cell_tables(low, high)
    value, alpha = value_of[crop], alpha_of[crop]
    max_vec = limits.get("max") or {}
    corner_x = float(max_vec.get("x", 0.0)) - resolution * off_y
    corner_y = float(max_vec.get("y", 0.0)) - resolution * off_x
    corner = np.eye(4)
    corner[:2, 3] = (corner_x, corner_y)
    to_world = rigid(global_pose) @ inverse(rigid(local_pose)) @ corner
    return Texture(value, alpha, resolution, to_world)


def _cell_tables(low: float, high: float) -> tuple[NDArray[np.uint8], NDArray[np.uint8]]:
    """(value, alpha) of each of the 32768 cell values (0: unknown, transparent): a texture
    is two lookups instead of the float32 arithmetic per cell."""
    codes = np.arange(1 << 15, dtype=np.int32)
    p = np.clip(probability(codes, low, high), MIN_PROBABILITY, MAX_PROBABILITY)
    value, alpha = _log_odds_delta(np.where(codes > 0, p, np.float32(0.5)).astype(np.float32))
    value[0], alpha[0] = 0, 0
    return value, alpha


def _round(values: Any) -> Any:
    """C's lround: halves away from zero (Cartographer's RoundToInt)."""
    return np.floor(np.abs(values) + 0.5) * np.sign(values)


def _log_odds_delta(p: NDArray[np.float32]) -> tuple[NDArray[np.uint8], NDArray[np.uint8]]:
    """(value, alpha) of probabilities, as `DrawToSubmapTexture` and `ComputePixelValues`."""
    scaled = (_logit(p) - _MIN_LOG_ODDS) * np.float32(254) / (_MAX_LOG_ODDS - _MIN_LOG_ODDS)
    delta = (128 - (_round(scaled) + 1)).astype(np.int32)
    value = np.where(delta > 0, delta, 0).astype(np.uint8)
    alpha = np.where(delta > 0, 0, -delta)
    return value, np.where((value == 0) & (alpha == 0), 1, alpha).astype(np.uint8)


def texture_3d(hybrid: dict[str, Any], global_pose: tuple[float, ...]) -> Texture | None:
    """The x-ray texture of a 3D submap's high-resolution hybrid grid, as Cartographer's
    `Submap3D::ToResponseProto` draws it: voxels of probability >= 0.501 in the global frame,
    per (x, y) column their z extent, count and probabilities."""
    resolution = np.float32(hybrid.get("resolution", 0.0))
    arrays = [np.asarray(hybrid.get(k, ())) for k in ("x_indices", "y_indices", "z_indices")]
    values = np.asarray(hybrid.get("values", ()), np.int64)
    if resolution <= 0 or not all(len(a) == len(values) for a in arrays):
        return None
    scale = np.float32((MAX_PROBABILITY - MIN_PROBABILITY) / np.float32(32766))
    probability = (values.astype(np.float32) * scale + (MIN_PROBABILITY - scale)).astype(np.float32)
    keep = (values > 0) & (probability >= np.float32(0.501))
    if not keep.any():
        return None
    centres = np.stack([a[keep] for a in arrays]).astype(np.float32) * resolution
    pose = rigid(global_pose).astype(np.float32)
    world = pose[:3, :3] @ centres + pose[:3, 3:4]
    ix, iy, iz = (_round(world / resolution)).astype(np.int64)
    row, col = ix.max() - ix, iy.max() - iy
    height, width = int(row.max()) + 1, int(col.max()) + 1
    if height * width > 1 << 26:
        return None
    flat = row * width + col
    count = np.bincount(flat, minlength=height * width)
    low = np.full(height * width, np.iinfo(np.int64).max)
    high = np.full(height * width, np.iinfo(np.int64).min)
    np.minimum.at(low, flat, iz)
    np.maximum.at(high, flat, iz)
    kept = probability[keep]
    total = np.bincount(flat, weights=kept, minlength=height * width).astype(np.float32)
    best = np.full(height * width, np.float32(0.5), np.float32)
    np.maximum.at(best, flat, kept)
    z_span = np.where(count > 0, high - low, 0).astype(np.float32)
    free = np.maximum(z_span - count, 0).astype(np.float32) * np.float32(0.15)
    weight = np.maximum(count + free, np.float32(1e-9)).astype(np.float32)
    average = np.clip((total + (1 - best) * free) / weight, MIN_PROBABILITY, MAX_PROBABILITY)
    value, alpha = _log_odds_delta(average.astype(np.float32))
    blank = z_span < 3
    value[blank], alpha[blank] = 0, 0
    corner = np.eye(4)
    corner[:3, 3] = (ix.max() * float(resolution), iy.max() * float(resolution), global_pose[2])
    return Texture(
        value.reshape(height, width), alpha.reshape(height, width), float(resolution), corner
    )


__all__ = [
    "Texture",
    "inverse",
    "probability",
    "quaternion_matrix",
    "rigid",
    "texture_3d",
    "texture_of",
]
