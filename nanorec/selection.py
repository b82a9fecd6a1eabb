"""One vocabulary for time and selection, the same in every verb and in Python.

`--start/--end/--duration` are seconds from the recording's first message; both ends are
inclusive (`start <= t <= end`, as `rosbag filter` and CARLA clips count). `--messages A:B`
(or `--frames A:B` where a message is a frame) are 0-based message numbers, B excluded.
`--type`/`--topic` keep messages of those kinds. Every value is validated here, once, so a
NaN, an infinity or an empty range is a `UsageError` whatever the verb.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from nanorec.archive.index import Index
from nanorec.errors import EmptySelectionError, UsageError

if TYPE_CHECKING:
    from nanorec.archive.reader import ArchiveReader


def check_seconds(name: str, value: float | None, *, positive: bool = False) -> float | None:
    """`value` if it is a finite number of seconds (>= 0, or > 0 with `positive`), else
    `UsageError` naming the option."""
    if value is None:
        return None
    if not math.isfinite(value):
        raise UsageError(f"{name} must be a finite number of seconds, not {value}")
    if value < 0 or (positive and value == 0):
        raise UsageError(f"{name} must be {'> 0' if positive else '>= 0'}, not {value}")
    return float(value)


def check_number(name: str, value: float) -> float:
    """`value` if it is finite and >= 0, else `UsageError` naming the option."""
    if not math.isfinite(value) or value < 0:
        raise UsageError(f"{name} must be a finite number >= 0, not {value}")
    return float(value)


def parse_range(name: str, spec: str) -> tuple[int | None, int | None]:
    """`"A:B"` (either side may be empty) as message numbers; `UsageError` otherwise."""
    first, sep, stop = spec.partition(":")
    if not sep:
        raise UsageError(f"{name} takes A:B (0-based, B excluded), not {spec!r}")
    try:
        return (int(first) if first.strip() else None, int(stop) if stop.strip() else None)
    except ValueError:
        raise UsageError(f"{name} takes whole numbers A:B, not {spec!r}") from None


@dataclass(frozen=True)
class Selection:
    """Which messages a verb works on. Build it with `Selection.make` (which validates)."""

    #: Seconds from the first message; inclusive bounds.
    start: float | None = None
    end: float | None = None
    #: Message numbers `first:stop` (0-based, stop excluded; negatives count from the end).
    first: int | None = None
    stop: int | None = None
    #: Kinds (record kinds, topics) to keep; None keeps all.
    kinds: frozenset[str] | None = None

    @classmethod
    def make(
        cls,
        *,
        start: float | None = None,
        end: float | None = None,
        duration: float | None = None,
        messages: str | None = None,
        kinds: Iterable[str] | None = None,
    ) -> Selection:
        """Validate and combine the options of a verb (`duration` counts from `start`)."""
        start = check_seconds("--start", start)
        end = check_seconds("--end", end)
        duration = check_seconds("--duration", duration, positive=True)
        if duration is not None:
            if end is not None:
                raise UsageError("use either --end or --duration, not both")
            end = (start or 0.0) + duration
        if start is not None and end is not None and end < start:
            raise UsageError(f"--end ({end}) is before --start ({start})")
        first = stop = None
        if messages is not None:
            if start is not None or end is not None:
                raise UsageError("use either a message range or --start/--end, not both")
            first, stop = parse_range("--messages", messages)
        wanted = frozenset(kinds) if kinds is not None else None
        if wanted is not None and not wanted:
            wanted = None
        return cls(start, end, first, stop, wanted)

    @property
    def everything(self) -> bool:
        """Whether nothing is left out (so an export can be the byte-exact original)."""
        return (
            self.start is None
            and self.end is None
            and self.first is None
            and self.stop is None
            and self.kinds is None
        )

    def span(self, index: Index) -> tuple[int, int]:
        """The first and past-the-last message numbers of the time/number range (no kind
        filter) on a time-sorted index."""
        count = len(index)
        if self.first is not None or self.stop is not None:
            lo, hi, _ = slice(self.first, self.stop).indices(count)
            return lo, max(lo, hi)
        if not count:
            return 0, 0
        times = index.timestamp_us
        origin = int(times[0])
        lo = 0 if self.start is None else int(np.searchsorted(times, origin + _us(self.start)))
        hi = (
            count
            if self.end is None
            else int(np.searchsorted(times, origin + _us(self.end), side="right"))
        )
        return lo, max(lo, hi)

    def numbers(self, index: Index) -> NDArray[np.int64]:
        """Selected message numbers in file order."""
        lo, hi = self.span(index)
        numbers = np.arange(lo, hi, dtype=np.int64)
        if self.kinds is not None:
            numbers = numbers[index.type_mask(self.kinds)[lo:hi]]
        return numbers

    def by_number(self, count: int) -> NDArray[np.int64] | None:
        """The selected numbers of a recording of `count` messages when they follow from the
        count alone (a number range or everything, no kinds), else None: an archive read by
        URL then reads the pages of those messages only, not its whole index."""
        if self.kinds is not None:
            return None
        if self.first is None and self.stop is None and (self.start, self.end) != (None, None):
            return None
        lo, hi, _ = slice(self.first, self.stop).indices(count)
        return np.arange(lo, max(lo, hi), dtype=np.int64)

    def numbers_from(self, reader: ArchiveReader) -> NDArray[np.int64]:
        """`numbers(reader.index)`, without the whole index when `by_number` answers or the
        reader can select page by page (a paged archive by URL: `paged_numbers`)."""
        numbers = self.by_number(len(reader))
        if numbers is not None:
            return numbers
        # a number range wins over times (`span`): the pages are chosen by time and kind only
        by_time = self.first is None and self.stop is None
        span = reader.time_span_us() if by_time and reader.selects_by_page else None
        if span is not None:
            origin = span[0]
            found = reader.paged_numbers(
                None if self.start is None else origin + _us(self.start),
                None if self.end is None else origin + _us(self.end),
                self.kinds,
            )
            if found is not None:
                return found
        return self.numbers(reader.index)

    def span_from(self, reader: ArchiveReader) -> tuple[int, int]:
        """`span(reader.index)` (no kind filter, a time-sorted archive) without the whole
        index when `numbers_from` answers it ((0, 0) when nothing is in range)."""
        numbers = replace(self, kinds=None).numbers_from(reader)
        return (numbers.item(0), numbers.item(-1) + 1) if len(numbers) else (0, 0)

    def chosen_from(self, reader: ArchiveReader) -> NDArray[np.int64]:
        """`chosen(reader.index)`, without the whole index when `numbers_from` answers it."""
        numbers = self.numbers_from(reader)
        if not len(numbers):
            return self.chosen(reader.index)
        return numbers

    def range_options(self) -> str:
        """The message or time range as the options that give it (`--messages 5:2`,
        `--start 10 --end 20`), "" for none: what an error names."""
        if self.first is not None or self.stop is not None:
            first, stop = ("" if n is None else n for n in (self.first, self.stop))
            return f"--messages {first}:{stop}"
        bounds = (("--start", self.start), ("--end", self.end))
        return " ".join(f"{name} {value:.15g}" for name, value in bounds if value is not None)

    def chosen(self, index: Index) -> NDArray[np.int64]:
        """`numbers(index)`, or `EmptySelectionError` saying what selected nothing."""
        numbers = self.numbers(index)
        if not len(numbers):
            raise self.empty(len(index), index_span_s(index), index.types_table)
        return numbers

    def empty(
        self, count: int, span_s: float, kinds: Iterable[Iterable[str]] = ()
    ) -> EmptySelectionError:
        """The error for this selection selecting nothing in a recording of `count` messages
        over `span_s` seconds whose messages carry `kinds` (what any format raises)."""
        known = sorted({kind for row in kinds for kind in row})
        if self.kinds is not None and known and not self.kinds & set(known):
            wanted = ", ".join(sorted(self.kinds))
            return EmptySelectionError(
                f"--type {wanted} selects nothing: the recording has no such kind "
                f"(kinds: {', '.join(known)})"
            )
        what = self.range_options() or "the selection"
        if self.kinds is not None:
            what += f" --type {', '.join(sorted(self.kinds))}"
        return EmptySelectionError(
            f"{what} selects no message (the recording has {count} messages over {span_s:.3f} s)"
        )


def index_span_s(index: Index) -> float:
    """Seconds from the first message to the last."""
    times = index.timestamp_us
    return float(times[-1] - times[0]) / 1e6 if len(times) else 0.0


def _us(seconds: float) -> int:
    return round(seconds * 1e6)


__all__ = ["Selection", "check_number", "check_seconds", "index_span_s", "parse_range"]
