"""A bag's messages for MCAP (`nanorec export x.bag --format mcap`), as `mcap convert`
writes them: `ros1` encoding, each connection's definition as its `ros1msg` schema, every
payload byte-identical, the connection header (callerid, latching, md5sum) as channel
metadata."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from nanorec.outputs.mcap import McapRecord, Progress, Reporter, ros1_record
from nanorec.selection import Selection

from .archived import payload

if TYPE_CHECKING:
    from .recording import BagRecording


def mcap_messages(
    recording: BagRecording, selection: Selection | None, progress: Progress | None = None
) -> Iterator[McapRecord]:
    meta = recording.meta
    reader = recording.reader
    numbers = (selection or Selection()).numbers(reader.index)
    reporter = Reporter(progress, len(numbers), every=1024)
    channels: dict[int, tuple[str, str, bytes, dict[str, bytes]]] = {}
    for number in numbers.tolist():
        conn = int(meta.conn[number])
        channel = channels.get(conn)
        if channel is None:
            known = meta.connections.get(conn)
            fields: dict[str, bytes] = {"topic": meta.topic(conn).encode()}
            if known is not None:  # the record's topic, then the connection header as it is
                fields.update((n.decode("utf-8", "replace"), v) for n, v in known.fields)
            channel = channels[conn] = (
                meta.topic(conn),
                "" if known is None else known.type,
                bytes(fields.get("message_definition", b"")),
                fields,
            )
        topic, datatype, definition, header = channel
        yield ros1_record(
            topic=topic,
            datatype=datatype,
            message_definition=definition,
            data=bytes(payload(reader, number)["data"]),
            time_ns=int(meta.time[number]),
            connection_header=header,
        )
        reporter.step()
    reporter.done()
