"""`rosbag play` semantics over a converted bag (`BagPlayer`).

On top of `nanorec.player.Player` (bag time -> wall time as rosbag's time translator, pause
shifting it, step, loop, rate): `delay` before the first message, `skip_empty` jumping over
gaps of bag time longer than it, a `clock` callback called at `hz` with the bag time while
waiting (rosbag's `--clock`), and latched messages replayed first as `player.cpp` does:
only with a start > 0, only of the topics played, for each (callerid, topic) of a latching
connection the caller's last message on that topic from the bag's start to the start, both
inclusive (as rosbag's View: one stamped exactly at the start is played twice), in
(callerid, topic) order, once before the first pass.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from nanorec.errors import UsageError
from nanorec.player import Player
from nanorec.selection import Selection

if TYPE_CHECKING:
    from .recording import BagRecording

T = TypeVar("T")


class BagPlayer(Player):
    def __init__(
        self,
        rec: BagRecording,
        *,
        delay: float = 0.0,
        skip_empty: float | None = None,
        on_clock: Callable[[float], None] | None = None,
        hz: float = 100.0,
        **options: Any,
    ) -> None:
        super().__init__(rec, **options)
        if delay < 0 or (skip_empty is not None and skip_empty <= 0) or hz <= 0:
            raise UsageError("--delay must be >= 0, --skip-empty and --hz > 0")
        self.bag = rec
        self.delay = delay
        self.skip_empty_us = None if skip_empty is None else int(skip_empty * 1e6)
        self.on_clock = on_clock
        self.clock_period = 1.0 / hz
        self._next_clock = 0.0
        #: Latched messages replayed before the start (archive numbers, in ROS's order).
        self.latched = self._latched()

    def _latched(self) -> list[int]:
        start, kinds = self.selection.start, self.selection.kinds
        if not start:  # rosbag play: only when -s > 0
            return []
        meta = self.bag.meta
        _, stop = Selection(end=start).span(self.rec.reader.index)
        wanted = meta.conns_of(None if kinds is None else set(kinds))[:stop]
        numbers = np.flatnonzero(wanted)
        conns = meta.conn[numbers]
        callers = {c.id: (c.callerid, c.topic) for c in meta.connections.values()}
        present = [meta.connections.get(c) for c in np.unique(conns).tolist()]
        keys = {(c.callerid, c.topic) for c in present if c is not None and c.latching}
        found = []
        for key in sorted(keys):
            same = [c for c, k in callers.items() if k == key]
            last = numbers[np.isin(conns, np.array(same, dtype=conns.dtype))]
            found.append(int(last[-1]))
        return found

    def paced(self, load: Callable[[int], T]) -> Iterator[T]:
        if self.delay:
            self._idle(self.delay)
        for number in self.latched:
            self.index = number
            yield load(number)
        yield from super().paced(load)

    def _wait(self, stamp_us: int) -> bool:
        if self.skip_empty_us is not None and self.index is not None and not self.paused:
            gap = stamp_us - int(self._stamps_us[self.index])
            if gap > self.skip_empty_us:  # jump: the gap takes no wall time
                self._anchor_us += gap
        return super()._wait(stamp_us)

    def bag_time_us(self) -> int:
        """The bag time the translator maps the present to."""
        now = self._paused_at if self.paused else self._clock()
        return self._anchor_us + int((now - self._anchor_wall) * self.rate * 1e6)

    def _idle(self, seconds: float) -> None:
        if self.on_clock is None:
            super()._idle(seconds)
            return
        end = self._clock() + seconds
        while True:
            now = self._clock()
            if now >= self._next_clock:
                self.on_clock(self.bag_time_us() / 1e6)
                self._next_clock = now + self.clock_period
            left = end - now
            if left <= 0:
                return
            super()._idle(min(left, max(self._next_clock - now, 0.0)))
