"""The map painter's fast paths against slow reference implementations kept here: textures
by table lookup against the float32 arithmetic per cell, and painting only the pixels a
known texel touches against blending the whole bounding box; on random textures and poses,
and on every real pbstream's submaps (skipped when ../shared/realdata is absent)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from numpy.typing import NDArray

from nanorec import registry
from nanorec.converters.pbstream import grid, rosmap
from nanorec.converters.pbstream.grid import Texture, rigid
from nanorec.converters.pbstream.recording import PbstreamRecording
from tests.conftest import REALDATA

SAMPLES = Path(__file__).resolve().parents[3] / "samples"
FOLDER = REALDATA / "pbstream"
REAL = sorted(FOLDER.glob("*.pbstream")) if FOLDER.is_dir() else []


def reference_texture(
    crop: NDArray[np.int32], low: float, high: float
) -> tuple[NDArray[np.uint8], NDArray[np.uint8]]:
    """(value, alpha) computed per cell in float32, as grid.texture_of did before its tables."""
    p = np.clip(grid.probability(crop, low, high), grid.MIN_PROBABILITY, grid.MAX_PROBABILITY)
    value, alpha = grid._log_odds_delta(np.where(crop > 0, p, np.float32(0.5)).astype(np.float32))
    unknown = crop == 0
    value[unknown], alpha[unknown] = 0, 0
    return value, alpha


def reference_paint(
    canvas: NDArray[np.int32],
    texture: Texture,
    corners: NDArray[np.float64],
    origin: NDArray[np.float64],
    res: float,
) -> None:
    """Every pixel of the bounding box sampled and blended (rosmap._paint before it skipped
    the pixels no known texel touches)."""
    h, rs = texture.to_world, texture.resolution
    ctm = (
        np.array([[1 / res, 0, origin[0]], [0, 1 / res, origin[1]], [0, 0, 1]])
        @ np.array([[h[1, 0], -h[1, 1], h[0, 3]], [h[0, 0], -h[0, 1], -h[1, 3]], [0, 0, 1]])
        @ np.array([[rs, 0, 0], [0, rs, 0], [0, 0, 1]])
    )
    fixed = np.rint(np.linalg.inv(ctm) * 65536).astype(np.int64)
    x0, y0 = np.floor(corners.min(axis=0)).astype(int) - 1
    x1, y1 = np.ceil(corners.max(axis=0)).astype(int) + 1
    x0, y0 = max(x0, 0), max(y0, 0)
    x1, y1 = min(x1, canvas.shape[1]), min(y1, canvas.shape[0])
    if x0 >= x1 or y0 >= y1:
        return
    vx = np.arange(x0, x1, dtype=np.int64) * 65536 + 0x8000
    vy = np.arange(y0, y1, dtype=np.int64)[:, None] * 65536 + 0x8000
    sx = ((fixed[0, 0] * vx + (fixed[0, 1] * vy + (fixed[0, 2] * 65536 + 0x8000))) >> 16) - 0x8000
    sy = ((fixed[1, 0] * vx + (fixed[1, 1] * vy + (fixed[1, 2] * 65536 + 0x8000))) >> 16) - 0x8000
    dx, dy = ((sx >> 9) & 0x7F) << 1, ((sy >> 9) & 0x7F) << 1
    height, width = texture.value.shape
    padded = np.zeros((2, height + 4, width + 4), np.int64)
    padded[0, 2:-2, 2:-2], padded[1, 2:-2, 2:-2] = texture.value, texture.alpha
    iy, ix = np.clip(sy >> 16, -2, height) + 2, np.clip(sx >> 16, -2, width) + 2
    total = (
        padded[:, iy, ix] * (256 - dx) * (256 - dy)
        + padded[:, iy, ix + 1] * dx * (256 - dy)
        + padded[:, iy + 1, ix] * (256 - dx) * dy
        + padded[:, iy + 1, ix + 1] * dx * dy
    )
    value, alpha = total[0] >> 16, total[1] >> 16
    region = canvas[y0:y1, x0:x1]
    product = region * (255 - alpha) + 0x80
    region[...] = np.minimum(value + (((product >> 8) + product) >> 8), 255)


def random_texture(rng: np.random.Generator) -> Texture:
    height, width = (int(n) for n in rng.integers(1, 60, 2))
    cells = rng.integers(0, 1 << 15, (height, width)).astype(np.int32)
    cells[rng.random((height, width)) < rng.random()] = 0  # unknown: transparent
    value, alpha = reference_texture(cells, 0.1, 0.9)
    yaw = float(rng.uniform(-math.pi, math.pi))
    pose = (*rng.uniform(-3, 3, 2), 0.0, 0.0, 0.0, math.sin(yaw / 2), math.cos(yaw / 2))
    return Texture(value, alpha, float(rng.choice([0.05, 0.1])), rigid(pose))


def test_tables_equal_the_float_arithmetic() -> None:
    rng = np.random.default_rng(32)
    codes = np.arange(1 << 15, dtype=np.int32).reshape(128, 256)
    for low, high in ((0.1, 0.9), (0.12, 0.85), *rng.uniform([0.01, 0.5], [0.5, 0.99], (8, 2))):
        value, alpha = grid._cell_tables(float(low), float(high))
        expected_value, expected_alpha = reference_texture(codes, float(low), float(high))
        assert np.array_equal(value.reshape(128, 256), expected_value)
        assert np.array_equal(alpha.reshape(128, 256), expected_alpha)


def _paint_all(textures: list[Texture], painter: object) -> NDArray[np.int32]:
    """Textures painted in turn as rosmap.assemble lays them out, with `painter`."""
    res = textures[0].resolution
    device = [rosmap._corners(t) * np.array([1.0, -1.0]) / res for t in textures]
    points = np.concatenate(device).astype(np.float32)
    low, high = points.min(axis=0), points.max(axis=0)
    size = np.ceil(high - low).astype(np.int64) + 2 * rosmap.PADDING
    origin = (-low + np.float32(rosmap.PADDING)).astype(np.float64)
    canvas = np.full((int(size[1]), int(size[0])), rosmap.UNKNOWN, np.int32)
    for texture, corners in zip(textures, device, strict=True):
        painter(canvas, texture, corners + origin, origin, res)  # type: ignore[operator]
    return canvas


@pytest.mark.parametrize("seed", range(12))
def test_paint_equals_the_whole_box_reference(seed: int) -> None:
    rng = np.random.default_rng(seed)
    textures = [random_texture(rng) for _ in range(int(rng.integers(1, 6)))]
    fast = _paint_all(textures, rosmap._paint)
    assert np.array_equal(fast, _paint_all(textures, reference_paint))
    assert (fast != rosmap.UNKNOWN).any()


def test_a_fully_transparent_texture_paints_nothing() -> None:
    zero = np.zeros((7, 9), np.uint8)
    texture = Texture(zero, zero, 0.05, np.eye(4))
    canvas = _paint_all([texture], rosmap._paint)
    assert (canvas == rosmap.UNKNOWN).all()


def _sources() -> list[Path]:
    return [*sorted(SAMPLES.glob("pbstream-*.pbstream")), *REAL]


@pytest.mark.parametrize("path", _sources(), ids=lambda p: p.name)
def test_files_paint_as_the_reference(path: Path) -> None:
    """Each file's submaps painted by both paths give the same canvas."""
    with registry.open(path) as rec:
        assert isinstance(rec, PbstreamRecording)
        found, _ = rosmap.textures(rec)
    if not found:
        pytest.skip(f"{path.name} has no 2D submap to draw")
    fast = _paint_all(found, rosmap._paint)
    assert np.array_equal(fast, _paint_all(found, reference_paint))


@pytest.mark.parametrize("scale", [1.0, 3.7, 1e-3, 5e4])
def test_samples_split_into_column_and_row_terms_equal_pixmans_formula(scale: float) -> None:
    """`rosmap._samples` (a column term plus a row term, int32 where it fits) against the
    16.16 product per pixel that `_paint` computed before, on random transforms (the last
    scale needs int64)."""
    rng = np.random.default_rng(int(scale * 10))
    for _ in range(20):
        fixed = np.rint(rng.uniform(-scale, scale, (3, 3)) * 65536).astype(np.int64)
        fixed[:2, 2] = rng.integers(-(1 << 20), 1 << 20, 2)
        x0, y0 = (int(v) for v in rng.integers(0, 500, 2))
        x1, y1 = x0 + int(rng.integers(1, 80)), y0 + int(rng.integers(1, 80))
        vx = np.arange(x0, x1, dtype=np.int64) * 65536 + 0x8000
        vy = np.arange(y0, y1, dtype=np.int64)[:, None] * 65536 + 0x8000
        expected = [
            ((f[0] * vx + (f[1] * vy + (f[2] * 65536 + 0x8000))) >> 16) - 0x8000 for f in fixed[:2]
        ]
        got = rosmap._samples(fixed, x0, x1, y0, y1, 1000)
        for mine, theirs in zip(got, expected, strict=True):
            assert mine.shape == theirs.shape
            assert np.array_equal(mine.astype(np.int64), theirs)
        assert got[0].dtype == (np.int64 if scale > 1e4 else np.int32)
