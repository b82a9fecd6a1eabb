"""A reader-side check of an MCAP file, in the spirit of `mcap doctor` (whose Go CLI is not
installable from PyPI or npm): every record's CRC, every message's channel and schema
registered before it, the summary's statistics equal to what the data holds, and the
indexed reader (chunk and message indexes) giving back exactly the streamed messages."""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from mcap.reader import make_reader
from mcap.records import Channel, Message, Schema
from mcap.stream_reader import StreamReader


@dataclass
class Checked:
    schemas: dict[int, Schema]
    channels: dict[int, Channel]
    messages: list[Message]

    def topic_counts(self) -> dict[str, int]:
        counts = Counter(self.channels[m.channel_id].topic for m in self.messages)
        return dict(counts)

    def by_topic(self, topic: str) -> list[Message]:
        return [m for m in self.messages if self.channels[m.channel_id].topic == topic]


def _key(message: Message) -> tuple[int, int, int, int, str]:
    digest = hashlib.sha256(message.data).hexdigest()
    return (message.log_time, message.channel_id, message.sequence, message.publish_time, digest)


def doctor(path: Path) -> Checked:
    """Check `path` (AssertionError on the first problem); returns what it holds."""
    schemas: dict[int, Schema] = {}
    channels: dict[int, Channel] = {}
    messages: list[Message] = []
    with path.open("rb") as stream:
        for record in StreamReader(stream, validate_crcs=True).records:
            if isinstance(record, Schema):
                assert schemas.get(record.id, record) == record, f"schema {record.id} redefined"
                schemas[record.id] = record
            elif isinstance(record, Channel):
                assert channels.get(record.id, record) == record, f"channel {record.id} redefined"
                assert record.schema_id == 0 or record.schema_id in schemas
                channels[record.id] = record
            elif isinstance(record, Message):
                assert record.channel_id in channels, "message before its channel"
                messages.append(record)
    with path.open("rb") as stream:
        reader = make_reader(stream)
        summary = reader.get_summary()
        assert summary is not None and summary.statistics is not None
        stats = summary.statistics
        assert stats.message_count == len(messages)
        assert stats.channel_count == len(channels)
        assert stats.schema_count == len(schemas)
        counts = Counter(m.channel_id for m in messages)
        assert {k: v for k, v in stats.channel_message_counts.items() if v} == dict(counts)
        if messages:
            assert stats.message_start_time == min(m.log_time for m in messages)
            assert stats.message_end_time == max(m.log_time for m in messages)
        indexed = [message for _, _, message in reader.iter_messages(log_time_order=False)]
        assert sorted(map(_key, indexed)) == sorted(map(_key, messages))
        in_order = [message.log_time for _, _, message in reader.iter_messages()]
        assert in_order == sorted(in_order)
    return Checked(schemas, channels, messages)
