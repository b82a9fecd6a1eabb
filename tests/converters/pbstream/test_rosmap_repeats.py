"""A submap record repeated (the bridge bench repeats a real file's records) is decoded once
and its run painted at once (`rosmap._paint(times=k)`, OVER raised to a power by table):
the map equals painting every record's texture in turn, on random textures and canvases, on
the samples repeated and on every real pbstream repeated (skipped when ../shared/realdata is
absent)."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from numpy.typing import NDArray

from nanorec import registry
from nanorec.converters.pbstream import rosmap
from nanorec.converters.pbstream.recording import PbstreamRecording
from tests.conftest import REALDATA, SAMPLES
from tests.converters.pbstream.test_rosmap_fast import _paint_all, random_texture

FOLDER = REALDATA / "pbstream"
REAL = sorted(FOLDER.glob("*.pbstream")) if FOLDER.is_dir() else []


def repeated(source: Path, out: Path, copies: int, keep: int) -> Path:
    """`source` with its records from number `keep` on (after the header, pose graph and
    options) written `copies` times, as bench_convert builds its large pbstream."""
    data = source.read_bytes()
    records, pos = [], 8
    while pos < len(data):
        (size,) = struct.unpack_from("<Q", data, pos)
        records.append(data[pos : pos + 8 + size])
        pos += 8 + size
    out.write_bytes(data[:8] + b"".join(records[:keep]) + b"".join(records[keep:]) * copies)
    return out


def _one_by_one(canvas: NDArray[np.int32], texture: Any, *args: Any) -> None:
    rosmap._paint(canvas, texture, *args)


@pytest.mark.parametrize("times", [1, 2, 3, 7, 39, 64, 300])
@pytest.mark.parametrize("seed", range(4))
def test_painting_a_run_equals_painting_each(seed: int, times: int) -> None:
    rng = np.random.default_rng(100 + seed)
    texture = random_texture(rng)
    res = texture.resolution
    corners = rosmap._corners(texture) * np.array([1.0, -1.0]) / res
    low = corners.min(axis=0)
    origin = (-low + rosmap.PADDING).astype(np.float64)
    size = np.ceil(corners.max(axis=0) - low).astype(np.int64) + 2 * rosmap.PADDING
    start = rng.integers(0, 256, (int(size[1]), int(size[0]))).astype(np.int32)
    run, each = start.copy(), start.copy()
    rosmap._paint(run, texture, corners + origin, origin, res, times)
    for _ in range(times):
        rosmap._paint(each, texture, corners + origin, origin, res)
    assert np.array_equal(run, each)
    assert times == 1 or not np.array_equal(run, start)


def _sources() -> list[Any]:
    """The samples and the real files, those over 1 MB marked slow (seconds each)."""
    return [
        *sorted(SAMPLES.glob("pbstream-*.pbstream")),
        *(
            pytest.param(p, marks=pytest.mark.slow) if p.stat().st_size > 1 << 20 else p
            for p in REAL
        ),
    ]


@pytest.mark.parametrize("path", _sources(), ids=lambda p: getattr(p, "name", str(p)))
def test_repeated_submaps_decode_once_and_paint_as_each(
    path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[str] = []
    decode = rosmap.decode_record

    def counted(kind: str, entry: dict[str, Any]) -> dict[str, Any]:
        calls.append(kind)
        body: dict[str, Any] = decode(kind, entry)
        return body

    monkeypatch.setattr(rosmap, "decode_record", counted)
    with registry.open(path) as rec:
        assert isinstance(rec, PbstreamRecording)
        submaps = rec.numbers_of("submap")
    distinct, keep = len(submaps), int(submaps[0]) if len(submaps) else 0
    copies = 3
    with registry.open(repeated(path, tmp_path / "x3.pbstream", copies, keep)) as rec:
        assert isinstance(rec, PbstreamRecording)
        assert len(rec.numbers_of("submap")) == copies * distinct
        calls.clear()
        found, _ = rosmap.textures(rec)
        assert len(calls) == distinct
        if not found:
            pytest.skip(f"{path.name} has no 2D submap to draw")
        assert len(found) % copies == 0
        image = rosmap.assemble(rec).image
    expected = _paint_all(found, _one_by_one)  # every record's texture painted in turn
    assert np.array_equal(image, expected.astype(np.uint8))
