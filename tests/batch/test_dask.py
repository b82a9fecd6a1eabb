"""Dask: a dataframe per record kind over many archives, and conversion as cluster tasks."""

from __future__ import annotations

import glob
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import nanorec
from nanorec.errors import UsageError
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
    from nanorec.maintain.dask import convert_many, read_kind

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


def test_a_kind_missing_from_some_archives(tmp_path: Path) -> None:
    """The first archive (a ROS bag) has no collision: its partition is empty, not a
    mismatch; a kind no archive has is a mistaken name."""
    from nanorec.maintain.dask import _partition, convert_many, read_kind

    names = [str(SAMPLES / "rosbag-robot.bag"), str(SAMPLES / "carla-0.9.16-town03.log")]
    outcomes = convert_many(names, str(tmp_path))  # str paths, as glob gives them
    assert [o.status for o in outcomes] == ["converted", "converted"]
    bag, log = (str(tmp_path / (Path(name).name + ".nanover.zip")) for name in names)
    archives = [bag, log]
    frame = read_kind(archives, "collision").compute()
    assert len(frame) == 5 and set(frame["recording"]) == {"carla-0.9.16-town03.log"}
    assert list(frame.columns)[:3] == ["recording", "frame", "index"]
    assert frame["actor1_id"].dtype == "int64"
    with pytest.raises(UsageError, match="none of the 2 archives has kind 'no such kind'"):
        read_kind(archives, "no such kind")
    other = frame.iloc[:0].rename(columns={"actor1_id": "first_actor"})
    with pytest.raises(UsageError, match="read them apart"):
        _partition(log, "collision", other)  # a table of other columns: never dropped


def test_collisions_across_the_real_carla_logs(realdata_dir: Path, tmp_path: Path) -> None:
    from nanorec.maintain.dask import convert_many, read_kind

    logs = sorted(glob.glob(str(realdata_dir / "carla" / "*")))
    outcomes = convert_many(logs, tmp_path)
    assert {o.status for o in outcomes} == {"converted"} and len(outcomes) == len(logs)
    archives = sorted(glob.glob(str(tmp_path / "*.nanover.zip")))
    frame = read_kind(archives, "collision").compute()
    expected = 0
    for path in archives:
        with nanorec.open(path) as rec:
            expected += sum(1 for _ in rec.rows("collision"))
    assert len(frame) == expected and "actor1_id" in frame.columns
