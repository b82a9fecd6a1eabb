"""`BagPlayer`: rosbag play's time translator, on a fake clock."""

from __future__ import annotations

from pathlib import Path

from nanorec import registry
from nanorec.converters.rosbag.play import BagPlayer
from tests.converters.rosbag.bags import make_bag


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_wall_times_follow_bag_time_over_rate(tmp_path: Path) -> None:
    bag = make_bag(tmp_path, seconds=1.0)
    clock = FakeClock()
    with registry.open(bag) as rec:
        player = BagPlayer(rec, rate=2.0, kinds=["/imu"], clock=clock, sleep=clock.sleep)  # type: ignore[arg-type]
        walls, stamps = [], []
        for number in player.paced(lambda n: n):
            walls.append(clock.now)
            stamps.append(rec.time_ns(number))
    for wall, stamp in zip(walls, stamps, strict=True):
        expected = 100.0 + (stamp - stamps[0]) / 1e9 / 2.0
        assert abs(wall - expected) < 0.002


def test_skip_empty_and_clock(tmp_path: Path) -> None:
    bag = make_bag(tmp_path, seconds=3.0)
    clock = FakeClock()
    ticks: list[float] = []
    with registry.open(bag) as rec:
        player = BagPlayer(
            rec,
            kinds=["/chatter"],
            skip_empty=0.5,
            clock=clock,
            sleep=clock.sleep,
            hz=10,  # type: ignore[arg-type]
        )
        list(player.paced(lambda n: n))
        assert clock.now - 100.0 < 0.1  # 1 s gaps skipped: no waiting
        clock.now = 100.0
        player = BagPlayer(rec, kinds=["/chatter"], clock=clock, sleep=clock.sleep)  # type: ignore[arg-type]
        player.on_clock = ticks.append
        player.clock_period = 0.1
        list(player.paced(lambda n: n))
    assert 18 <= len(ticks) <= 22  # two 1 s gaps at 10 Hz
    assert ticks == sorted(ticks)
