"""`nanorec info|cat|play|export x.bag` end to end."""

from __future__ import annotations

import csv
import io
import itertools
import json
from pathlib import Path

import pytest

from nanorec.cli import _register, app
from tests.conftest import make_runner
from tests.converters.rosbag.bags import make_bag

runner = make_runner()


@pytest.fixture(autouse=True)
def _registered() -> None:
    _register()


def test_info_json_and_yaml(tmp_path: Path) -> None:
    bag = make_bag(tmp_path, seconds=2.0)
    result = runner.invoke(app, ["info", str(bag), "--json"])
    facts = json.loads(result.stdout)
    topics = {t["topic"]: t for t in facts["topics"]}
    assert topics["/rosout"]["connections"] == 2 and topics["/map_name"]["latching"]
    assert topics["/imu"]["frequency"] == pytest.approx(100.0, rel=0.05)
    assert facts["indexed"] and facts["messages"] == sum(t["messages"] for t in facts["topics"])
    text = runner.invoke(app, ["info", str(bag), "--yaml"]).stdout
    assert "indexed: True\n" in text and "    - topic: /imu\n" in text


def test_info_of_a_crashed_bag_says_so(tmp_path: Path) -> None:
    bag = make_bag(tmp_path, "run.bag.active", crash=True, cut=2)
    result = runner.invoke(app, ["info", str(bag), "--tz", "UTC"])
    assert result.exit_code == 0 and "unindexed" in result.stderr
    assert result.stdout.startswith(f"path:        {bag}\nversion:     2.0\n")


def test_cat_csv_of_a_topic(tmp_path: Path) -> None:
    bag = make_bag(tmp_path, seconds=1.0)
    result = runner.invoke(app, ["cat", str(bag), "--topic", "/odom", "--format", "csv"])
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert len(rows) == 50
    assert {"time_ns", "time_s", "pose.pose.position.x", "header.stamp.secs"} <= set(rows[0])
    assert int(rows[1]["time_ns"]) >= int(rows[0]["time_ns"])
    every = runner.invoke(app, ["cat", str(bag)]).stdout.splitlines()
    assert {json.loads(line)["topic"] for line in every} >= {"/imu", "/empty", "/camera/image"}
    wrong = runner.invoke(app, ["cat", str(bag), "--topic", "/nope"])
    assert wrong.exit_code == 2 and wrong.stderr.startswith("nanorec: ")


def test_play_immediate_with_start_replays_latched(tmp_path: Path) -> None:
    bag = make_bag(tmp_path, seconds=2.0)
    result = runner.invoke(
        app,
        [
            "play",
            str(bag),
            "-i",
            "-q",
            "-s",
            "1",
            "-u",
            "0.5",
            "--topics",
            "/odom",
            "--topics",
            "/map_name",
        ],
    )
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert lines[0]["topic"] == "/map_name"  # latched, from before the start
    odom = [line for line in lines if line["topic"] == "/odom"]
    assert 24 <= len(odom) <= 26
    assert all(a["time_ns"] <= b["time_ns"] for a, b in itertools.pairwise(odom))


def test_export_cut_and_repair(tmp_path: Path) -> None:
    bag = make_bag(tmp_path, seconds=2.0)
    out = tmp_path / "odom.bag"
    result = runner.invoke(app, ["export", str(bag), "-o", str(out), "--topic", "/odom"])
    assert result.exit_code == 0 and "a cut of 100 messages" in result.stdout
    again = runner.invoke(app, ["export", str(bag), "-o", str(out), "--topic", "/odom"])
    assert again.exit_code != 0  # never overwritten without --force
    crashed = make_bag(tmp_path, "run.bag.active", crash=True)
    fixed = tmp_path / "fixed.bag"
    result = runner.invoke(app, ["export", str(crashed), "-o", str(fixed), "--format", "indexed"])
    assert result.exit_code == 0
    info = runner.invoke(app, ["info", str(fixed), "--json"])
    assert json.loads(info.stdout)["indexed"] and "unindexed" not in info.stderr


def test_empty_bag(tmp_path: Path) -> None:
    from nanorec.converters.rosbag.writer import BagWriter

    bag = tmp_path / "empty.bag"
    with bag.open("wb") as stream:
        BagWriter(stream).close()
    assert bag.stat().st_size == 4117
    result = runner.invoke(app, ["info", str(bag)])
    assert (result.stdout, result.stderr) == (
        f"path:    {bag}\nversion: 2.0\nsize:    4.0 KB\n",
        "",
    )
    same = tmp_path / "same.bag"
    assert runner.invoke(app, ["export", str(bag), "-o", str(same)]).exit_code == 0
    assert same.read_bytes() == bag.read_bytes()
