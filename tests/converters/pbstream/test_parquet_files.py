"""`export_parquet` of a pbstream writes, file for file, the tables of the per-record
`rows` path (#39 item 9: the columnar readers are for speed only): read back with
`pyarrow.parquet.read_table`, each file equals the table `iter_batches` builds, schema
and values, for the generated file the bench measures (smaller), a 3D one, and every
real file (the large ones under `slow`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from nanorec.converters.pbstream.generate import Plan
from nanorec.converters.pbstream.recording import PbstreamRecording
from nanorec.outputs.arrow import _file, export_parquet, iter_batches
from tests.conftest import REALDATA
from tests.converters.pbstream.test_columnar import FILES, _generated, _opened, _write

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

REAL = [path for path in FILES if REALDATA in path.parents]


def _same_files(rec: PbstreamRecording, folder: Path) -> None:
    export_parquet(rec, folder)
    written = sorted(path.name for path in folder.glob("*.parquet"))
    expected = []
    for kind in rec.table_kinds():
        slow = pa.Table.from_batches(list(iter_batches(rec, kind)))
        if not slow.num_rows:
            continue
        expected.append(_file(kind))
        table = pq.read_table(folder / _file(kind))
        assert table.schema.equals(slow.schema), (kind, table.schema, slow.schema)
        assert table.equals(slow), kind
    assert written == sorted(expected)


@pytest.mark.parametrize(
    "plan",
    [
        Plan(trajectories=2, nodes=120, grid_cells=60),  # the bench's, smaller
        Plan(trajectories=1, nodes=40, nodes_per_submap=10, dims=3),
    ],
    ids=["2d", "3d"],
)
def test_generated_files_are_the_per_record_tables(plan: Plan, tmp_path: Path) -> None:
    path = _write(tmp_path / "g.pbstream", _generated(plan))
    with _opened(path, tmp_path) as rec:
        _same_files(rec, tmp_path / "tables")


@pytest.mark.parametrize(
    "path", [p for p in REAL if p.stat().st_size <= 1 << 20], ids=lambda p: p.name
)
def test_small_real_files_are_the_per_record_tables(path: Path, tmp_path: Path) -> None:
    with _opened(path, tmp_path) as rec:
        _same_files(rec, tmp_path / "tables")


@pytest.mark.slow
def test_large_real_files_are_the_per_record_tables(tmp_path: Path) -> None:
    large = [p for p in REAL if p.stat().st_size > 1 << 20]
    if not large:
        pytest.skip("no large real pbstream here")
    for path in large:
        with _opened(path, tmp_path) as rec:
            _same_files(rec, tmp_path / f"{path.stem}-tables")
