"""Play any recording at its recorded pace, in the manner of `rosbag play`.

A visualiser or a simulator driven by a recording wants each message when it happened (or
`rate` times faster), with pause and single-step, not as fast as the disk allows. `Player`
is that loop, shaped after rosbag's player and its time translator: a message recorded at
`t` is due at wall time `anchor_wall + (t - anchor_t) / rate`, where the anchor is set when
a pass starts (`loop` starts each pass afresh, at once), moved forward by the time spent
paused, and moved to the stepped message on a single step.

Time comes only from the injected `clock` and passes only through the injected `sleep`
(or `keys`, which waits for a key press), so tests drive a fake clock and never sleep.
Messages are loaded one at a time, before their due time, so the cost does not depend on
the recording's length.
"""

from __future__ import annotations

import math
import os
import select
import time
from collections.abc import Callable, Iterable, Iterator
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

from nanorec.errors import UsageError
from nanorec.selection import Selection
from nanorec.untyped import Payload

if TYPE_CHECKING:
    from nanorec.recording import ArchiveRecording

T = TypeVar("T")

_EPSILON_S = 1e-9  # float noise when a fake clock lands exactly on a due time


class Player:
    """Yields a recording's messages at the recorded pace: iterate it for what the
    recording's `decode` gives (a CARLA `World`, a decoded ROS message...).

    Options (times in seconds from the recording's first message):

    - `rate`: playback speed factor (2.0 plays twice as fast); must be > 0;
    - `start`, `end`, `duration`, `kinds` or a whole `selection`: which messages to play
      (see `nanorec.selection`; `start <= t <= end`);
    - `loop`: start over from the first selected message after the last, at once, as
      rosbag does;
    - `immediate`: no waiting at all (pause and step still apply);
    - `paused`: start paused: nothing is emitted until `resume()`/`toggle_pause()` or
      `step()`;
    - `clock`: monotonic seconds (default `time.monotonic`); `sleep`: waits that many seconds
      (default `time.sleep`); `keys`: instead of `sleep`, waits up to that many seconds
      for a key press and returns it or None; keys go to `handle_key`;
    - `poll_s`: the longest single wait, so pauses and other threads are noticed promptly;
    - `delay`: seconds to wait before the first message; `on_clock`: called with the
      recording's time (seconds, its own clock) `hz` times a second while waiting, as
      `rosbag play --clock` publishes it.

    Raises `UsageError` for a bad option or a range that selects no message.
    """

    def __init__(
        self,
        rec: ArchiveRecording,
        *,
        rate: float = 1.0,
        start: float | None = None,
        end: float | None = None,
        duration: float | None = None,
        kinds: Iterable[str] | None = None,
        selection: Selection | None = None,
        loop: bool = False,
        immediate: bool = False,
        paused: bool = False,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        keys: Callable[[float], str | None] | None = None,
        poll_s: float = 0.1,
        delay: float = 0.0,
        on_clock: Callable[[float], None] | None = None,
        hz: float = 100.0,
    ) -> None:
        if not (math.isfinite(rate) and rate > 0):
            raise UsageError(f"--rate must be a positive number, not {rate}")
        if not (delay >= 0 and hz > 0):
            raise UsageError("--delay must be >= 0 and the clock rate > 0")
        if not poll_s > 0:
            raise UsageError(f"poll_s must be positive, not {poll_s}")
        if selection is None:
            selection = Selection.make(start=start, end=end, duration=duration, kinds=kinds)
        self.rec = rec
        #: What is played (a format's player may look at it: rosbag's latched topics).
        self.selection = selection
        self.rate = float(rate)
        self.loop = loop
        self.immediate = immediate
        self.poll_s = poll_s
        self._clock = clock
        self._sleep = sleep
        self._keys = keys
        stamps = rec.reader.index.timestamp_us
        #: Archive numbers of the messages played, in order.
        self.numbers: list[int] = selection.chosen(rec.reader.index).tolist()
        self._stamps_us = stamps
        self.paused = paused
        self.stopped = False
        self._step_pending = False
        self._paused_at = 0.0
        self._anchor_wall = 0.0
        self._anchor_us = 0
        #: Archive number of the last message emitted (None before the first).
        self.index: int | None = None
        #: Completed passes over the range (grows with `loop`).
        self.passes = 0
        self.delay = delay
        self.on_clock = on_clock
        self.clock_period = 1.0 / hz
        #: The stamp of the message being waited for (clock lines stop there).
        self._horizon_us = 1 << 62
        self._next_clock = 0.0

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
        """While paused, let exactly one more message through now; False when not paused."""
        if self.paused:
            self._step_pending = True
        return self.paused

    def stop(self) -> None:
        """End the iteration before the next message."""
        self.stopped = True

    def set_rate(self, rate: float) -> None:
        """Play at `rate` from now on, the timeline continuing where it is."""
        if not (math.isfinite(rate) and rate > 0):
            raise UsageError(f"the rate must be a positive number, not {rate}")
        self._anchor_us = self.bag_time_us()
        self._anchor_wall = self._paused_at if self.paused else self._clock()
        self.rate = float(rate)

    def bag_time_us(self) -> int:
        """The recording time (µs, its own clock) the timeline maps the present to."""
        now = self._paused_at if self.paused else self._clock()
        return self._anchor_us + int((now - self._anchor_wall) * self.rate * 1e6)

    def handle_key(self, key: str) -> None:
        """A key press: space pauses/resumes, `s` steps while paused, `q` stops."""
        if key == " ":
            self.toggle_pause()
        elif key in ("s", "S"):
            self.step()
        elif key in ("q", "Q"):
            self.stop()

    @property
    def time(self) -> float | None:
        """Seconds from the recording's start of the last message emitted."""
        return None if self.index is None else self.rec.time_of(self.index)

    # -- iteration -------------------------------------------------------------------------

    def __iter__(self) -> Iterator[Payload]:
        return self.paced(self.rec.decode)

    def paced(self, load: Callable[[int], T]) -> Iterator[T]:
        """Yield `load(n)` for each selected message number `n`, each at its due time.

        `load` runs before the wait, so a slow load does not delay the message.
        """
        self.wait_delay()
        while not self.stopped:
            self._begin_pass()
            for number in self.numbers:
                item = load(number)
                if not self._wait(self._stamps_us.item(number)):
                    return
                self.index = number
                yield item
            self.passes += 1
            if not self.loop:
                return

    def wait_delay(self) -> None:
        """The `delay` before the first message (once)."""
        if self.delay:
            self.delay, delay = 0.0, self.delay
            self._idle(delay)

    def _begin_pass(self) -> None:
        now = self._clock()
        self._anchor_wall = now
        self._anchor_us = self._stamps_us.item(self.numbers[0])
        if self.paused:
            self._paused_at = now

    def _wait(self, stamp_us: int) -> bool:
        """Wait until the message stamped `stamp_us` is due; False when stopped meanwhile."""
        self._horizon_us = stamp_us
        while not self.stopped:
            if self.paused:
                if self._step_pending:
                    self._step_pending = False
                    # The stepped message belongs at the moment the pause began: resuming
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
        if self.on_clock is None:
            self._pause_for(seconds)
            return
        end = self._clock() + seconds
        while True:
            now = self._clock()
            if now >= self._next_clock:
                # never past the message waited for (rosbag's TimePublisher horizon): a
                # late wake-up must not print a clock line beyond the next message
                self.on_clock(min(self.bag_time_us(), self._horizon_us) / 1e6)
                self._next_clock = now + self.clock_period
            left = end - now
            if left <= 0:
                return
            self._pause_for(min(left, max(self._next_clock - now, 0.0)))

    def _pause_for(self, seconds: float) -> None:
        if self._keys is None:
            self._sleep(seconds)
            return
        key = self._keys(seconds)
        if key is not None:
            self.handle_key(key)


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
        if data == b"\x1b" and select.select([self.fd], [], [], 0.05)[0]:
            sequence = os.read(self.fd, 2)  # an arrow key: ESC [ A..D
            return _ARROWS.get(sequence, "escape")
        return data.decode("latin-1")


_ARROWS = {b"[A": "up", b"[B": "down", b"[C": "right", b"[D": "left"}


__all__ = ["Player", "TerminalKeys"]
