"""`BagRecording`: a converted bag as a `nanorec.contract.Recording`.

Message kinds are topics; `message(n).value` is the decoded ROS message (a dict; `bytes` when
its connection's definition cannot be parsed). `raw(n)` gives the exact payload and
`decoded(n)` the message with its topic, type and time.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np

from nanorec.archive.reader import ArchiveReader
from nanorec.errors import FormatError, UsageError
from nanorec.recording import ArchiveRecording, stamped_rows
from nanorec.selection import Selection
from nanorec.untyped import Payload

from .archived import payload
from .meta import BagMeta
from .msgdef import Decoder

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from nanorec.outputs.mcap import McapRecord, Progress

    from ..common.view import RosView
    from .play import BagPlayer, BagPlayOptions


class BagRecording(ArchiveRecording):
    format = "rosbag"

    def __init__(self, reader: ArchiveReader) -> None:
        super().__init__(reader)
        self.meta = BagMeta(reader)
        self._decoders: dict[int, Decoder | None] = {}
        #: Told of each payload that does not decode, which then comes out as its bytes
        #: (`cat` and `play` warn and go on); None: `decode` raises the `FormatError`.
        self.on_undecodable: Callable[[FormatError], None] | None = None

    def check_members(self) -> None:
        """Read each side member once (`nanorec verify`): FormatError for a bad one."""
        self.meta.check()

    def close(self) -> None:
        for cached in ("time", "conn", "template", "rank", "raw"):  # views of the mapping
            self.meta.__dict__.pop(cached, None)
        super().close()

    # -- messages ------------------------------------------------------------------------

    def kind_of(self, number: int) -> str:
        number = self.reader.index.normalize(number)
        return self.meta.topic(int(self.meta.conn[number]))

    def time_ns(self, number: int) -> int:
        """The message's ROS time, in integer nanoseconds since the Unix epoch."""
        return int(self.meta.time[self.reader.index.normalize(number)])

    def type_of(self, topic: str) -> str:
        """The message type of `topic` (its first connection's; "" for no such topic): what
        `nanorec.converters.ros.common.rosplot` draws it as."""
        for connection in self.meta.connections.values():
            if connection.topic == topic:
                return connection.type
        return ""

    def raw(self, number: int) -> bytes:
        """The message's ROS-serialized payload, exactly as in the bag."""
        return bytes(payload(self.reader, number)["data"])

    def decoder(self, conn: int) -> Decoder | None:
        """The decoder of connection `conn` (None when its definition cannot be parsed)."""
        if conn not in self._decoders:
            connection = self.meta.connections.get(conn)
            decoder = None
            if connection is not None:
                try:
                    decoder = Decoder(connection.type, connection.definition)
                except (FormatError, SyntaxError, RecursionError):
                    decoder = None
            self._decoders[conn] = decoder
        return self._decoders[conn]

    def decode(self, number: int) -> Any:
        value = payload(self.reader, number)
        decoder = self.decoder(int(value["conn"]))
        if decoder is None:
            return bytes(value["data"])
        try:
            return decoder.decode(value["data"])
        except FormatError as error:
            where = "" if error.offset is None else f" at byte {error.offset} of its payload"
            topic = self.meta.topic(int(value["conn"]))
            problem = FormatError(f"message {number} ({topic}): {error.message}{where}")
            if self.on_undecodable is None:
                raise problem from None
            self.on_undecodable(problem)
            return bytes(value["data"])

    def decoded(self, number: int) -> dict[str, Any]:
        """`{"topic", "type", "time", "message"}`: time in ns, the message decoded."""
        conn = int(self.meta.conn[self.reader.index.normalize(number)])
        connection = self.meta.connections.get(conn)
        return {
            "topic": self.meta.topic(conn),
            "type": "" if connection is None else connection.type,
            "time": self.time_ns(number),
            "message": self.decode(number),
        }

    # -- tables --------------------------------------------------------------------------

    @cached_property
    def topics(self) -> list[str]:
        return sorted({c.topic for c in self.meta.connections.values()})

    def table_kinds(self) -> list[str]:
        return self.topics

    def rows(self, kind: str, selection: Selection | None = None) -> Iterator[dict[str, Payload]]:
        """One row per message of topic `kind`: number, time (s from the start), time_ns,
        time_s (Unix seconds), then the message's fields flattened; of a tf topic, one row
        per transform (`item`: its place in the message, then its fields)."""
        if kind not in self.topics:
            raise UsageError(f"no topic {kind!r} (topics: {', '.join(self.topics) or 'none'})")
        from ..common.table_runs import items
        from .columnar import items_field

        numbers = (selection or Selection()).numbers(self.reader.index)
        numbers = numbers[self.meta.conns_of({kind})[numbers]]
        rows = stamped_rows(self, numbers.tolist())
        field = items_field(self, kind)
        yield from rows if field is None else items(rows, field)

    def table_columns(
        self,
        kinds: list[str],
        selection: Selection | None = None,
        progress: Progress | None = None,
    ) -> Iterator[tuple[str, dict[str, Any]]]:
        """`rows` of `kinds` as columns in runs, for `nanorec.outputs.arrow` (`columnar.py`: a
        type of scalars, strings and numeric arrays decoded a run at once)."""
        from .columnar import table_columns

        return table_columns(self, kinds, selection, progress)

    def at(self, t: float) -> dict[str, Any]:
        """The latest message of every topic at `t` seconds from the start, decoded."""
        last = self.number_at(t)
        conn = self.meta.conn[: last + 1]
        latest: dict[str, Any] = {}
        for c in np.unique(conn).tolist():
            number = int(np.flatnonzero(conn == c)[-1])
            latest[self.meta.topic(c)] = self.decode(number)
        return latest

    def play(self, **options: Unpack[BagPlayOptions]) -> BagPlayer:
        """A `BagPlayer`: rosbag play's semantics (rate, start, duration, kinds, loop,
        delay, skip_empty, on_clock and hz; latched topics replayed when starting late)."""
        from .play import BagPlayer

        return BagPlayer(self, **options)

    def mcap_messages(
        self, selection: Selection | None = None, progress: Progress | None = None
    ) -> Iterator[McapRecord]:
        """For `nanorec.outputs.mcap.export_mcap`: the payloads untouched, as `mcap convert` does
        (`progress(done, total)` in messages)."""
        from .mcap import mcap_messages

        return mcap_messages(self, selection, progress)

    @cached_property
    def viewer(self) -> RosView:
        """What `nanorec view` draws of the bag (`common/view.py`), cached per recording."""
        from ..common.view import RosView

        return RosView(self)

    def view_overview(self) -> dict[str, Any]:
        """The paths of every pose-like topic and tf frame, and their bounds."""
        return self.viewer.overview

    def view_scene(self, number: int) -> dict[str, Any]:
        """Each path's latest position at message `number` and the latest images."""
        return self.viewer.scene(number)

    def summary(self) -> dict[str, Any]:
        from .info import facts_of_archive

        base = super().summary()
        base.update(facts_of_archive(self).to_json())
        return base
