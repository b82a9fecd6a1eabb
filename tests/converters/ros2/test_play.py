"""`ros2 bag play` semantics without ROS: the topic filters (`chosen_topics`, as
rosbag2_transport's `allow_topic` and the storage plugins' `regex_match`), the player's
keys on a fake clock (↑/↓ change the rate keeping the timeline continuous, → steps while
paused, space pauses and resumes), and the terminal's arrow keys read from a pty."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import cast

import pytest

import nanorec
from nanorec.converters.ros.ros2.play import RATE_STEP, Ros2Player, chosen_topics
from nanorec.converters.ros.ros2.recording import Ros2Recording
from nanorec.errors import UsageError
from tests.conftest import SAMPLES

pytest.importorskip("yaml")
pytest.importorskip("mcap")

BAG = SAMPLES / "ros2-robot"
THERE = ["/camera/image", "/camera/info", "/odom", "/status", "/tf"]


# -- chosen_topics ----------------------------------------------------------------------


def test_no_filter_is_every_topic() -> None:
    assert chosen_topics(THERE) is None


def test_include_list_keeps_the_bag_order() -> None:
    assert chosen_topics(THERE, topics=["/tf", "/odom"]) == ["/odom", "/tf"]
    assert chosen_topics(THERE, topics=["/nowhere"]) == []


def test_regex_matches_the_whole_name() -> None:
    """rosbag2 uses std::regex_match: a regex must match the topic name whole."""
    assert chosen_topics(THERE, regex="/camera/.*") == ["/camera/image", "/camera/info"]
    assert chosen_topics(THERE, regex="camera") == []
    assert chosen_topics(THERE, regex="/stat") == []
    assert chosen_topics(THERE, regex="/(odom|tf)") == ["/odom", "/tf"]


def test_include_list_or_regex() -> None:
    assert chosen_topics(THERE, topics=["/tf"], regex="/camera/.*") == [
        "/camera/image",
        "/camera/info",
        "/tf",
    ]


def test_exclude_regex_and_exclude_topics() -> None:
    assert chosen_topics(THERE, exclude_regex="/camera/.*") == ["/odom", "/status", "/tf"]
    assert chosen_topics(THERE, exclude_regex="camera") == THERE  # no whole match
    assert chosen_topics(THERE, exclude_topics=["/tf", "/odom"]) == [
        "/camera/image",
        "/camera/info",
        "/status",
    ]


def test_excludes_win_over_includes() -> None:
    picked = chosen_topics(
        THERE,
        topics=["/odom", "/status"],
        regex="/camera/.*",
        exclude_regex=".*/info",
        exclude_topics=["/status"],
    )
    assert picked == ["/camera/image", "/odom"]
    assert chosen_topics(THERE, topics=["/tf"], exclude_topics=["/tf"]) == []


@pytest.mark.parametrize("option", ["regex", "exclude_regex"])
def test_bad_regex_is_a_usage_error(option: str) -> None:
    with pytest.raises(UsageError, match="regular expression"):
        chosen_topics(THERE, **{option: "(unclosed"})


# -- the player's keys on a fake clock --------------------------------------------------


class FakeTime:
    """A clock that moves only when slept on; `keys` hands out scripted key presses."""

    def __init__(self, presses: list[str | None] | None = None) -> None:
        self.now = 0.0
        self.presses = list(presses or [])

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds

    def keys(self, seconds: float) -> str | None:
        key = self.presses.pop(0) if self.presses else None
        if key is None:
            self.now += seconds
        return key


@pytest.fixture(scope="module")
def recording() -> Iterator[Ros2Recording]:
    with nanorec.open(BAG) as rec:
        # installed as nanorec.converters.ros.ros2: the class of `converters.ros.ros2` by name
        assert type(rec).__name__ == "Ros2Recording" and rec.format == "ros2"
        yield cast(Ros2Recording, rec)


def _player(rec: Ros2Recording, fake: FakeTime, **options: object) -> Ros2Player:
    player = rec.play(clock=fake.clock, sleep=fake.sleep, **options)
    assert type(player).__name__ == "Ros2Player"
    return player


def test_played_on_time(recording: Ros2Recording) -> None:
    fake = FakeTime()
    player = _player(recording, fake, kinds=["/status"])
    got = [(number, fake.now) for number in player.paced(lambda n: n)]
    assert len(got) == 30
    for number, at in got:
        assert at == pytest.approx(recording.time_of(number) - recording.time_of(got[0][0]))


@pytest.mark.parametrize(("key", "factor"), [("up", RATE_STEP), ("down", 1 / RATE_STEP)])
def test_rate_keys_keep_the_timeline_continuous(
    recording: Ros2Recording, key: str, factor: float
) -> None:
    fake = FakeTime()
    player = _player(recording, fake, kinds=["/status"])
    paced = player.paced(lambda n: n)
    first = next(paced)
    fake.now = 0.5
    before = player.bag_time_us()
    player.handle_key(key)
    assert player.rate == pytest.approx(factor)
    assert player.bag_time_us() == before  # no jump in recorded time
    second = next(paced)
    gap = recording.time_of(second) - recording.time_of(first)
    assert fake.now == pytest.approx(0.5 + (gap - 0.5) / factor, abs=1e-6)
    player.handle_key(key)
    assert player.rate == pytest.approx(factor * factor)


def test_space_pauses_and_right_steps(recording: Ros2Recording) -> None:
    fake = FakeTime()
    player = _player(recording, fake, kinds=["/status"], keys=fake.keys)
    paced = player.paced(lambda n: n)
    numbers = player.numbers
    assert next(paced) == numbers[0]
    player.handle_key(" ")
    assert player.paused
    paused_at = fake.now
    fake.presses = [None, None, None, "right"]  # three idle polls, then →
    assert next(paced) == numbers[1]
    assert player.paused  # a step does not resume
    waited = fake.now - paused_at
    assert waited == pytest.approx(3 * player.poll_s)  # released by the key, not the clock
    assert player.step() is True
    assert next(paced) == numbers[2]
    player.handle_key(" ")  # resume: the timeline continues from the stepped message
    assert not player.paused
    resumed_at = fake.now
    assert next(paced) == numbers[3]
    gap = recording.time_of(numbers[3]) - recording.time_of(numbers[2])
    assert fake.now - resumed_at == pytest.approx(gap, abs=1e-6)


def test_right_while_playing_does_nothing(recording: Ros2Recording) -> None:
    fake = FakeTime()
    player = _player(recording, fake, kinds=["/status"])
    player.handle_key("right")
    assert not player.paused and not player.step()
    player.handle_key("q")
    assert player.stopped
    assert list(player.paced(lambda n: n)) == []


def test_clock_lines_are_recorded_time(recording: Ros2Recording) -> None:
    fake = FakeTime()
    ticks: list[float] = []
    player = _player(recording, fake, kinds=["/status"], on_clock=ticks.append, hz=10.0)
    played = list(player.paced(lambda n: n))
    assert len(played) == 30
    assert ticks == sorted(ticks)
    origin = recording.time_of(played[0]) + recording.start_time
    assert ticks[0] == pytest.approx(origin, abs=1e-6)
    # about 10 ticks a second of the 29 s played
    assert 280 <= len(ticks) <= 300
    assert ticks[-1] <= recording.time_of(played[-1]) + recording.start_time + 1e-6


# -- TerminalKeys on a pty ----------------------------------------------------------------


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX terminals only")
@pytest.mark.parametrize(
    ("typed", "key"),
    [
        (b"\x1b[A", "up"),
        (b"\x1b[B", "down"),
        (b"\x1b[C", "right"),
        (b"\x1b[D", "left"),
        (b" ", " "),
        (b"q", "q"),
    ],
)
def test_terminal_keys(typed: bytes, key: str) -> None:
    from nanorec.player import TerminalKeys

    master, slave = os.openpty()
    try:
        with TerminalKeys(slave) as terminal:
            assert terminal.wait(0.0) is None
            os.write(master, typed)
            assert terminal.wait(2.0) == key
            assert terminal.wait(0.0) is None
    finally:
        os.close(master)
        os.close(slave)
