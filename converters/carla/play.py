"""Play a CARLA recording at its recorded pace, in the manner of `rosbag play`.

A visualiser or a simulator driven by a recording wants each frame when it happened (or
`rate` times faster), with pause and single-step, not as fast as the disk allows. `Player`
is that loop, shaped after rosbag's `Player` (see `../shared/seeds/004_*`): a frame recorded
at `t` is due at wall time `anchor_wall + (t - anchor_t) / rate`, where the anchor is set
when a pass starts (`--loop` starts each pass afresh, at once), moved forward by the time
spent paused, and moved to the stepped frame on a single step — rosbag's time translator
and its `shift`.

Time comes only from the injected `clock` and passes only through the injected `sleep`
(or `keys`, which waits for a key press), so tests drive a fake clock and never sleep.
Frames are read one at a time (`CarlaRecording.frame`), before their due time, so the
cost does not depend on the recording's length.
"""

from __future__ import annotations

import math
import os
import select
import time
from collections.abc import Callable, Collection, Iterator
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

from .table import frame_span
from .world import Actor, World

if TYPE_CHECKING:
    from .recording import CarlaRecording

T = TypeVar("T")

#: Parts of a frame's state `world_dict` can emit.
PARTS = ("actors", "traffic_lights", "scene_lights", "weather", "events")
#: What is emitted unless asked otherwise: scene lights (hundreds in a real town, rarely
#: changing) are left out.
DEFAULT_PARTS = ("actors", "traffic_lights", "weather", "events")
_EPSILON_S = 1e-9  # float noise when a fake clock lands exactly on a due time


class Player:
    """Yields a recording's frames at the recorded pace; iterate it for `World`s.

    Options (times in seconds):

    - `rate`: playback speed factor (2.0 plays twice as fast); must be > 0;
    - `start_s`: begin at the first frame whose elapsed time is at or after it;
    - `duration_s`: stop after the frames up to `start + duration` (inclusive);
    - `loop`: start over from `start_s` after the last frame, at once, as rosbag does;
    - `immediate`: no waiting at all (pause and step still apply);
    - `paused`: start paused: nothing is emitted until `resume()`/`toggle_pause()` or
      `step()`;
    - `clock`: monotonic seconds (default `time.monotonic`); `sleep`: waits that many seconds
      (default `time.sleep`); `keys`: instead of `sleep`, waits up to that many seconds
      for a key press and returns it or None; keys go to `handle_key`;
    - `poll_s`: the longest single wait, so pauses and other threads are noticed promptly.

    Raises ValueError for a bad option or a range that selects no frame.
    """

    def __init__(
        self,
        rec: CarlaRecording,
        *,
        rate: float = 1.0,
        start_s: float | None = None,
        duration_s: float | None = None,
        loop: bool = False,
        immediate: bool = False,
        paused: bool = False,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        keys: Callable[[float], str | None] | None = None,
        poll_s: float = 0.1,
    ) -> None:
        if not (math.isfinite(rate) and rate > 0):
            raise ValueError(f"the rate must be a positive number, not {rate}")
        if duration_s is not None and not (math.isfinite(duration_s) and duration_s >= 0):
            raise ValueError(f"the duration must be zero or more seconds, not {duration_s}")
        if not poll_s > 0:
            raise ValueError(f"poll_s must be positive, not {poll_s}")
        self.rec = rec
        self.rate = float(rate)
        self.loop = loop
        self.immediate = immediate
        self.poll_s = poll_s
        self._clock = clock
        self._sleep = sleep
        self._keys = keys
        stamps = rec.reader.index.timestamp_us
        stop_s = None
        if duration_s is not None:
            first = float(stamps[0]) / 1e6 if len(stamps) else 0.0
            stop_s = (first if start_s is None else max(start_s, first)) + duration_s
        self.frames = frame_span(rec, start_s, stop_s)
        if not self.frames:
            raise ValueError(
                f"the range selects no frame (the recording has {len(rec)} frames, "
                f"{rec.duration:.3f} s)"
            )
        self._stamps_us = stamps
        self.paused = paused
        self.stopped = False
        self._step_pending = False
        self._paused_at = 0.0
        self._anchor_wall = 0.0
        self._anchor_us = 0
        #: Archive number of the last frame emitted (None before the first).
        self.index: int | None = None
        #: Completed passes over the range (grows with `loop`).
        self.passes = 0

    # -- control (from the consumer, a key handler or another thread) ----------------------

    def pause(self) -> None:
        if not self.paused:
            self.paused = True
            self._paused_at = self._clock()

    def resume(self) -> None:
        if self.paused:
            self.paused = False
            self._step_pending = False
            self._anchor_wall += self._clock() - self._paused_at

    def toggle_pause(self) -> None:
        """Pause, or resume where the timeline left off (rosbag's space bar)."""
        if self.paused:
            self.resume()
        else:
            self.pause()

    def step(self) -> bool:
        """While paused, let exactly one more frame through now; False when not paused."""
        if self.paused:
            self._step_pending = True
        return self.paused

    def stop(self) -> None:
        """End the iteration before the next frame."""
        self.stopped = True

    def handle_key(self, key: str) -> None:
        """A key press: space pauses/resumes, `s` steps while paused, `q` stops."""
        if key == " ":
            self.toggle_pause()
        elif key in ("s", "S"):
            self.step()
        elif key in ("q", "Q"):
            self.stop()

    @property
    def time_s(self) -> float | None:
        """Elapsed recording time of the last frame emitted, in seconds."""
        return None if self.index is None else self._stamps_us.item(self.index) / 1e6

    # -- iteration -------------------------------------------------------------------------

    def __iter__(self) -> Iterator[World]:
        return self.paced(self.rec.frame)

    def iter_dicts(self, parts: Collection[str] = DEFAULT_PARTS) -> Iterator[dict[str, Any]]:
        """Like iterating, but each frame as `world_dict(world, parts)` (JSON-ready)."""
        check_parts(parts)
        return self.paced(lambda number: world_dict(self.rec.frame(number), parts))

    def paced(self, load: Callable[[int], T]) -> Iterator[T]:
        """Yield `load(n)` for each archive frame `n`, each at its due time.

        `load` runs before the wait, so a slow load does not delay the frame.
        """
        while not self.stopped:
            self._begin_pass()
            for number in self.frames:
                item = load(number)
                if not self._wait(self._stamps_us.item(number)):
                    return
                self.index = number
                yield item
            self.passes += 1
            if not self.loop:
                return

    def _begin_pass(self) -> None:
        now = self._clock()
        self._anchor_wall = now
        self._anchor_us = self._stamps_us.item(self.frames.start)
        if self.paused:
            self._paused_at = now

    def _wait(self, stamp_us: int) -> bool:
        """Wait until the frame stamped `stamp_us` is due; False when stopped meanwhile."""
        while not self.stopped:
            if self.paused:
                if self._step_pending:
                    self._step_pending = False
                    # The stepped frame belongs at the moment the pause began: resuming
                    # then continues the timeline from it.
                    self._anchor_wall, self._anchor_us = self._paused_at, stamp_us
                    return True
                self._idle(self.poll_s)
                continue
            if self.immediate:
                return True
            due = self._anchor_wall + (stamp_us - self._anchor_us) / 1e6 / self.rate
            left = due - self._clock()
            if left <= _EPSILON_S:
                return True
            self._idle(min(left, self.poll_s))
        return False

    def _idle(self, seconds: float) -> None:
        if self._keys is None:
            self._sleep(seconds)
            return
        key = self._keys(seconds)
        if key is not None:
            self.handle_key(key)


def check_parts(parts: Collection[str]) -> None:
    """Raise ValueError unless every name in `parts` is one of `PARTS`."""
    unknown = [part for part in parts if part not in PARTS]
    if unknown:
        raise ValueError(f"unknown part {unknown[0]!r}; valid: {', '.join(PARTS)}")


def world_dict(world: World, parts: Collection[str] = DEFAULT_PARTS) -> dict[str, Any]:
    """A compact, JSON-ready dict of a frame's state (file units: cm, degrees, seconds).

    Always `index` (archive frame), `frame` (CARLA frame id), `time` (elapsed s) and the
    recorded `visual_time`/`platform_time`; then the `parts` asked for: `actors` (id,
    type_id, parent_id, location [x, y, z], rotation [pitch, yaw, roll], then whatever else
    is recorded: control, walker_speed, light_state, velocity (m/s), angular_velocity,
    bounding_box, biker, doors), `traffic_lights`, `scene_lights`, `weather` (when
    recorded) and `events` (only in frames that have some).
    """
    out: dict[str, Any] = {"index": world.index, "frame": world.frame_id, "time": world.elapsed}
    if world.visual_time is not None:
        out["visual_time"] = world.visual_time
    if world.platform_time is not None:
        out["platform_time"] = world.platform_time
    if "actors" in parts:
        out["actors"] = [actor_dict(actor) for actor in world.actors.values()]
    if "traffic_lights" in parts:
        lights = []
        for light in world.traffic_lights.values():
            item: dict[str, Any] = {
                "id": light.id,
                "state": None if light.state is None else light.state.name.lower(),
                "elapsed_time": light.elapsed_time,
                "is_frozen": light.is_frozen,
            }
            if light.green_time is not None:
                item["times"] = [light.green_time, light.yellow_time, light.red_time]
            lights.append(item)
        out["traffic_lights"] = lights
    if "scene_lights" in parts:
        out["scene_lights"] = [
            {
                "id": light.id,
                "intensity": light.intensity,
                "color": list(light.color),
                "is_on": light.is_on,
                "type": light.type,
            }
            for light in world.scene_lights.values()
        ]
    if "weather" in parts and world.weather is not None:
        out["weather"] = dict(world.weather)
    if "events" in parts:
        events = world.events
        found: dict[str, Any] = {}
        if events.spawned:
            found["spawned"] = [
                {"id": desc.id, "type_id": desc.type_id, "attributes": dict(desc.attributes)}
                for desc in events.spawned
            ]
        if events.destroyed:
            found["destroyed"] = list(events.destroyed)
        if events.parented:
            found["parented"] = [list(pair) for pair in events.parented]
        if events.collisions:
            found["collisions"] = [
                {"id": hit.id, "actor1_id": hit.actor1_id, "actor2_id": hit.actor2_id}
                for hit in events.collisions
            ]
        if found:
            out["events"] = found
    return out


def actor_dict(actor: Actor) -> dict[str, Any]:
    """One actor's recorded state as a compact dict (fields absent when not recorded)."""
    item: dict[str, Any] = {"id": actor.id, "type_id": actor.type_id}
    if actor.parent_id is not None:
        item["parent_id"] = actor.parent_id
    item["location"] = list(actor.location)
    item["rotation"] = list(actor.rotation)
    if actor.control is not None:
        item["control"] = actor.control._asdict()
    if actor.walker_speed is not None:
        item["walker_speed"] = actor.walker_speed
    if actor.light_state is not None:
        item["light_state"] = actor.light_state
    if actor.velocity is not None:
        item["velocity"] = list(actor.velocity)
    if actor.angular_velocity is not None:
        item["angular_velocity"] = list(actor.angular_velocity)
    if actor.bounding_box is not None:
        item["bounding_box"] = {
            "location": list(actor.bounding_box.location),
            "extent": list(actor.bounding_box.extent),
        }
    if actor.biker is not None:
        item["biker"] = list(actor.biker)
    if actor.doors:
        item["doors"] = {str(door): is_open for door, is_open in actor.doors.items()}
    return item


class TerminalKeys:
    """Single key presses from a terminal: cbreak mode while open, restored on close.

    `wait(seconds)` returns the next key typed within that time, or None. Ctrl-C still
    interrupts (cbreak keeps signals). POSIX terminals only.
    """

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._saved: list[Any] | None = None
        self._eof = False

    def __enter__(self) -> TerminalKeys:
        import termios
        import tty

        self._saved = termios.tcgetattr(self.fd)
        tty.setcbreak(self.fd)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Put the terminal back as it was."""
        if self._saved is not None:
            import termios

            termios.tcsetattr(self.fd, termios.TCSADRAIN, self._saved)
            self._saved = None

    def wait(self, seconds: float) -> str | None:
        """The next key pressed within `seconds`, or None (after the full wait)."""
        seconds = max(0.0, seconds)
        if self._eof:
            time.sleep(seconds)
            return None
        ready, _, _ = select.select([self.fd], [], [], seconds)
        if not ready:
            return None
        data = os.read(self.fd, 1)
        if not data:  # the terminal went away: plain waits from now on
            self._eof = True
            return None
        return data.decode("latin-1")


__all__ = [
    "DEFAULT_PARTS",
    "PARTS",
    "Player",
    "TerminalKeys",
    "actor_dict",
    "check_parts",
    "world_dict",
]
