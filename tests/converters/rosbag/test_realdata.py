"""The real bags of ../shared/realdata/rosbag: `rosbag info` texts byte for byte (plain,
--freq, --yaml, as ROS's own code printed them with TZ=UTC), every message decoded as
`rosbags` decodes it, and the index read as `rosbags` reads it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nanorec import registry
from nanorec.cli import _register, app
from tests.conftest import REALDATA, REPO, make_runner
from tests.converters.rosbag.bags import ours, plain

FOLDER = REALDATA / "rosbag"
BAGS = sorted(FOLDER.glob("*.bag")) if FOLDER.is_dir() else []
pytestmark = [
    pytest.mark.realdata,
    pytest.mark.skipif(not BAGS, reason="../shared/realdata/rosbag absent"),
]
runner = make_runner()


@pytest.mark.parametrize("bag", BAGS, ids=lambda p: p.stem)
@pytest.mark.parametrize(
    ("options", "suffix"),
    [
        ([], ".rosbag-info.txt"),
        (["--freq"], ".rosbag-info-freq.txt"),
        (["--yaml"], ".rosbag-info.yaml"),
    ],
)
def test_info_is_rosbags_text(
    bag: Path, options: list[str], suffix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _register()
    monkeypatch.chdir(REPO)
    given = f"../shared/realdata/rosbag/{bag.name}"  # the path as ROS was given it
    result = runner.invoke(app, ["info", given, "--tz", "UTC", *options])
    assert result.exit_code == 0, result.stderr
    assert result.stdout == (FOLDER / (bag.stem + suffix)).read_text()


@pytest.mark.parametrize("bag", BAGS, ids=lambda p: p.stem)
def test_info_of_the_archive_matches(bag: Path, tmp_path: Path) -> None:
    """The archive knows what the bag's index says (counts, chunks, times): the same text
    but for the path line."""
    _register()
    archive = tmp_path / "a.nanover.zip"
    registry.get("rosbag").convert(bag, archive)
    expected = (FOLDER / (bag.stem + ".rosbag-info-freq.txt")).read_text().splitlines()
    result = runner.invoke(app, ["info", str(archive), "--tz", "UTC", "--freq"])
    assert result.stdout.splitlines()[1:] == expected[1:]


@pytest.mark.parametrize("bag", BAGS, ids=lambda p: p.stem)
def test_every_message_decodes_as_rosbags_does(bag: Path) -> None:
    rosbag1 = pytest.importorskip("rosbags.rosbag1")
    typesys = pytest.importorskip("rosbags.typesys")
    store = typesys.get_typestore(typesys.Stores.EMPTY)
    theirs = []
    with rosbag1.Reader(bag) as reader:
        for connection in reader.connections:
            store.register(typesys.get_types_from_msg(connection.msgdef.data, connection.msgtype))
        for connection, stamp, raw in reader.messages():
            value = store.deserialize_ros1(raw, connection.msgtype)
            theirs.append((stamp, connection.topic, plain(value), raw))
    with registry.open(bag) as recording:
        mine = [
            (
                recording.time_ns(n),
                recording.kind_of(n),
                ours(recording.decode(n)),
                recording.raw(n),
            )
            for n in range(len(recording))
        ]
    assert sorted(mine, key=repr) == sorted(theirs, key=repr)


@pytest.mark.parametrize(
    ("name", "topic", "count"),
    [
        ("rosbagjs_example", "/turtle1/pose", 1344),
        ("waypoint_follower_test", "/steer_planner", 212),
    ],
)
def test_play_of_a_topic_plays_only_it(name: str, topic: str, count: int) -> None:
    """Without -s rosbag play replays no latched message (of /rosout, /tf_static...)."""
    _register()
    bag = FOLDER / f"{name}.bag"
    result = runner.invoke(app, ["play", str(bag), "-i", "-q", "--topics", topic])
    assert result.exit_code == 0, result.stderr
    topics = [json.loads(line)["topic"] for line in result.stdout.splitlines()]
    assert topics == [topic] * count
