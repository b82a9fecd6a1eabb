"""Columnar tables of any recording: Arrow in memory, Parquet on disk (the `[tables]` extra).

A recording's `rows(kind, selection)` become Arrow record batches of `BATCH_ROWS` rows, so a
table of any size streams into Parquet with bounded memory, one file per record kind, each
with a `recording` column (the source file's name) so tables of many recordings can be read
as one by DuckDB, Polars, pandas or Dask. Scalars keep their types (integers, floats, bools,
strings); byte strings and `uint8[]` arrays (image data) are Arrow binary, other 1-D numeric
arrays Arrow lists of their type (`arrow_columns`); other nested values (maps, lists,
arrays of more dimensions) are stored as JSON text, which every one of those tools can
unpack. A batch and a row group end at `BATCH_ROWS` rows or `BATCH_BYTES` bytes of
payload, whichever comes first: a table of large images streams too.
"""

from __future__ import annotations

import contextlib
import importlib.abc
import os
import shutil
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np

from nanorec.errors import OutputExistsError, UnsupportedError
from nanorec.outputs.arrow_columns import column, payload_size, retyped, transpose
from nanorec.selection import Selection

if TYPE_CHECKING:
    import pyarrow as pa
    from pyarrow import RecordBatch

    from nanorec.contract import Recording

#: Rows per Arrow record batch of `iter_batches`; the least rows of a Parquet row group.
BATCH_ROWS = 65536
#: Bytes of arrays and byte strings that end a batch (and a row group) before `BATCH_ROWS`.
BATCH_BYTES = 64 * 2**20

#: `progress(done, total)`: how far an export is (`nanorec.cli.inputs.progress_bar`).
Progress = Callable[[int, int], None]


def _pyarrow() -> Any:
    try:
        import pyarrow
        import pyarrow.parquet
    except ImportError:
        raise UnsupportedError("tables need pyarrow: pip install 'nanorec[tables]'") from None
    return pyarrow


class _NoPandas(importlib.abc.MetaPathFinder):
    """Refuses `import pandas` (see `without_pandas`)."""

    def find_spec(
        self, name: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> None:
        if name == "pandas" or name.startswith("pandas."):
            raise ImportError("pandas is not needed here (nanorec.outputs.arrow.without_pandas)")
        return None


@contextlib.contextmanager
def without_pandas() -> Iterator[None]:
    """pyarrow imports pandas (~0.5 CPU s) the first time it converts Python values, only
    to ask whether they are pandas objects, and tries again at each conversion until it
    succeeds. While this is active, and pandas was not imported before, the import fails
    at once and pyarrow goes on without it: for the CLI, where no value is a pandas object
    and the import would be a large part of exporting a small file."""
    if "pandas" in sys.modules:
        yield
        return
    finder = _NoPandas()
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        sys.meta_path.remove(finder)


def recording_name(recording: Recording) -> str:
    """The source file's name as recorded at conversion (else the archive's name)."""
    source = (recording.reader.description or {}).get("source") or {}
    name = source.get("name")
    return str(name) if name else recording.reader.path.name


def iter_batches(
    recording: Recording, kind: str, selection: Selection | None = None
) -> Iterator[pa.RecordBatch]:
    """`kind`'s rows as record batches sharing the first batch's schema (from `rows`, one
    dict a row: what any recording gives; see `export_parquet` for the columnar path)."""
    pa = _pyarrow()
    name = recording_name(recording)
    schema = None
    rows: list[dict[str, Any]] = []

    def batch() -> RecordBatch:
        nonlocal schema
        columns = transpose(rows)
        columns.pop("recording", None)  # the recording's own column comes first, always
        arrays = {"recording": pa.repeat(pa.scalar(name, pa.string()), len(rows))}
        arrays.update((key, column(pa, values)) for key, values in columns.items())
        if schema is None:
            schema = pa.schema(
                [
                    pa.field(key, pa.string() if pa.types.is_null(a.type) else a.type)
                    for key, a in arrays.items()
                ]
            )
        return pa.RecordBatch.from_arrays(
            [retyped(pa, arrays.get(f.name), f, len(rows), kind) for f in schema], schema=schema
        )

    size = 0
    for row in recording.rows(kind, selection):
        rows.append(row)
        size += payload_size(row)
        if len(rows) >= BATCH_ROWS or size >= BATCH_BYTES:
            yield batch()
            rows, size = [], 0
    if rows or schema is None:
        yield batch()


def table(recording: Recording, kind: str, selection: Selection | None = None) -> pa.Table:
    """`kind`'s rows as one Arrow table (`.to_pandas()`, `polars.from_arrow(...)`)."""
    pa = _pyarrow()
    if callable(getattr(recording, "table_columns", None)):
        batches = [
            batch for _kind, batch in column_batches(recording, [kind], selection) if batch.num_rows
        ]
        if batches:
            return pa.Table.from_batches(batches)
    return pa.Table.from_batches(list(iter_batches(recording, kind, selection)))


def column_batches(
    recording: Any,
    kinds: list[str],
    selection: Selection | None = None,
    progress: Progress | None = None,
) -> Iterator[tuple[str, pa.RecordBatch]]:
    """`(kind, batch)` from a recording's optional columnar producer
    `table_columns(kinds, selection, progress)`, which reads the recording once for every
    kind and yields `(kind, {column: numpy array or list of values})` in runs; each run
    becomes one batch with the types `iter_batches` would infer from the same values (the
    kind's first run fixes its schema, as there). Several kinds interleave."""
    pa = _pyarrow()
    name = recording_name(recording)
    schemas: dict[str, Any] = {}
    for kind, columns in recording.table_columns(kinds, selection, progress):
        rows = len(next(iter(columns.values()))) if columns else 0
        arrays = {"recording": pa.repeat(pa.scalar(name, pa.string()), rows)}
        arrays.update((key, _array(pa, values)) for key, values in columns.items())
        schema = schemas.get(kind)
        if schema is None:
            schema = schemas[kind] = pa.schema(
                [
                    pa.field(key, pa.string() if pa.types.is_null(a.type) else a.type)
                    for key, a in arrays.items()
                ]
            )
        yield (
            kind,
            pa.RecordBatch.from_arrays(
                [retyped(pa, arrays.get(f.name), f, rows, kind) for f in schema], schema=schema
            ),
        )


def _array(pa: Any, values: Any) -> Any:
    """One column: an Arrow array or a numpy array as it is (a masked one with its nulls;
    an object array holds only text and None), a list of Python values as `iter_batches`
    converts them."""
    if isinstance(values, pa.Array):
        return values
    if isinstance(values, np.ma.MaskedArray):
        return pa.array(values.data, mask=np.ma.getmaskarray(values))
    if isinstance(values, np.ndarray):  # numbers, or text and None (object arrays)
        return pa.array(values)
    return column(pa, list(values))


def export_parquet(
    recording: Any,
    output: Path,
    *,
    selection: Selection | None = None,
    overwrite: bool = False,
    progress: Progress | None = None,
) -> list[str]:
    """Write one `<kind>.parquet` per record kind with rows into directory `output`
    (complete or not at all: built beside it, then renamed); returns report lines.

    A recording with `table_columns` (CARLA, ROS 2 bags) is read once for all its tables,
    column-wise (`column_batches`); any other one kind after kind through `rows`. Row
    groups hold at least `BATCH_ROWS` rows or `BATCH_BYTES` bytes (the last of a table
    less). `progress(done, total)` is called as the export goes (in the producer's units:
    frames, messages, else tables)."""
    pa = _pyarrow()
    if output.exists() and not overwrite:
        raise OutputExistsError(f"{output} exists; pass overwrite=True to replace it")
    kinds = [
        kind
        for kind in recording.table_kinds()
        if selection is None or not selection.kinds or kind in selection.kinds
    ]
    partial = output.with_name(f".{output.name}.partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir()
    tables = _Tables(pa, partial)
    try:
        if callable(getattr(recording, "table_columns", None)):
            for kind, batch in column_batches(recording, kinds, selection, progress):
                tables.add(kind, batch)
        else:
            for done, kind in enumerate(kinds, 1):
                for batch in iter_batches(recording, kind, selection):
                    tables.add(kind, batch)
                tables.flush(kind)
                if progress is not None:
                    progress(done, len(kinds))
        counts = tables.close()
        _publish(partial, output)
    except BaseException:
        tables.abort()
        shutil.rmtree(partial, ignore_errors=True)
        raise
    lines = [f"{output / _file(kind)}: {counts[kind]} rows" for kind in kinds if kind in counts]
    return lines or [f"{output}: no rows"]


class _Tables:
    """One open `ParquetWriter` per kind with rows; batches wait until `BATCH_ROWS` rows or
    `BATCH_BYTES` bytes are there and are written as one row group (large writes, whatever
    the runs; bounded memory, whatever the rows)."""

    def __init__(self, pa: ModuleType, folder: Path) -> None:
        self.pa = pa
        self.folder = folder
        self.writers: dict[str, Any] = {}
        self.pending: dict[str, list[Any]] = {}
        self.sizes: dict[str, tuple[int, int]] = {}  # kind -> pending (rows, bytes)
        self.counts: dict[str, int] = {}

    def add(self, kind: str, batch: RecordBatch) -> None:
        if not batch.num_rows:
            return
        self.pending.setdefault(kind, []).append(batch)
        self.counts[kind] = self.counts.get(kind, 0) + batch.num_rows
        rows, size = self.sizes.get(kind, (0, 0))
        rows, size = rows + batch.num_rows, size + batch.nbytes
        self.sizes[kind] = rows, size
        if rows >= BATCH_ROWS or size >= BATCH_BYTES:
            self.flush(kind)

    def flush(self, kind: str) -> None:
        self.sizes.pop(kind, None)
        pending = self.pending.pop(kind, [])
        if not pending:
            return
        writer = self.writers.get(kind)
        if writer is None:
            path = self.folder / _file(kind)
            schema = pending[0].schema
            # Dictionaries pay for text (the `recording` column, names), not for numbers:
            # tried on every column they double the writing time and grow the files.
            text = [f.name for f in schema if self.pa.types.is_string(f.type)]
            # Byte payloads (an image's pixels) get no min/max statistics: useless for them,
            # and Parquet's writer builds them from copies of the cell (~4x a big one).
            stats = [f.name for f in schema if not self.pa.types.is_binary(f.type)]
            writer = self.writers[kind] = self.pa.parquet.ParquetWriter(
                path, schema, use_dictionary=text, write_statistics=stats
            )
        table = self.pa.Table.from_batches(pending)
        writer.write_table(table, row_group_size=max(table.num_rows, 1))

    def close(self) -> dict[str, int]:
        for kind in list(self.pending):
            self.flush(kind)
        for writer in self.writers.values():
            writer.close()
        self.writers.clear()
        return self.counts

    def abort(self) -> None:
        for writer in self.writers.values():
            with contextlib.suppress(Exception):
                writer.close()
        self.writers.clear()


def _file(kind: str) -> str:
    return f"{_safe(kind)}.parquet"


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


__all__ = [
    "BATCH_BYTES",
    "BATCH_ROWS",
    "Progress",
    "column_batches",
    "export_parquet",
    "iter_batches",
    "recording_name",
    "table",
    "without_pandas",
]
