"""Columnar tables of any recording: Arrow in memory, Parquet on disk (the `[tables]` extra).

A recording's `rows(kind, selection)` become Arrow record batches of `BATCH_ROWS` rows, so a
table of any size streams into Parquet with bounded memory, one file per record kind, each
with a `recording` column (the source file's name) so tables of many recordings can be read
as one by DuckDB, Polars, pandas or Dask. Scalars keep their types (integers, floats, bools,
strings, bytes as binary); nested values (maps, lists) are stored as JSON text, which every
one of those tools can unpack.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nanorec.errors import OutputExistsError, UnsupportedError
from nanorec.selection import Selection
from nanorec.tables import dumps

if TYPE_CHECKING:
    import pyarrow as pa

#: Rows per Arrow record batch (and Parquet row group).
BATCH_ROWS = 65536


def _pyarrow() -> Any:
    try:
        import pyarrow
        import pyarrow.parquet
    except ImportError:
        raise UnsupportedError("tables need pyarrow: pip install 'nanorec[tables]'") from None
    return pyarrow


def recording_name(recording: Any) -> str:
    """The source file's name as recorded at conversion (else the archive's name)."""
    source = (recording.reader.description or {}).get("source") or {}
    name = source.get("name")
    return str(name) if name else recording.reader.path.name


def _cell(value: Any) -> Any:
    if isinstance(value, dict | list | tuple):
        return dumps(value)
    if hasattr(value, "tolist"):  # numpy scalars and arrays
        value = value.tolist()
        return dumps(value) if isinstance(value, list) else value
    return value


def iter_batches(
    recording: Any, kind: str, selection: Selection | None = None
) -> Iterator[pa.RecordBatch]:
    """`kind`'s rows as record batches sharing the first batch's schema."""
    pa = _pyarrow()
    name = recording_name(recording)
    schema = None
    rows: list[dict[str, Any]] = []

    def batch() -> Any:
        nonlocal schema
        columns: dict[str, list[Any]] = {"recording": [name] * len(rows)}
        for row in rows:
            for key in row:
                columns.setdefault(key, [])
        for key in list(columns)[1:]:
            columns[key] = [_cell(row.get(key)) for row in rows]
        if schema is None:
            table = pa.Table.from_pydict(columns)
            schema = pa.schema(
                [
                    field.with_type(pa.string()) if pa.types.is_null(field.type) else field
                    for field in table.schema
                ]
            )
        return pa.RecordBatch.from_pydict(
            {key: columns.get(key, [None] * len(rows)) for key in schema.names}, schema=schema
        )

    for row in recording.rows(kind, selection):
        rows.append(row)
        if len(rows) >= BATCH_ROWS:
            yield batch()
            rows = []
    if rows or schema is None:
        yield batch()


def table(recording: Any, kind: str, selection: Selection | None = None) -> pa.Table:
    """`kind`'s rows as one Arrow table (`.to_pandas()`, `polars.from_arrow(...)`)."""
    pa = _pyarrow()
    return pa.Table.from_batches(list(iter_batches(recording, kind, selection)))


def export_parquet(
    recording: Any, output: Path, *, selection: Selection | None = None, overwrite: bool = False
) -> list[str]:
    """Write one `<kind>.parquet` per record kind with rows into directory `output`
    (complete or not at all: built beside it, then renamed); returns report lines."""
    pa = _pyarrow()
    if output.exists() and not overwrite:
        raise OutputExistsError(f"{output} exists; pass overwrite=True to replace it")
    partial = output.with_name(f".{output.name}.partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir()
    lines = []
    try:
        for kind in recording.table_kinds():
            if selection is not None and selection.kinds and kind not in selection.kinds:
                continue
            path = partial / f"{_safe(kind)}.parquet"
            count = 0
            writer = None
            for batch in iter_batches(recording, kind, selection):
                if not batch.num_rows:
                    continue
                if writer is None:
                    writer = pa.parquet.ParquetWriter(path, batch.schema)
                writer.write_batch(batch)
                count += batch.num_rows
            if writer is not None:
                writer.close()
                lines.append(f"{output / path.name}: {count} rows")
        _publish(partial, output)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    return lines or [f"{output}: no rows"]


def _safe(kind: str) -> str:
    """A file name for a kind (topics hold slashes)."""
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in kind.strip("/")) or "_"


def _publish(partial: Path, output: Path) -> None:
    old = output.with_name(f".{output.name}.old")
    if output.exists():
        os.replace(output, old)
    os.replace(partial, output)
    with contextlib.suppress(FileNotFoundError):
        shutil.rmtree(old)


__all__ = ["BATCH_ROWS", "export_parquet", "iter_batches", "recording_name", "table"]
