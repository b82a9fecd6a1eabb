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
from typing import TYPE_CHECKING, TypeVar

import numpy as np

from nanorec.contract import PlayOptions
from nanorec.errors import UsageError
from nanorec.player import Player
from nanorec.selection import Selection

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from .recording import BagRecording


class BagPlayOptions(PlayOptions, total=False):
    """`BagRecording.play`'s options: every player's, and rosbag play's --skip-empty."""

    skip_empty: float | None


T = TypeVar("T")


class BagPlayer(Player):
    def __init__(
        self,
        rec: BagRecording,
        *,
        skip_empty: float | None = None,
        **options: Unpack[PlayOptions],
    ) -> None:
        super().__init__(rec, **options)
        if skip_empty is not None and skip_empty <= 0:
            raise UsageError("--skip-empty must be > 0")
        self.bag = rec
        self.skip_empty_us = None if skip_empty is None else int(skip_empty * 1e6)
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
        self.wait_delay()
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
