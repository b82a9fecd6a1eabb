"""Dask: a dataframe per record kind over many archives, and conversion as cluster tasks."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import nanorec
from tests.conftest import SAMPLES

pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    with (
        distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False) as cluster,
        distributed.Client(cluster) as client,
    ):
        yield client


def test_convert_on_a_cluster_then_query_across(client: Any, tmp_path: Path) -> None:
    from nanorec.dask import convert_many, read_kind

    source = tmp_path / "in"
    source.mkdir()
    for path in sorted(SAMPLES.glob("carla-*.log")):
        shutil.copy(path, source / path.name)
    outcomes = convert_many([source], tmp_path / "out", client)
    assert {o.status for o in outcomes} == {"converted"} and len(outcomes) == 6
    again = convert_many([source], tmp_path / "out", client)
    assert {o.status for o in again} == {"skipped"}
    archives = sorted(str(p) for p in (tmp_path / "out").glob("*.nanover.zip"))
    frame = read_kind(archives, "collision")
    assert frame.npartitions == len(archives)
    counts = frame.groupby("recording").size().compute(scheduler=client.get)
    expected = {}
    for path in archives:
        with nanorec.open(path) as rec:
            expected[rec.summary()["path"]] = sum(1 for _ in rec.rows("collision"))
    assert int(counts.sum()) == sum(expected.values())
