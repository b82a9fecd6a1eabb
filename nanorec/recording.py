"""`ArchiveRecording`: the `Recording` surface over any archive, for converters to extend.

It answers everything the index can (length, times, time of message *i*, selection) and
decodes messages with `decode`, which a converter overrides. An archive no converter claims
(NanoVer's own recordings, archives of a format that is not installed) opens as an
`ArchiveRecording` itself: each message's value is its map, its kind its first type.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import replace
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from nanorec.archive.reader import ArchiveReader
from nanorec.contract import Message
from nanorec.errors import OutOfRangeError, UsageError
from nanorec.outputs.tables import flatten
from nanorec.selection import Selection, check_seconds
from nanorec.untyped import Payload

if TYPE_CHECKING:
    import pyarrow as pa
    from typing_extensions import Unpack

    from nanorec.contract import PlayOptions
    from nanorec.player import Player

_R = TypeVar("_R", bound="ArchiveRecording")


class ArchiveRecording:
    """A recording read from an archive; use as a context manager or call `close()`."""

    format = "archive"

    def __init__(self, reader: ArchiveReader) -> None:
        self.reader = reader
        # the reader's own questions, not its whole index: a paged archive by URL answers
        # them from its page table or one page (`nanorec.archive.pages`)
        span = reader.time_span_us()
        self._origin_us = span[0] if span is not None else 0

    # -- lifetime --------------------------------------------------------------------------

    def close(self) -> None:
        self.reader.close()

    def __enter__(self: _R) -> _R:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return (
            f"<{type(self).__name__} {self.reader.path.name}: {len(self)} messages, "
            f"{self.duration:.3f} s>"
        )

    # -- time ------------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self.reader)

    @property
    def start_time(self) -> float:
        """Seconds, in the format's own clock, of the first message (0.0 when empty)."""
        return self._origin_us / 1e6

    @property
    def end_time(self) -> float:
        span = self.reader.time_span_us()
        return span[1] / 1e6 if span is not None else self.start_time

    @property
    def duration(self) -> float:
        """Seconds from the first message to the last."""
        return self.end_time - self.start_time

    def time_of(self, number: int) -> float:
        return (self.reader.timestamp_us(number) - self._origin_us) / 1e6

    def number_at(self, t: float) -> int:
        """The message playing at `t` seconds from the start (the last one at or before it;
        the first when `t` is before everything)."""
        check_seconds("t", t)
        position = self.reader.index_at_time(self._origin_us + round(t * 1e6))
        return 0 if position is None else position

    # -- messages --------------------------------------------------------------------------

    def kind_of(self, number: int) -> str:
        """The kind of message `number`: its first top-level key by default."""
        types = self.reader.message_types(number)
        return types[0] if types else ""

    def decode(self, number: int) -> Payload:
        """Message `number` decoded: its map, for a plain archive."""
        return self.reader.read(number)

    def message(self, number: int) -> Message:
        return Message(number, self.time_of(number), self.kind_of(number), self.decode(number))

    def messages(self, selection: Selection | None = None) -> Iterator[Message]:
        selection = selection or Selection()
        numbers = selection.numbers_from(self.reader)
        # a pass: read ahead (by URL, any run: its messages in one range, not one each)
        if len(numbers) > 1024 or (len(numbers) > 1 and self.reader.remote is not None):
            whole = len(numbers) == len(self)
            run = None if whole else (numbers.item(0), numbers.item(-1))
            self.reader.advise_sequential(run=run)
        for number in numbers.tolist():
            yield self.message(number)

    def at(self, t: float) -> Payload:
        if not len(self):
            raise OutOfRangeError("the recording holds no message")
        return self.decode(self.number_at(t))

    def play(self, **options: Unpack[PlayOptions]) -> Player:
        """A `nanorec.player.Player` over this recording (see its options)."""
        from nanorec.player import Player

        return Player(self, **options)

    def table_kinds(self) -> list[str]:
        """The distinct top-level keys of the messages."""
        return sorted({name for types, _ in self.reader.types_counts() for name in types})

    def rows(self, kind: str, selection: Selection | None = None) -> Iterator[dict[str, Payload]]:
        """Each message carrying `kind`: `number`, `time`, then its `kind` value flattened."""
        if kind not in self.table_kinds():
            raise UsageError(
                f"no messages of kind {kind!r} (kinds: {', '.join(self.table_kinds()) or 'none'})"
            )
        selection = selection or Selection()
        if selection.kinds is None or kind in selection.kinds:  # those carrying `kind`: page
            numbers = replace(selection, kinds=frozenset({kind})).numbers_from(self.reader)
        else:  # carrying `kind` and one of the others
            index = self.reader.index
            numbers = selection.numbers(index)
            numbers = numbers[index.has_type(kind)[numbers]]
        for number in numbers.tolist():
            value = self.reader.read(number).get(kind)
            row: dict[str, Any] = {"number": number, "time": self.time_of(number)}
            row.update(flatten(value) if isinstance(value, dict) else {kind: value})
            yield row

    def table(self, kind: str, selection: Selection | None = None) -> pa.Table:
        """`rows(kind)` as an Arrow table (needs the `[tables]` extra): `.to_pandas()`,
        `polars.from_arrow(...)`, or query it with DuckDB."""
        from nanorec.outputs.arrow import table

        return table(self, kind, selection)

    def summary(self) -> dict[str, Any]:
        """Counts per kind, times and the archive's self-description."""
        kinds: Counter[str] = Counter()
        for types, count in self.reader.types_counts():
            if count:
                for name in types or ("",):
                    kinds[name] += count
        description = self.reader.description or {}
        return {
            "path": str(self.reader.path),
            "format": self.format,
            "producer": _plain(description.get("producer")),
            "messages": len(self),
            "start_time": self.start_time,
            "end_time": self.end_time,
            "duration": self.duration,
            "kinds": dict(sorted(kinds.items())),
        }


class Stamped(Protocol):
    """A recording whose messages have times in nanoseconds (ROS1 and ROS 2 bags)."""

    def time_ns(self, number: int) -> int: ...

    def time_of(self, number: int) -> float: ...

    def decode(self, number: int) -> Payload: ...


def stamped_rows(rec: Stamped, numbers: Iterable[int]) -> Iterator[dict[str, Any]]:
    """Rows of a recording stamped in nanoseconds (ROS1 and ROS 2 bags): number, time (s
    from the start), time_ns, time_s (Unix seconds), then the decoded message flattened
    (`data` when it is not a map). `rec` has `time_ns`, `time_of` and `decode`."""
    for number in numbers:
        ns = rec.time_ns(number)
        row: dict[str, Any] = {
            "number": number,
            "time": rec.time_of(number),
            "time_ns": ns,
            "time_s": ns / 1e9,
        }
        value = rec.decode(number)
        row.update(flatten(value) if isinstance(value, dict) else {"data": value})
        yield row


def _plain(value: Any) -> Any:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


__all__ = ["ArchiveRecording", "stamped_rows"]
