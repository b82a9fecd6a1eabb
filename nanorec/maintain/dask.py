"""Many recordings on a cluster: Dask dataframes per record kind, and batch conversion on a
`dask.distributed` client (the `[dask]` extra).

`read_kind(paths, kind)` is a lazy `dask.dataframe` with one partition per archive (local
paths, or URLs read in place by range requests: `s3://`, `gs://`, `https://`, see
`nanorec.archive.remote`; a pattern such as `"s3://bucket/*.nanover.zip"` is expanded by
listing). A partition reads its archive's index and the blocks of the kind's messages, never
a copy of the archive. Each partition
is `nanorec.outputs.arrow.table(recording, kind).to_pandas()`, with the `recording` column; an
archive without the kind gives an empty partition, so a kind some recordings lack (a CARLA
log without collisions, a bag without a topic) still reads as one frame.
`convert_many(sources, outdir, client)` runs `nanorec.maintain.batch` jobs as client tasks.

Pointing it at a real cluster: `client = distributed.Client("tcp://scheduler:8786")`, with
nanorec installed on every worker and the archives where the workers can read them (a shared
file system, or object storage with credentials in the workers' environment).
"""

from __future__ import annotations

import contextlib
import glob
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any, TypeAlias

from nanorec import registry
from nanorec.archive.remote import glob_urls
from nanorec.archive.urls import is_url
from nanorec.errors import UnknownNameError, UnsupportedError, UsageError
from nanorec.maintain.batch import Outcome, convert_one, is_done, plan, run_batch

#: A pandas DataFrame (pandas comes with the optional `dask` extra, its stubs do not).
PandasFrame: TypeAlias = Any
#: A lazy `dask.dataframe.DataFrame` (dask is optional and untyped: ignore_missing_imports).
DaskFrame: TypeAlias = Any
#: A `distributed.Client` (optional and untyped, as dask).
Client: TypeAlias = Any


def _dask() -> tuple[ModuleType, ModuleType]:
    try:
        import dask
        import dask.dataframe as dd
    except ImportError:
        raise UnsupportedError("this needs dask: pip install 'nanorec[dask]'") from None
    return dask, dd


def expand(urls: str | os.PathLike[str] | Sequence[str | os.PathLike[str]]) -> list[str]:
    """`urls` as a list of archives: one name, or a list, each a path, a URL or a pattern
    (`*`, `?`, `[...]`: local paths by `glob`, URLs by listing the store)."""
    names = [urls] if isinstance(urls, str | os.PathLike) else list(urls)
    out: list[str] = []
    for name in map(str, names):
        name = name.removeprefix("file://")
        if not glob.has_magic(name):
            out.append(name)
        elif is_url(name):
            out.extend(glob_urls(name))
        else:
            out.extend(sorted(glob.glob(name)))
    return out


def kind_frame(url: str, kind: str) -> PandasFrame:
    """One archive's `kind` table as a pandas DataFrame (one partition); `UnknownNameError`
    when the archive has no such kind."""
    frame = _frame(url, kind, whole=True)
    if frame is None:
        raise UnknownNameError(f"{url} has no kind {kind!r}")
    return frame


def _frame(url: str, kind: str, *, whole: bool) -> PandasFrame | None:
    """`kind`'s table of `url` as pandas (or only its first batch), None when the archive
    has no such kind."""
    from nanorec.outputs.arrow import iter_batches, table

    with registry.open(url) as recording:
        if kind not in recording.table_kinds():
            return None
        if whole:
            return table(recording, kind).to_pandas()
        return next(iter_batches(recording, kind)).to_pandas()


def read_kind(
    urls: str | os.PathLike[str] | Sequence[str | os.PathLike[str]], kind: str
) -> DaskFrame:
    """A lazy `dask.dataframe.DataFrame` of `kind` over `urls` (see `expand`), one partition
    per archive.

    The columns come from the first archive with rows of `kind` (read eagerly, up to its
    first batch, for Dask's metadata); an archive without the kind is an empty partition."""
    dask, dd = _dask()
    names = expand(urls)
    if not names:
        raise UsageError(f"read_kind needs at least one archive ({urls!s} names none)")
    meta = _meta(names, kind)
    parts = [dask.delayed(_partition)(name, kind, meta) for name in names]
    return dd.from_delayed(parts, meta=meta)


def _meta(names: list[str], kind: str) -> PandasFrame:
    """Dask's metadata: the (empty) frame of the first archive with rows of `kind`, else of
    the first that has the kind; no archive having it is a mistaken name."""
    first = None
    for name in names:
        frame = _frame(name, kind, whole=False)
        if frame is not None and len(frame):
            return frame.iloc[:0]
        if frame is not None and first is None:
            first = frame.iloc[:0]
    if first is None:
        raise UnknownNameError(f"none of the {len(names)} archives has kind {kind!r}")
    return first


def _partition(url: str, kind: str, meta: PandasFrame) -> PandasFrame:
    """`kind`'s table in `meta`'s columns and types: empty when the archive lacks the kind;
    a table whose columns differ is an error naming the archive, never a silent drop."""
    frame = _frame(url, kind, whole=True)
    if frame is None or not len(frame):
        return meta.copy()
    if list(frame.columns) != list(meta.columns) or list(frame.dtypes) != list(meta.dtypes):
        extra = [column for column in frame.columns if column not in meta.columns]
        with contextlib.suppress(ValueError, TypeError):
            if not extra:
                return frame.reindex(columns=meta.columns).astype(meta.dtypes.to_dict())
        raise UsageError(
            f"{url}: its {kind!r} table has columns {dict(frame.dtypes.astype(str))}, "
            f"others {dict(meta.dtypes.astype(str))}; read them apart"
        )
    return frame


def convert_many(
    sources: Sequence[str | os.PathLike[str]],
    outdir: str | os.PathLike[str],
    client: Client | None = None,
    *,
    force: bool = False,
    options: Mapping[str, object] | None = None,
) -> list[Outcome]:
    """Convert every recording of `sources` into `outdir` (as `nanorec convert -o`), as tasks
    on `client` (a `distributed.Client`), or here in a process pool without one."""
    jobs, outcomes = plan(sources, Path(outdir))
    if client is None:
        return outcomes + list(run_batch(jobs, workers=2, force=force, options=options))
    todo = [job for job in jobs if force or not is_done(job)]
    outcomes += [Outcome(job, "skipped") for job in jobs if job not in todo]
    futures = client.map(convert_one, todo, options=dict(options or {}), fmt=None, pure=False)
    outcomes += client.gather(futures)
    return outcomes


__all__ = ["convert_many", "expand", "kind_frame", "read_kind"]
