"""`BagPlayer`: rosbag play's time translator, on a fake clock."""

from __future__ import annotations

from pathlib import Path

from nanorec import registry
from nanorec.converters.ros.ros1.play import BagPlayer
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


def _played(rec: object, **options: object) -> list[int]:
    player = BagPlayer(rec, immediate=True, **options)  # type: ignore[arg-type]
    return list(player.paced(lambda n: n))


def test_latched_only_with_start_and_only_of_the_selected_topics(tmp_path: Path) -> None:
    """rosbag play (player.cpp) replays latched messages only when -s > 0, and only of the
    topics played: /map_name (latched, at the bag's start) comes first only when chosen."""
    bag = make_bag(tmp_path, seconds=2.0)
    with registry.open(bag) as rec:
        topics = [rec.kind_of(n) for n in _played(rec, kinds=["/odom"])]
        assert set(topics) == {"/odom"}
        topics = [rec.kind_of(n) for n in _played(rec, kinds=["/odom"], start=1.0)]
        assert set(topics) == {"/odom"}
        topics = [rec.kind_of(n) for n in _played(rec, kinds=["/odom", "/map_name"], start=1.0)]
        assert topics[0] == "/map_name" and set(topics[1:]) == {"/odom"}
        topics = [rec.kind_of(n) for n in _played(rec, start=1.0)]
        assert topics.count("/map_name") == 1 and topics[0] == "/map_name"


def test_latched_per_callerid_and_topic(tmp_path: Path) -> None:
    """One message per (callerid, topic), the last at or before the start (both ends
    inclusive as rosbag's View, so one stamped at the start is played twice, as ROS does),
    in (callerid, topic) order; a non-latching connection of the same caller and topic
    counts for the caller's last message."""
    from nanorec.converters.ros.ros1.generate import connection_fields
    from nanorec.converters.ros.ros1.msgdef import parse_definition
    from nanorec.converters.ros.ros1.serialize import encode
    from nanorec.converters.ros.ros1.stock import STOCK
    from nanorec.converters.ros.ros1.writer import BagWriter

    string = parse_definition("std_msgs/String", STOCK["std_msgs/String"][1])
    t0 = 1_600_000_000_000_000_000
    bag = tmp_path / "latched.bag"
    with bag.open("wb") as stream:
        writer = BagWriter(stream)
        for conn, (caller, latched) in enumerate(
            [("/b", True), ("/a", True), ("/b", False), ("/c", False)]
        ):
            fields = connection_fields("/state", "std_msgs/String", caller, latched)
            writer.add_connection(conn, "/other" if caller == "/c" else "/state", fields)
        events = [(0, 0.0), (1, 0.1), (0, 0.2), (2, 0.3), (1, 1.0)]
        events += [(3, s / 10) for s in range(0, 30)]
        for conn, seconds in sorted(events, key=lambda e: e[1]):
            data = encode(string, "std_msgs/String", {"data": f"{conn}"})
            writer.write(conn, t0 + round(seconds * 1e9), data)
        writer.close()
    with registry.open(bag) as rec:
        played = _played(rec, kinds=["/state"], start=1.0)
        got = [(rec.meta.conn[n].item(), (rec.time_ns(n) - t0) / 1e9) for n in played]
    # /a: conn 1's, stamped at the start; /b: its last, conn 2's (not latching); then /state
    assert got == [(1, 1.0), (2, 0.3), (1, 1.0)]


def test_clock_lines_never_pass_the_next_message(tmp_path: Path) -> None:
    """A late wake-up (a loaded machine: every sleep overshoots by 0.3 s) still prints no
    clock time beyond the message being waited for, as rosbag's TimePublisher caps it."""
    bag = make_bag(tmp_path, seconds=2.0)

    class LateClock(FakeClock):
        def sleep(self, seconds: float) -> None:
            self.now += seconds + 0.3

    clock = LateClock()
    ticks: list[float] = []
    with registry.open(bag) as rec:
        player = BagPlayer(
            rec, kinds=["/chatter"], clock=clock, sleep=clock.sleep, on_clock=ticks.append, hz=50
        )  # type: ignore[arg-type]
        stamps = [rec.time_ns(n) / 1e9 for n in player.paced(lambda n: n)]
    assert ticks and stamps
    for tick in ticks:
        later = [s for s in stamps if s >= tick - 1e-6]
        assert later, f"a clock line at {tick} after the last message {stamps[-1]}"
