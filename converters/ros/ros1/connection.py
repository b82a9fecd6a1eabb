"""Connection records: a topic, and the publisher's connection header (type, md5sum,
message_definition, callerid, latching...) as a field list of its own."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .records import Fields, get, need, parse_fields, u32


@dataclass(frozen=True)
class Connection:
    id: int
    topic: str
    #: The record header's fields and the connection header's, as read (order kept).
    header: Fields
    fields: Fields

    @classmethod
    def parse(cls, header: Fields, data: bytes, where: int) -> Connection:
        conn = u32(need(header, b"conn", 4, where))
        topic = need(header, b"topic", None, where).decode("utf-8", "replace")
        return cls(conn, topic, header, parse_fields(data, 0, len(data), where))

    def _text(self, name: bytes) -> str:
        value = get(self.fields, name)
        return "" if value is None else value.decode("utf-8", "replace")

    @property
    def type(self) -> str:
        return self._text(b"type")

    @property
    def md5sum(self) -> str:
        return self._text(b"md5sum")

    @property
    def definition(self) -> str:
        return self._text(b"message_definition")

    @property
    def callerid(self) -> str:
        return self._text(b"callerid")

    @property
    def latching(self) -> bool:
        return get(self.fields, b"latching") == b"1"

    def to_json(self) -> dict[str, Any]:
        return {
            "conn": self.id,
            "topic": self.topic,
            "type": self.type,
            "md5sum": self.md5sum,
            "callerid": self.callerid,
            "latching": self.latching,
        }

    def pack(self) -> list[Any]:
        """For the archive's side member (`unpack` reverses it)."""
        return [self.id, self.topic, [list(f) for f in self.header], [list(f) for f in self.fields]]

    @classmethod
    def unpack(cls, value: Any) -> Connection:
        conn, topic, header, fields = value
        return cls(
            int(conn),
            str(topic),
            tuple((bytes(n), bytes(v)) for n, v in header),
            tuple((bytes(n), bytes(v)) for n, v in fields),
        )
