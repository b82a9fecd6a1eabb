"""CARLA's columnar tables (`converters/carla/columns.py`, the Parquet export's path) hold
exactly what `rows` gives, one dict a row, on real files and on every sample."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

import nanorec
from nanorec.outputs.arrow import column_batches, export_parquet, iter_batches
from nanorec.selection import Selection
from tests.conftest import SAMPLES, carla_realdata

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

FILES = [*sorted(SAMPLES.glob("carla-*.log")), *carla_realdata()]


def _same(a: Any, b: Any) -> bool:
    return a == b or (
        isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b)
    )


def assert_same_table(old: Any, new: Any, kind: str) -> None:
    """Same schema, same values (NaN equal to NaN), whatever the batches."""
    assert old.schema == new.schema, kind
    if old.combine_chunks().equals(new.combine_chunks()):
        return
    a, b = old.to_pylist(), new.to_pylist()
    assert len(a) == len(b), kind
    for number, (x, y) in enumerate(zip(a, b, strict=True)):
        assert x.keys() == y.keys() and all(_same(x[k], y[k]) for k in x), (kind, number)


def columnar(rec: Any, selection: Selection | None = None) -> dict[str, Any]:
    batches: dict[str, list[Any]] = {}
    for kind, batch in column_batches(rec, rec.table_kinds(), selection):
        batches.setdefault(kind, []).append(batch)
    return {kind: pa.Table.from_batches(found) for kind, found in batches.items()}


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_columns_equal_rows(path: Path) -> None:
    with nanorec.open(path) as rec:
        new = columnar(rec)
        for kind in rec.table_kinds():
            old = pa.Table.from_batches(list(iter_batches(rec, kind)))
            if kind not in new:
                assert old.num_rows == 0, kind
                continue
            assert_same_table(old, new[kind], kind)


def test_a_cut_and_the_parquet_files(tmp_path: Path) -> None:
    """A time range keeps the same rows as `rows`; the files read back as those tables."""
    path = SAMPLES / "carla-0.9.16-town03.log"
    selection = Selection.make(start=1.0, end=3.0, kinds=["position", "anim_vehicle_wheels"])
    with nanorec.open(path) as rec:
        lines = export_parquet(rec, tmp_path / "out", selection=selection)
        assert len(lines) == 2
        for kind in ("position", "anim_vehicle_wheels"):
            old = pa.Table.from_batches(list(iter_batches(rec, kind, selection)))
            assert old.num_rows
            assert_same_table(old, pq.read_table(tmp_path / "out" / f"{kind}.parquet"), kind)


def test_progress_counts_frames(tmp_path: Path) -> None:
    seen: list[tuple[int, int]] = []
    with nanorec.open(SAMPLES / "carla-0.9.16-town03.log") as rec:
        export_parquet(
            rec, tmp_path / "out", progress=lambda done, total: seen.append((done, total))
        )
        frames = len(rec)
    assert seen and seen[-1] == (frames, frames)
    assert [done for done, _ in seen] == sorted(done for done, _ in seen)
