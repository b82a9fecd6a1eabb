"""Columnar tables: Arrow from any recording, Parquet files DuckDB, Polars and pandas read."""

from __future__ import annotations

from pathlib import Path

import pytest

import nanorec
from nanorec.cli import _register, app
from tests.conftest import SAMPLES, make_runner
from tests.converters.fake_plugin import sample

pa = pytest.importorskip("pyarrow")
SAMPLE = SAMPLES / "carla-0.9.10-0.9.13-additional-town03.log"


def test_a_table_holds_every_row_typed() -> None:
    with nanorec.open(SAMPLE) as rec:
        rows = list(rec.rows("position"))
        table = rec.table("position")
    assert table.num_rows == len(rows) and table.column_names[:4] == [
        "recording",
        "frame",
        "index",
        "time",
    ]
    assert pa.types.is_floating(table.schema.field("location_x").type)
    assert pa.types.is_integer(table.schema.field("id").type)
    assert table.column("recording")[0].as_py() == SAMPLE.name
    assert table.column("location_x").to_pylist() == [row["location_x"] for row in rows]


def test_parquet_for_duckdb_polars_pandas(tmp_path: Path) -> None:
    duckdb = pytest.importorskip("duckdb")
    polars = pytest.importorskip("polars")
    out = tmp_path / "tables"
    _register()
    result = make_runner().invoke(
        app, ["export", str(SAMPLE), "--format", "parquet", "-o", str(out)]
    )
    assert result.exit_code == 0, result.stderr
    with nanorec.open(SAMPLE) as rec:
        positions = sum(1 for _ in rec.rows("position"))
        spawns = list(rec.rows("event_add"))
    files = sorted(p.name for p in out.glob("*.parquet"))
    assert "position.parquet" in files and "event_add.parquet" in files
    count = duckdb.sql(f"select count(*) from '{out}/position.parquet'").fetchall()[0][0]
    assert count == positions
    frame = polars.read_parquet(out / "event_add.parquet")
    assert frame.height == len(spawns) and frame["recording"][0] == SAMPLE.name
    assert pa.parquet.read_table(out / "position.parquet").to_pandas()["id"].dtype.kind in "iu"
    again = make_runner().invoke(app, ["export", str(SAMPLE), "-F", "parquet", "-o", str(out)])
    assert again.exit_code == 2 and "--force" in again.stderr


def test_any_format_tabulates(tmp_path: Path) -> None:
    with nanorec.open(sample(tmp_path / "x.fakelog", 20)) as rec:
        table = rec.table("line")
    assert table.num_rows == 20 and "kind" in table.column_names


def test_many_recordings_in_one_query(tmp_path: Path) -> None:
    duckdb = pytest.importorskip("duckdb")
    _register()
    for path in sorted(SAMPLES.glob("carla-*town03.log")):
        out = tmp_path / path.stem
        result = make_runner().invoke(app, ["export", str(path), "-F", "parquet", "-o", str(out)])
        assert result.exit_code == 0, result.stderr
    rows = duckdb.sql(
        f"select recording, count(*) from '{tmp_path}/*/collision.parquet' group by recording"
    ).fetchall()
    assert len(rows) == len(list(SAMPLES.glob("carla-*town03.log")))


def test_text_that_was_not_utf8_is_valid_json_as_key_and_value() -> None:
    """A string holding a file's non-UTF-8 bytes (surrogate-escaped) is base64 as a value
    and `\\xNN`-escaped as a key: the line encodes as UTF-8 and parses."""
    import json

    from nanorec.outputs.tables import dumps

    line = dumps({"map\udce9": "name\udce9"})
    assert json.loads(line.encode("utf-8")) == {"map\\xe9": {"base64": "bmFtZek="}}


def test_flatten_takes_any_mapping_and_keeps_empty_maps_as_values() -> None:
    """`flatten` tests common leaf types before `Mapping` (speed): any mapping still nests."""
    from types import MappingProxyType

    import numpy as np

    from nanorec.outputs.tables import flatten

    data = np.arange(3)
    row = {"a": MappingProxyType({"b": 1, "c": {"d": None}}), "e": {}, "f": [1], "g": data}
    flat = flatten(row, "x.")
    assert list(flat) == ["x.a.b", "x.a.c.d", "x.e", "x.f", "x.g"]
    assert flat["x.e"] == {} and flat["x.g"] is data
