"""MCAP messages back to plain values with the real decoders: JSON through `json`, protobuf
through the `protobuf` package and the channel's own FileDescriptorSet. A protobuf message
becomes the dict its Foxglove JSON form would be (every field, defaults included; times
and durations as `{"sec", "nsec"}`; enums as integers), so the tests compare both alike."""

from __future__ import annotations

import functools
import json
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.descriptor import FieldDescriptor

_TIMES = ("google.protobuf.Timestamp", "google.protobuf.Duration")


@functools.lru_cache(maxsize=16)
def message_class(schema_data: bytes, name: str) -> Any:
    """The protobuf class of type `name` in a serialized FileDescriptorSet."""
    files = descriptor_pb2.FileDescriptorSet.FromString(schema_data)
    pool = descriptor_pool.DescriptorPool()
    for file in files.file:
        pool.Add(file)
    descriptor = pool.FindMessageTypeByName(name)
    if hasattr(message_factory, "GetMessageClass"):  # protobuf >= 4.22
        return message_factory.GetMessageClass(descriptor)
    return message_factory.MessageFactory(pool).GetPrototype(descriptor)


def parse(schema_data: bytes, name: str, data: bytes) -> Any:
    """The protobuf message; AssertionError when the bytes hold fields the schema lacks or
    do not re-encode to the same size (nothing left over, nothing misread)."""
    value = message_class(schema_data, name).FromString(data)
    assert not _unknown(value), f"{name}: fields outside the schema"
    assert value.ByteSize() <= len(data)
    return value


def _unknown(value: Any) -> bool:
    """Whether the message (or one inside it) holds fields its schema does not name."""
    known = type(value)()
    known.CopyFrom(value)
    known.DiscardUnknownFields()
    return bool(known.ByteSize() != value.ByteSize())


def _repeated(field: Any) -> bool:
    if hasattr(field, "is_repeated"):
        return bool(field.is_repeated)
    return bool(field.label == FieldDescriptor.LABEL_REPEATED)


def plain(value: Any) -> Any:
    """A protobuf message as its Foxglove JSON dict."""
    if value.DESCRIPTOR.full_name in _TIMES:
        return {"sec": value.seconds, "nsec": value.nanos}
    out: dict[str, Any] = {}
    for field in value.DESCRIPTOR.fields:
        item = getattr(value, field.name)
        if field.type == FieldDescriptor.TYPE_MESSAGE:
            out[field.name] = [plain(x) for x in item] if _repeated(field) else plain(item)
        else:
            out[field.name] = list(item) if _repeated(field) else item
    return out


def decode(checked: Any, message: Any) -> Any:
    """A message of a file `doctor` read, as plain values (JSON or protobuf)."""
    channel = checked.channels[message.channel_id]
    if channel.message_encoding == "json":
        return json.loads(message.data)
    if channel.message_encoding == "protobuf":
        schema = checked.schemas[channel.schema_id]
        return plain(parse(schema.data, schema.name, message.data))
    raise AssertionError(f"no decoder for {channel.message_encoding}")


def record_value(record: Any) -> Any:
    """An `McapRecord`'s payload as plain values (JSON or protobuf)."""
    if record.message_encoding == "json":
        return json.loads(record.data)
    assert record.message_encoding == "protobuf" and record.schema_encoding == "protobuf"
    return plain(parse(record.schema_data, record.schema_name, record.data))
