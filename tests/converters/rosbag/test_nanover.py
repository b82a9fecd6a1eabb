"""NanoVer's reader (its code, in tests/container/nanover_reference.py) opens a converted
bag: every message, its time, its topic key and payload."""

from __future__ import annotations

from pathlib import Path

from nanorec import registry
from tests.conftest import SAMPLES
from tests.container.nanover_reference import NanoverRecordingReader


def test_nanover_reads_a_bag_archive(tmp_path: Path) -> None:
    archive = tmp_path / "robot.nanover.zip"
    registry.get("rosbag").convert(SAMPLES / "rosbag-robot.bag", archive)
    with registry.open(archive) as bag, NanoverRecordingReader.from_path(archive) as nanover:
        events = list(nanover.iter_message_events())
        assert len(events) == len(bag)
        for number, event in enumerate(events):
            assert event.timestamp == bag.time_ns(number) // 1000  # type: ignore[attr-defined]
            value = event.message[bag.kind_of(number)]
            assert value["data"] == bag.raw(number)  # type: ignore[attr-defined]
