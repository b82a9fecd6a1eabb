"""`nanorec play`: pacing with an injected clock (no test sleeps), loop, pause and step."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import termios
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from nanorec.cli import _register, app
from nanorec.converters.carla.play import PARTS, check_parts, iter_dicts, world_dict
from nanorec.converters.carla.recording import CarlaRecording
from nanorec.converters.carla.table import frame_span
from nanorec.player import Player, TerminalKeys
from tests.conftest import SAMPLES, make_runner

SAMPLE = SAMPLES / "carla-0.9.15-town03.log"


class FakeTime:
    """A clock that only moves when slept on; scripted actions run at given times."""

    def __init__(self, start: float = 1000.0) -> None:
        self.now = start
        self.sleeps: list[float] = []
        self.script: list[tuple[float, Callable[[], object]]] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        assert seconds > 0
        self.sleeps.append(seconds)
        self.now += seconds
        while self.script and self.script[0][0] <= self.now + 1e-6:
            self.script.pop(0)[1]()


@pytest.fixture(scope="module")
def rec() -> Iterator[CarlaRecording]:
    with CarlaRecording.open(SAMPLE) as opened:
        yield opened


def _times(rec: CarlaRecording, numbers: range) -> list[float]:
    return [float(rec.reader.index.timestamp_us[n]) / 1e6 for n in numbers]


def _play(player: Player, fake: FakeTime, count: int | None = None) -> list[tuple[int, float]]:
    """(archive frame, fake wall time) of each frame emitted."""
    out = []
    for world in player:
        out.append((world.index, fake.now))
        if count is not None and len(out) == count:
            break
    return out


@pytest.mark.parametrize("rate", [1.0, 2.0, 0.5])
def test_frames_come_at_the_recorded_pace(rec: CarlaRecording, rate: float) -> None:
    fake = FakeTime()
    player = rec.play(rate=rate, duration=1.0, clock=fake.clock, sleep=fake.sleep)
    played = _play(player, fake)
    numbers = frame_span(rec, 0.0, 1.0)
    assert [index for index, _ in played] == list(numbers) and len(played) == 21
    times = _times(rec, numbers)
    for (_, wall), t in zip(played, times, strict=True):
        assert wall == pytest.approx(1000.0 + (t - times[0]) / rate, abs=1e-9)
    # One sleep per gap (0.05 s recorded), scaled by the rate, capped at poll_s = 0.1 s.
    gap = 0.05 / rate
    chunks = [0.1] * int(gap // 0.1 + 1e-9) + ([gap % 0.1] if gap % 0.1 > 1e-9 else [])
    assert fake.sleeps == pytest.approx(chunks * 20, abs=1e-9)
    assert player.passes == 1 and player.index == numbers[-1]


def test_start_duration_and_immediate(rec: CarlaRecording) -> None:
    fake = FakeTime()
    player = rec.play(start=5.0, duration=0.5, immediate=True, clock=fake.clock, sleep=fake.sleep)
    played = _play(player, fake)
    assert [i for i, _ in played] == list(range(100, 111))
    assert fake.sleeps == [] and fake.now == 1000.0
    # Between frames: the first frame at or after the start.
    player = rec.play(start=5.01, duration=0.04, clock=fake.clock, sleep=fake.sleep)
    assert [i for i, _ in _play(player, fake)] == [101]
    assert player.time == pytest.approx(5.05)


def test_loop_restarts_from_the_start_at_once(rec: CarlaRecording) -> None:
    fake = FakeTime()
    player = rec.play(start=2.0, duration=0.1, loop=True, clock=fake.clock, sleep=fake.sleep)
    played = _play(player, fake, count=7)
    assert [i for i, _ in played] == [40, 41, 42, 40, 41, 42, 40]
    walls = [round(wall - 1000.0, 9) for _, wall in played]
    assert walls == [0.0, 0.05, 0.1, 0.1, 0.15, 0.2, 0.2]
    assert player.passes == 2


def test_pause_step_and_resume(rec: CarlaRecording) -> None:
    fake = FakeTime()
    player = rec.play(paused=True, clock=fake.clock, sleep=fake.sleep)
    frames = iter(player)
    # Paused from the start: nothing comes until a step (polled every 0.1 s).
    fake.script = [(1000.35, player.step)]
    first = next(frames)
    assert first.index == 0 and fake.now == pytest.approx(1000.4)
    assert fake.sleeps == pytest.approx([0.1] * 4)
    fake.script = [(1000.6, player.step)]
    assert next(frames).index == 1 and fake.now == pytest.approx(1000.6)
    # Resume at 1001.0: the timeline continues from the stepped frame (elapsed 0.05).
    fake.script = [(1001.0, player.resume)]
    assert next(frames).index == 2 and fake.now == pytest.approx(1001.05)
    assert next(frames).index == 3 and fake.now == pytest.approx(1001.10)
    # Pause between frames, resume 2 s later: the pause is not made up for.
    player.toggle_pause()
    assert player.paused and not fake.script
    fake.script = [(1003.1, player.toggle_pause)]
    assert next(frames).index == 4 and fake.now == pytest.approx(1003.15)
    assert not player.step()  # not paused: nothing to step
    player.stop()
    assert list(frames) == []


def test_keys_drive_the_player(rec: CarlaRecording) -> None:
    fake = FakeTime()
    pressed = {1000.2: "s", 1000.5: " ", 1000.62: " ", 1000.9: "q"}

    def keys(seconds: float) -> str | None:
        """Wait for a key like TerminalKeys.wait: returns early when one is pressed."""
        due = min((t for t in pressed if fake.now < t <= fake.now + seconds), default=None)
        if due is None:
            fake.sleep(seconds)
            return None
        fake.sleep(due - fake.now)
        return pressed.pop(due)

    player = Player(rec, paused=True, clock=fake.clock, sleep=fake.sleep, keys=keys)
    played = _play(player, fake)
    walls = [(i, round(wall - 1000.0, 6)) for i, wall in played]
    # Step at 0.2; running 0.5-0.62 (frames due 0.55, 0.6); paused again; quit at 0.9.
    assert walls == [(0, 0.2), (1, 0.55), (2, 0.6)]
    assert player.stopped and player.paused


def test_player_rejects_bad_options(rec: CarlaRecording) -> None:
    with pytest.raises(ValueError, match="rate"):
        Player(rec, rate=0)
    with pytest.raises(ValueError, match="rate"):
        Player(rec, rate=float("nan"))
    with pytest.raises(ValueError, match="duration"):
        Player(rec, duration=-1)
    with pytest.raises(ValueError, match="selects no message"):
        Player(rec, start=1e6)
    with pytest.raises(ValueError, match="unknown part 'bogus'"):
        check_parts(["actors", "bogus"])


def test_world_dict_is_compact_json(rec: CarlaRecording) -> None:
    first = world_dict(rec.frame(0), PARTS)
    text = json.dumps(first, allow_nan=False)
    assert first["index"] == 0 and first["frame"] == 1 and first["time"] == 0.0
    actors = {a["id"]: a for a in first["actors"]}
    hero = actors[6]
    assert hero["type_id"] == "vehicle.mini.cooper_s" and set(hero["control"]) >= {"throttle"}
    world = rec.frame(0)
    assert hero["location"] == list(world.actors[6].location)
    assert hero["rotation"] == world.actors[6].rotation._asdict()
    assert set(hero["rotation"]) == {"pitch", "yaw", "roll"}
    assert actors[14]["parent_id"] == 6 and "parent_id" not in hero
    assert {light["state"] for light in first["traffic_lights"]} <= {"red", "yellow", "green"}
    assert len(first["events"]["spawned"]) == len(world.actors) == 19 and first["scene_lights"]
    assert len(text) < 20_000
    later = world_dict(rec.frame(10), ["events"])
    assert set(later) == {"index", "frame", "time", "visual_time"}  # no events, no parts


@pytest.mark.slow
def test_every_sample_plays(tmp_path: Path) -> None:
    for path in sorted(SAMPLES.glob("*.log")):
        with CarlaRecording.open(path) as rec:
            player = rec.play(immediate=True)
            lines = [json.dumps(item, allow_nan=False) for item in iter_dicts(player, PARTS)]
            assert len(lines) == len(rec), path.name


def test_terminal_keys_cbreak_and_restore() -> None:
    master, slave = os.openpty()
    try:
        before = termios.tcgetattr(slave)
        with TerminalKeys(slave) as keys:
            during = termios.tcgetattr(slave)
            assert not during[3] & termios.ICANON and not during[3] & termios.ECHO
            assert during[3] & termios.ISIG  # Ctrl-C still interrupts
            assert keys.wait(0.0) is None
            os.write(master, b" s")
            assert keys.wait(1.0) == " " and keys.wait(1.0) == "s"
        assert termios.tcgetattr(slave) == before
    finally:
        os.close(master)
        os.close(slave)


# --------------------------------------------------------------------------- CLI


@pytest.fixture(scope="module")
def runner() -> CliRunner:
    _register()
    return make_runner()


def test_cli_prints_ndjson(runner: CliRunner, rec: CarlaRecording) -> None:
    result = runner.invoke(
        app,
        [
            "play",
            str(SAMPLE),
            "--immediate",
            "--start",
            "1",
            "--duration",
            "0.2",
            "--types",
            "actors",
        ],
    )
    assert result.exit_code == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [line["index"] for line in lines] == [20, 21, 22, 23, 24]
    assert lines == [world_dict(rec.frame(n), ["actors"]) for n in range(20, 25)]
    result = runner.invoke(
        app,
        [
            "play",
            str(SAMPLE),
            "-i",
            "-s",
            "14.9",
            "--types",
            "weather,events",
            "--types",
            "traffic_lights",
        ],
    )
    assert result.exit_code == 0
    assert set(json.loads(result.stdout.splitlines()[0])) == {
        "index",
        "frame",
        "time",
        "visual_time",
        "traffic_lights",
    }


def test_cli_takes_the_common_options(runner: CliRunner, rec: CarlaRecording) -> None:
    """--type picks the parts of the state (--parts stays an alias), --messages/--frames
    the frames, and an empty selection is the one error naming the option."""
    result = runner.invoke(app, ["play", str(SAMPLE), "-i", "--messages", "3:5", "-t", "weather"])
    assert result.exit_code == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert lines == [world_dict(rec.frame(n), ["weather"]) for n in (3, 4)]
    result = runner.invoke(app, ["play", str(SAMPLE), "-i", "--frames", "3:5", "--parts", "actors"])
    assert result.exit_code == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert lines == [world_dict(rec.frame(n), ["actors"]) for n in (3, 4)]
    result = runner.invoke(app, ["play", str(SAMPLE), "-i", "--start", "1e6"])
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.startswith("nanorec: --start 1000000 selects no message")


def test_cli_errors_are_one_line(runner: CliRunner, tmp_path: Path) -> None:
    for args in (
        ["play", str(SAMPLE), "--pause"],  # stdin is not a terminal here
        ["play", str(SAMPLE), "--rate", "0"],
        ["play", str(SAMPLE), "--rate", "-2"],
        ["play", str(SAMPLE), "--start", "99"],
        ["play", str(SAMPLE), "--duration", "-1"],
        ["play", str(SAMPLE), "--types", "actors,bogus"],
        ["play", str(tmp_path / "missing.log")],
    ):
        result = runner.invoke(app, args)
        assert result.exit_code == 2, args
        assert result.stderr.count("\n") == 1 and result.stderr.startswith("nanorec: "), args
    result = runner.invoke(app, ["play", "--help"])
    assert result.exit_code == 0 and "Example: nanorec play" in result.stdout


def test_poll_caps_each_wait(rec: CarlaRecording) -> None:
    fake = FakeTime()
    player = Player(rec, rate=0.1, duration=0.05, clock=fake.clock, sleep=fake.sleep, poll_s=0.2)
    assert [i for i, _ in _play(player, fake)] == [0, 1]
    assert np.allclose(fake.sleeps, [0.2, 0.2, 0.1])


def test_cli_keyboard_on_a_terminal() -> None:
    """The real command on a pseudo-terminal: paused start, `s` steps, `q` quits, and the
    terminal's settings come back."""
    master, slave = os.openpty()
    before = termios.tcgetattr(slave)
    command = [sys.executable, "-c", "from nanorec.cli import main; main()", "play"]
    process = subprocess.Popen(
        [*command, str(SAMPLE), "--pause", "--types", "weather"],
        stdin=slave,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert process.stderr is not None and process.stdout is not None
        assert b"[PAUSED]" in process.stderr.readline()  # the hint: ready for keys
        for expected in (0, 1):
            os.write(master, b"s")
            ready, _, _ = select.select([process.stdout], [], [], 20)
            assert ready, "no frame after a step"
            assert json.loads(process.stdout.readline())["index"] == expected
        os.write(master, b"q")
        assert process.wait(20) == 0
        assert process.stdout.read() == b""  # paused: nothing but the stepped frames
    finally:
        if process.poll() is None:
            process.kill()
        process.wait()
        assert termios.tcgetattr(slave) == before
        os.close(master)
        os.close(slave)
