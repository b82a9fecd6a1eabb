"""MCAP export of any recording (`nanorec export X --format mcap -o out.mcap`).

MCAP is the log container ROS 2 and Foxglove read natively. This module is format-neutral:
it asks the recording for `McapRecord`s through an optional method
`recording.mcap_messages(selection)` (CARLA gives Foxglove scenes, a bag its own ros1msg
payloads...) and writes them with the `mcap` package's `Writer` (the `[mcap]` extra), one
channel per distinct (topic, schema, encoding, metadata). A recording without that method
is exported generically: each message's decoded value as JSON on the topic `/<kind>`, with a
permissive JSON Schema per kind (NaN and infinities become null, bytes become text or
`{"base64": ...}`: see `nanorec.outputs.tables.json_safe`).

The output appears only when complete (`nanorec.archive.atomic`); an empty selection is a
`UsageError` and nothing is written. A metadata record `nanorec` holds the recording's
summary (its values as JSON text).
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import itertools
import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType, ModuleType
from typing import TYPE_CHECKING, Any

from nanorec._version import __version__
from nanorec.archive.atomic import atomic_output
from nanorec.contract import ExportsToMcap
from nanorec.errors import FormatError, UnsupportedError, UsageError
from nanorec.outputs.tables import json_safe
from nanorec.selection import Selection

if TYPE_CHECKING:
    from mcap.writer import Writer

    from nanorec.contract import Recording

_orjson: ModuleType | None
try:
    _orjson = importlib.import_module("orjson")
except ImportError:  # the standard json module does the same, slower
    _orjson = None

#: MCAP times are unsigned 64-bit nanoseconds.
MAX_TIME_NS = 2**64 - 1
#: Chunk size of the writer: big enough for zstd to work well, small enough to seek.
CHUNK_SIZE = 1 << 20
COMPRESSIONS = ("zstd", "lz4", "none")

#: `progress(done, total)`: how far an export is (`nanorec.cli.inputs.progress_bar`).
Progress = Callable[[int, int], None]

_NO_METADATA: Mapping[str, str] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class McapRecord:
    """One message to write: its channel (topic, schema, encodings, channel metadata), its
    times in nanoseconds and its payload, already encoded.

    Producers should reuse the same `schema_data` bytes object for a schema (its hash is
    then computed once). `sequence` is MCAP's message sequence number (CARLA: the frame).
    """

    topic: str
    schema_name: str
    schema_encoding: str
    schema_data: bytes
    message_encoding: str
    log_time_ns: int
    publish_time_ns: int
    data: bytes
    channel_metadata: Mapping[str, str] = field(default_factory=lambda: _NO_METADATA)
    sequence: int = 0


@dataclass
class _Channel:
    id: int
    topic: str
    schema_name: str
    message_encoding: str
    messages: int = 0


class McapSink:
    """Registers schemas and channels on first use and writes records through `Writer`."""

    def __init__(self, writer: Writer) -> None:
        self.writer = writer
        self.schemas: dict[tuple[str, str, bytes], int] = {}
        self.channels: dict[tuple[Any, ...], _Channel] = {}
        self._last: dict[str, tuple[McapRecord, _Channel]] = {}  # topic -> last record, channel
        self.messages = 0

    def write(self, record: McapRecord, number: int) -> None:
        """Write `record` (the `number`-th of the export, for error messages)."""
        channel = self._channel(record)
        log_time, publish_time = record.log_time_ns, record.publish_time_ns
        if not (0 <= log_time <= MAX_TIME_NS and 0 <= publish_time <= MAX_TIME_NS):
            raise FormatError(
                f"message {number} on {record.topic}: time {log_time} ns is outside MCAP's "
                "unsigned 64-bit nanoseconds"
            )
        self.writer.add_message(
            channel.id, log_time, record.data, publish_time, record.sequence & 0xFFFFFFFF
        )
        channel.messages += 1
        self.messages += 1

    def _channel(self, record: McapRecord) -> _Channel:
        last = self._last.get(record.topic)
        if last is not None and _same_channel(last[0], record):
            return last[1]
        key = (
            record.topic,
            record.message_encoding,
            record.schema_name,
            record.schema_encoding,
            record.schema_data,
            tuple(sorted(record.channel_metadata.items())),
        )
        channel = self.channels.get(key)
        if channel is None:
            schema_key = (record.schema_name, record.schema_encoding, record.schema_data)
            schema_id = self.schemas.get(schema_key)
            if schema_id is None:
                schema_id = self.writer.register_schema(*schema_key)
                self.schemas[schema_key] = schema_id
            channel_id = self.writer.register_channel(
                record.topic, record.message_encoding, schema_id, dict(record.channel_metadata)
            )
            channel = _Channel(
                channel_id, record.topic, record.schema_name, record.message_encoding
            )
            self.channels[key] = channel
        self._last[record.topic] = (record, channel)
        return channel


def _same_channel(a: McapRecord, b: McapRecord) -> bool:
    return (
        a.schema_data is b.schema_data
        and a.schema_name == b.schema_name
        and a.message_encoding == b.message_encoding
        and a.schema_encoding == b.schema_encoding
        and (a.channel_metadata is b.channel_metadata or a.channel_metadata == b.channel_metadata)
    )


def export_mcap(
    recording: Any,
    output: Path,
    *,
    selection: Selection | None = None,
    overwrite: bool = False,
    compression: str = "zstd",
    chunk_size: int = CHUNK_SIZE,
    progress: Progress | None = None,
) -> list[str]:
    """Write the selected messages of `recording` to a new MCAP file at `output`.

    `progress(done, total)` is called as the export goes, in the recording's messages,
    when its `mcap_messages` takes a `progress` keyword (those of nanorec do) or for the
    generic records.

    Returns the report lines (file, size, counts, one line per channel). Raises
    `UnsupportedError` without the `mcap` package, `OutputExistsError` when `output` exists
    and not `overwrite`, `UsageError` for an empty selection, a bad compression or an
    output that is the recording itself.
    """
    writer_class, compression_type = _writer_class(compression)
    output = Path(output)
    source = getattr(getattr(recording, "reader", None), "path", None)
    if source is not None and output.resolve() == Path(source).resolve():
        raise UsageError(f"{output} is the recording itself: choose another output")
    selection = selection or Selection()
    records: Iterator[McapRecord]
    if not isinstance(recording, ExportsToMcap):
        records = generic_records(recording, selection, progress)
    elif progress is not None and _takes_progress(recording.mcap_messages):
        producer: Callable[..., Iterator[McapRecord]] = recording.mcap_messages  # a ROS
        # recording's also takes progress
        records = producer(selection, progress=progress)
    else:
        records = recording.mcap_messages(selection)
    first = next(records, None)
    if first is None:
        raise UsageError("the selection holds no message: nothing to export")
    with atomic_output(output, overwrite=overwrite) as stream:
        writer = writer_class(stream, chunk_size=chunk_size, compression=compression_type)
        profile = {"ros1": "ros1", "cdr": "ros2"}.get(first.message_encoding, "")
        writer.start(profile=profile, library=_library())
        sink = McapSink(writer)
        for number, record in enumerate(itertools.chain((first,), records)):
            sink.write(record, number)
        writer.add_metadata("nanorec", _summary_metadata(recording))
        writer.finish()
        size = stream.tell()
    return _report(output, size, sink, compression)


def _takes_progress(producer: Callable[..., object]) -> bool:
    """Whether a recording's `mcap_messages` reports progress (a later addition to the
    protocol: producers written before it take the selection only)."""
    try:
        return "progress" in inspect.signature(producer).parameters
    except (TypeError, ValueError):
        return False


def _writer_class(compression: str) -> tuple[Any, Any]:
    if compression not in COMPRESSIONS:
        raise UsageError(
            f"MCAP compression is one of {', '.join(COMPRESSIONS)}, not {compression!r}"
        )
    try:
        from mcap.writer import CompressionType, Writer
    except ImportError:
        raise UnsupportedError(
            "MCAP export needs the mcap package: pip install 'nanorec[mcap]'"
        ) from None
    return Writer, CompressionType[compression.upper()]


def _library() -> str:
    return f"nanorec {__version__}"


def _summary_metadata(recording: Any) -> dict[str, str]:
    try:
        summary = recording.summary()
    except AttributeError:
        return {"format": str(getattr(recording, "format", ""))}
    return {
        str(key): value if isinstance(value, str) else json.dumps(json_safe(value))
        for key, value in summary.items()
    }


def _report(output: Path, size: int, sink: McapSink, compression: str) -> list[str]:
    channels = sorted(sink.channels.values(), key=lambda c: c.id)
    lines = [
        f"{output}: {size} bytes, {sink.messages} messages on {len(channels)} channels "
        f"({compression} chunks)"
    ]
    width = max(len(c.topic) for c in channels)
    for channel in channels:
        lines.append(
            f"  {channel.topic:<{width}}  {channel.messages:>8} msgs  "
            f"{channel.schema_name or '(no schema)'} [{channel.message_encoding}]"
        )
    return lines


def ros1_record(
    *,
    topic: str,
    datatype: str,
    message_definition: str | bytes,
    data: bytes,
    time_ns: int,
    connection_header: Mapping[str, str | bytes] | None = None,
    sequence: int = 0,
) -> McapRecord:
    """A ROS1 message as `mcap convert` writes it: `ros1` encoding, the connection's
    `message_definition` as a `ros1msg` schema named after its type, the payload untouched,
    and the connection header's other fields (`topic`, `md5sum`, `callerid`, `latching`) as
    channel metadata, values as in the bag (`latching` stays "1"/"0", as `mcap convert`
    keeps it). Pass the same definition bytes object for a connection's messages."""
    definition = (
        message_definition.encode() if isinstance(message_definition, str) else message_definition
    )
    metadata = {
        key: value.decode("utf-8", "replace") if isinstance(value, bytes) else value
        for key, value in (connection_header or {}).items()
        if key not in ("type", "message_definition") and value is not None
    }
    return McapRecord(
        topic=topic,
        schema_name=datatype,
        schema_encoding="ros1msg",
        schema_data=definition,
        message_encoding="ros1",
        log_time_ns=time_ns,
        publish_time_ns=time_ns,
        data=data,
        channel_metadata=metadata,
        sequence=sequence,
    )


# -- the generic fallback: decoded values as JSON ---------------------------------------------


def generic_records(
    recording: Recording, selection: Selection, progress: Progress | None = None
) -> Iterator[McapRecord]:
    """Each selected message's decoded value as a JSON object on `/<kind>` (a value that is
    not a map is wrapped as `{"value": ...}`; with a kind filter, a message carrying several
    types goes on the first one selected); times are the archive index's, in ns."""
    index = recording.reader.index
    stamps = index.timestamp_us
    wanted = selection.kinds
    schemas: dict[str, bytes] = {}
    reporter = Reporter(progress, len(selection.numbers(index)) if progress else 0)
    for message in recording.messages(selection):
        reporter.step()
        kind = message.kind
        if wanted is not None and kind not in wanted:  # selected for another of its types
            kind = next((name for name in index.types(message.number) if name in wanted), kind)
        kind = kind or "message"
        schema = schemas.get(kind)
        if schema is None:
            schema = schemas[kind] = permissive_schema(kind)
        value = json_safe(plain(message.value))
        if not isinstance(value, dict):
            value = {"value": value}
        time_ns = int(stamps[message.number]) * 1000
        yield McapRecord(
            topic=kind if kind.startswith("/") else "/" + kind,
            schema_name=kind,
            schema_encoding="jsonschema",
            schema_data=schema,
            message_encoding="json",
            log_time_ns=time_ns,
            publish_time_ns=time_ns,
            data=json_bytes(value),
            sequence=message.number,
        )
    reporter.done()


class Reporter:
    """Calls `progress(done, total)` every `every` steps and at the end (a call a message
    would cost more than some messages)."""

    def __init__(self, progress: Progress | None, total: int, every: int = 256) -> None:
        self.progress = progress
        self.total = total
        self.every = every
        self.count = 0

    def step(self) -> None:
        self.count += 1
        if self.progress is not None and self.count % self.every == 0:
            self.progress(self.count, self.total)

    def done(self) -> None:
        if self.progress is not None:
            self.progress(self.total, self.total)


def permissive_schema(title: str) -> bytes:
    """A JSON Schema accepting any object, named `title`."""
    return json_bytes({"title": title, "type": "object", "additionalProperties": True})


def json_bytes(value: Any) -> bytes:
    """Compact UTF-8 JSON of `value`; NaN and infinities become null (then, and for values
    that are not plain JSON, through `json_safe`), never invalid JSON. Uses orjson when
    installed (the `[mcap]` extra): 5-10 times faster on Foxglove's nested messages."""
    if _orjson is not None:
        try:
            return bytes(_orjson.dumps(value))
        except TypeError:  # bytes, numpy values, non-str keys, huge ints: the slow way
            pass
    try:
        text = json.dumps(value, allow_nan=False, ensure_ascii=False, separators=(",", ":"))
    except (ValueError, TypeError):
        text = json.dumps(
            json_safe(value), allow_nan=False, ensure_ascii=False, separators=(",", ":")
        )
    return text.encode()


def plain(value: Any) -> Any:
    """Dataclasses and named tuples as maps, recursively; everything else as it is (then
    `json_safe` makes it JSON)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, tuple) and hasattr(value, "_asdict"):
        return {key: plain(item) for key, item in value._asdict().items()}
    if isinstance(value, Mapping):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [plain(item) for item in value]
    return value


__all__ = [
    "COMPRESSIONS",
    "McapRecord",
    "McapSink",
    "Progress",
    "Reporter",
    "export_mcap",
    "generic_records",
    "json_bytes",
    "permissive_schema",
    "plain",
    "ros1_record",
]
