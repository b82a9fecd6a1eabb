"""An MCAP storage file of a ROS 2 bag (rosbag2's MCAP plugin, profile `ros2`), split into its
messages' data and a skeleton that joins back to the file byte for byte.

Why a skeleton and not just "the file minus the data": most rosbag2 MCAP files hold their
messages inside zstd or lz4 chunks, where the data cannot be cut out of the compressed bytes.
A chunk that we can compress again to the very same bytes (libmcap's and the Python writer's
settings, see `mcap_records.REBUILDERS`) is stored decompressed, with its messages' data cut
out and a note of the compressor; `join_mcap` compresses it again. A chunk that does not
rebuild (the Go writer's) stays compressed in the skeleton: its messages are still read, but
join consumes their data and drops it, since the chunk's own bytes already hold them.

The skeleton's operations and `join_mcap` are in `mcap_skeleton.py`; the original file is
never needed again.

Damage: a file cut short (a killed writer: no summary, no footer, a partial record) keeps its
tail as `damage.cut`; a chunk that does not decompress, does not match its CRC, or whose
records do not parse, stays as it is (its messages are lost: what a damaged stream
decompresses to cannot be trusted). Either way the skeleton holds those bytes, so join
still gives the damaged file back whole. The chunk a file is cut in still gives back every
complete message a streaming decompressor reaches from its bytes on disk
(`mcap_salvage.py`): they are read like a kept chunk's (their datas dropped by join) and
the chunk is a `damage.losses` region saying how many were recovered and what was lost.
"""

from __future__ import annotations

import io
import mmap
import struct
import zlib
from collections.abc import Callable, Iterator
from typing import IO

import numpy as np
from numpy.typing import NDArray

from nanorec.contract import Region
from nanorec.errors import BadMagicError, FormatError, TruncatedError

from . import mcap_records as rec
from .mcap_chunks import SpilledOps, big_chunk, checked_starts, mcap_batches
from .mcap_index import index_offsets
from .mcap_records import EMPTY_RUN
from .mcap_salvage import Salvage, declare, describe, salvage_at, salvaged_messages
from .mcap_skeleton import BEGIN, COPY, DATA, DROP, END, MESSAGE_HEAD, Ops
from .mcap_window import chunk_windows, is_big
from .storage import (
    RELEASE_BYTES,
    Batch,
    Damage,
    Definition,
    StoredMessage,
    Topic,
    release_pages,
)

#: channel_id and log_time of a Message record, from its content start
_CHANNEL_TIME = struct.Struct("<H4xQ")
_COPY_DATA = bytes((COPY, DATA))


def _walk(buf: memoryview, start: int) -> Iterator[tuple[int, int, int]]:
    """(offset, opcode, end) of each complete record from `start` on; stops at the first one
    that runs past the buffer (a cut file) or where `EMPTY_RUN` empty records' worth of zeros
    begins, leaving the caller to look at the tail."""
    size = len(buf)
    head = rec.RECORD_HEAD
    pos = start
    while size - pos >= 9:
        opcode, length = head.unpack_from(buf, pos)
        end = pos + 9 + length
        if end > size:
            return
        if opcode == 0 and length == 0 and is_zeros(buf, pos):
            return
        yield pos, opcode, end
        pos = end


def is_zeros(buf: memoryview, pos: int) -> bool:
    """Whether `EMPTY_RUN` empty records' worth of zero bytes (or all that is left, when at
    least that many) start at `pos`."""
    run = buf[pos : pos + 9 * EMPTY_RUN]
    return len(run) == 9 * EMPTY_RUN and not any(run)


class McapFile:
    """One MCAP storage file, read from a buffer (bytes, mmap or memoryview; not copied).

    Opening reads everything but the messages' data: topics (Channel records, in the order
    they first appear), definitions (Schema records), the last `rosbag2` Metadata record, the
    Statistics record, and what is damaged. `messages()` then yields every message in file
    order, and `skeleton()` gives the rest of the file.
    """

    storage = "mcap"

    def __init__(self, buf: bytes | mmap.mmap | memoryview) -> None:
        view = memoryview(buf)
        if view.ndim != 1 or view.format != "B":
            view = view.cast("B")
        self._buf = view
        self.profile = ""
        self.library = ""
        self.topics: list[Topic] = []
        self.definitions: list[Definition] = []
        self.stored_metadata: str | None = None
        self.ros_distro: str | None = None
        self.statistics: rec.McapStatistics | None = None
        self.damage = Damage()
        #: chunks whose messages' data the skeleton leaves out (decompressed or uncompressed)
        self.chunks = 0
        #: chunks kept as they are (not rebuildable): their messages' data stays in them
        self.kept_chunks = 0
        #: how many chunks each compressor (`REBUILDERS` description) rebuilt
        self.rebuilt_by: dict[str, int] = {}
        self._damaged: set[int] = set()  # offsets of records not to look into
        #: offset of the chunk the file is cut in, when it gives messages
        self._salvaged: dict[int, tuple[rec.ChunkHead, Salvage]] = {}
        self._stop = 0  # end of the last complete record
        self._skeleton: bytes | None = None
        #: `batches()`' skeleton, spilled to files, and the file's size
        self._spilled: tuple[SpilledOps, int] | None = None
        #: where `batches()` spills the skeleton: `scratch(what)` gives a temporary file
        #: (convert's, beside its output); None: the system's temporary folder
        self.scratch: Callable[[str], IO[bytes]] | None = None
        self._read = False
        self._scan()

    # --- opening: everything but the messages ---------------------------------------------

    def _scan(self) -> None:
        buf = self._buf
        size = len(buf)
        if size == 0:
            raise TruncatedError("empty MCAP file", offset=0)
        if bytes(buf[:8]) != rec.MAGIC:
            if size < 8 and bytes(buf) == rec.MAGIC[:size]:
                self._stop = 0
                self.damage.cut = Region(0, size, "MCAP file cut inside its magic")
                return
            raise BadMagicError("not an MCAP file", offset=0, expected=rec.MAGIC)
        schemas: dict[int, rec.SchemaRecord] = {}
        channels: dict[int, rec.ChannelRecord] = {}
        rosbag2: dict[str, str] | None = None
        last_opcode = 0
        stop = 8
        released = 0
        for pos, opcode, end in _walk(buf, 8):
            stop, last_opcode = end, opcode
            if end - released > RELEASE_BYTES:  # bounded RSS on a big file
                released = end
                release_pages(buf)
            fields = rec.Fields(buf, pos + 9, end, pos)
            try:
                if opcode == rec.CHUNK:
                    self._scan_chunk(pos, end, schemas, channels)
                elif opcode == rec.MESSAGE:
                    if end - pos < MESSAGE_HEAD:
                        raise FormatError("MCAP message record too short", offset=pos)
                elif opcode == rec.SCHEMA:
                    schema = rec.parse_schema(fields)
                    schemas.setdefault(schema.id, schema)
                elif opcode == rec.CHANNEL:
                    channel = rec.parse_channel(fields)
                    channels.setdefault(channel.id, channel)
                elif opcode == rec.METADATA:
                    name, values = rec.parse_metadata(fields)
                    if name == "rosbag2":
                        rosbag2 = values
                elif opcode == rec.STATISTICS:
                    self.statistics = rec.parse_statistics(fields)
                elif opcode == rec.HEADER:
                    self.profile, self.library = rec.parse_header(fields)
            except FormatError as exc:
                self._damaged.add(pos)
                why = exc.message
                if opcode == rec.CHUNK:  # what it decompresses to may be wrong anywhere
                    why += ": its messages are lost (a damaged stream cannot be trusted)"
                self.damage.damaged.append(Region(pos, end - pos, why))
        self._stop = stop
        tail = size - stop
        closed = last_opcode == rec.FOOTER and bytes(buf[stop:]) == rec.MAGIC
        if tail and not closed and is_zeros(buf, stop):
            self.damage.cut = Region(stop, tail, "MCAP file ends in zeros where records were due")
        elif tail and not closed:
            self.damage.cut = Region(stop, tail, "MCAP file cut inside a record")
            self._cut_record(stop, schemas, channels)
        if not closed:
            self.damage.notes.append("no footer and closing magic: the writer did not finish")
        for channel in channels.values():
            known = schemas.get(channel.schema_id)
            self.topics.append(
                Topic(
                    key=channel.id,
                    name=channel.topic,
                    type=known.name if known else "",
                    serialization_format=channel.message_encoding,
                    offered_qos_profiles=channel.metadata.get("offered_qos_profiles", ""),
                    type_description_hash=channel.metadata.get("topic_type_hash", ""),
                    ros1_connection=(
                        dict(channel.metadata) if channel.message_encoding == "ros1" else {}
                    ),
                )
            )
        for schema in schemas.values():
            text = schema.data.decode("utf-8", "replace")
            self.definitions.append(Definition(schema.name, schema.encoding, text))
        if rosbag2 is not None:
            self.stored_metadata = rosbag2.get("serialized_metadata")
            self.ros_distro = rosbag2.get("ROS_DISTRO")

    # --- cut and damaged chunks: what they still give --------------------------------------

    def _salvage(
        self,
        pos: int,
        end: int,
        schemas: dict[int, rec.SchemaRecord],
        channels: dict[int, rec.ChannelRecord],
    ) -> bool:
        """Read what the chunk the file is cut in (at `pos`) still holds: its schemas and
        channels join the file's, a loss region says what it gave back. False when not even
        its head can be read."""
        try:
            chunk, found = salvage_at(self._buf, pos, end)
        except FormatError:
            return False
        declare(found, schemas, channels)
        self._salvaged[pos] = (chunk, found)
        damage = self.damage
        # the chunk lies past the cut: a loss, reported as damage all the same
        damage.losses.append(Region(pos, end - pos, describe(chunk, found)))
        damage.lost_messages += found.lost_messages
        damage.lost_bytes += found.lost_bytes
        return True

    def _cut_record(
        self,
        pos: int,
        schemas: dict[int, rec.SchemaRecord],
        channels: dict[int, rec.ChannelRecord],
    ) -> None:
        """The record the file is cut in: a chunk gives what it can; a message is lost."""
        opcode = self._buf[pos]
        if opcode == rec.CHUNK and self._salvage(pos, len(self._buf), schemas, channels):
            return
        if opcode in (rec.CHUNK, rec.MESSAGE):
            size = len(self._buf) - pos
            lost = int(opcode == rec.MESSAGE)
            what = (
                "message record cut short: 1 message lost"
                if lost
                else "chunk cut inside its head: an unknown number of messages lost"
            )
            self.damage.losses.append(Region(pos, size, f"MCAP {what}"))
            self.damage.lost_messages += lost
            self.damage.lost_bytes += size

    def _salvaged_messages(self, ops: Ops, pos: int, end: int) -> Iterator[StoredMessage]:
        """The messages a salvaged chunk gives (its bytes are kept as they are, so their
        datas are dropped by join, as a kept chunk's)."""
        chunk, found = self._salvaged[pos]
        head = _CHANNEL_TIME
        for record in salvaged_messages(self._buf, chunk, found, end):
            channel, log_time = head.unpack_from(record, 9)
            yield StoredMessage(channel, log_time, record[MESSAGE_HEAD:])
        if found.messages:
            ops.op(DROP, found.messages)

    def _records(self, pos: int, chunk: rec.ChunkHead) -> memoryview | bytes:
        """A chunk's records, decompressed and checked against its size and CRC."""
        data = self._buf[chunk.records_start : chunk.records_end]
        if chunk.compression == "":
            if len(data) != chunk.uncompressed_size:
                raise FormatError("uncompressed MCAP chunk of another size", offset=pos)
            records: memoryview | bytes = data
        else:
            try:
                records = rec.decompress(chunk.compression, data, chunk.uncompressed_size)
            except FormatError as exc:
                raise FormatError(exc.message, offset=pos) from exc
        if chunk.uncompressed_crc and zlib.crc32(records) != chunk.uncompressed_crc:
            raise FormatError("MCAP chunk CRC does not match its records", offset=pos)
        return records

    def _scan_chunk(
        self,
        pos: int,
        end: int,
        schemas: dict[int, rec.SchemaRecord],
        channels: dict[int, rec.ChannelRecord],
    ) -> None:
        chunk = rec.chunk_head(self._buf, pos, end)
        found_schemas: list[rec.SchemaRecord] = []
        found_channels: list[rec.ChannelRecord] = []
        if is_big(chunk):
            for window, starts in chunk_windows(self._buf, pos, chunk, EMPTY_RUN):
                _declared(window, starts, pos, found_schemas, found_channels)
        else:
            records = self._records(pos, chunk)
            starts = checked_starts(records, pos, EMPTY_RUN, index_offsets(self._buf, end))
            _declared(records, starts, pos, found_schemas, found_channels)
        # only a chunk that parsed whole adds to what the file declares
        for schema in found_schemas:
            schemas.setdefault(schema.id, schema)
        for channel in found_channels:
            channels.setdefault(channel.id, channel)

    # --- reading: the messages, and the skeleton as a by-product --------------------------

    def messages(self) -> Iterator[StoredMessage]:
        """Every complete message in file order, top-level and in chunks (read once: the
        skeleton is written as they go)."""
        if self._read:
            raise FormatError("McapFile.messages() can be read once")
        self._read = True
        ops = Ops()
        buf = self._buf
        order = list(rec.REBUILDERS)
        for item in self.top_level(ops):
            if isinstance(item, StoredMessage):
                yield item
            else:
                yield from self._chunk_messages(ops, *item, order)
        ops.raw(buf[self._stop :])
        if self._stop in self._salvaged:  # the chunk the file is cut in
            yield from self._salvaged_messages(ops, self._stop, len(buf))
        self._skeleton = ops.skeleton(len(buf))

    def top_level(self, ops: Ops) -> Iterator[StoredMessage | tuple[int, int]]:
        """The complete records before the file's end or cut, in order, their skeleton
        operations added to `ops`: a top-level message is given as it is, a chunk as its
        `(start, end)` for the caller to read (then this walk goes on); every other record,
        and a damaged one, is kept whole."""
        buf = self._buf
        if self._stop < 8:
            return
        ops.raw(buf[:8])
        for pos, opcode, end in _walk(buf, 8):
            if end > self._stop:
                break
            if pos in self._damaged:
                ops.raw(buf[pos:end])
            elif opcode == rec.MESSAGE:
                ops.raw(buf[pos : pos + MESSAGE_HEAD])
                ops.op(DATA, 0)
                channel, log_time = _CHANNEL_TIME.unpack_from(buf, pos + 9)
                yield StoredMessage(channel, log_time, buf[pos + MESSAGE_HEAD : end])
            elif opcode == rec.CHUNK:
                yield pos, end
            else:
                ops.raw(buf[pos:end])

    def _chunk_messages(
        self, ops: Ops, pos: int, end: int, order: list[int]
    ) -> Iterator[StoredMessage]:
        buf = self._buf
        chunk = rec.chunk_head(self._buf, pos, end)
        if is_big(chunk):  # a window at a time (`mcap_window`), as batches() reads it
            for batch in big_chunk(self, ops, pos, end, chunk, EMPTY_RUN):
                datas = batch.view()
                for topic, time, at, size in zip(
                    batch.topics.tolist(), batch.times.tolist(), batch.starts.tolist(),
                    batch.lengths.tolist(), strict=True,
                ):  # fmt: skip
                    yield StoredMessage(topic, time, datas[at : at + size])
            return
        records = self._records(pos, chunk)
        view = memoryview(records)
        method: int | None = 0
        if chunk.compression:
            compressed = buf[chunk.records_start : chunk.records_end]
            method = rec.find_rebuilder(chunk.compression, compressed, bytes(records), order)
            if chunk.records_end - chunk.records_start >= 1 << 32:
                method = None  # END records the size in 32 bits
        head = _CHANNEL_TIME
        # `_scan` walked these records whole already: `_walk` cannot stop short here
        if method is None:  # kept: its bytes as they are, its datas dropped by join
            self.kept_chunks += 1
            ops.raw(buf[pos:end])
            count = 0
            for start, opcode, stop in _walk(view, 0):
                if opcode == rec.MESSAGE:
                    count += 1
                    channel, log_time = head.unpack_from(view, start + 9)
                    yield StoredMessage(channel, log_time, view[start + MESSAGE_HEAD : stop])
            if count:
                ops.op(DROP, count)
            return
        self.chunks += 1
        ops.raw(buf[pos : chunk.records_start])
        if method:
            name = rec.REBUILDERS[method][1]
            self.rebuilt_by[name] = self.rebuilt_by.get(name, 0) + 1
            ops.op(BEGIN, method)
        # the hot loop (one turn per message): COPY everything since the last data up to
        # this message's data, then DATA; `Ops.raw`/`op` inlined
        blob, kinds, args = ops.blob, ops.kinds, ops.args
        pending, prev = ops.pending, 0
        for start, opcode, stop in _walk(view, 0):
            if opcode == rec.MESSAGE:
                cut = start + MESSAGE_HEAD
                blob += view[prev:cut]
                kinds += _COPY_DATA
                args.append(pending + cut - prev)
                args.append(0)
                pending, prev = 0, stop
                channel, log_time = head.unpack_from(view, start + 9)
                yield StoredMessage(channel, log_time, view[cut:stop])
        blob += view[prev:]
        ops.pending = pending + len(view) - prev
        if method:
            compressed = buf[chunk.records_start : chunk.records_end]
            ops.op(END, (len(compressed) << 32) | zlib.crc32(compressed))
        ops.raw(buf[chunk.records_end : end])

    def batches(self) -> Iterator[Batch]:
        """`messages()` as batches, a chunk's read with numpy (`mcap_chunks`)."""
        return mcap_batches(self)

    def write_skeleton(self, out: IO[bytes]) -> None:
        """`skeleton()` written to `out` (from the files `batches()` spilled it to)."""
        if self._spilled is None:
            out.write(self.skeleton())
            return
        ops, size = self._spilled
        self._spilled = None
        ops.write_to(out, size)

    def skeleton(self) -> bytes:
        """The file without its messages' data (reads `messages()` through if not done)."""
        if self._skeleton is None and self._spilled is not None:
            out = io.BytesIO()
            self.write_skeleton(out)
            self._skeleton = out.getvalue()
        if self._skeleton is None:
            if self._read:
                raise FormatError("McapFile.skeleton(): messages() was not read through")
            for _ in self.messages():
                pass
        assert self._skeleton is not None
        return self._skeleton


def _declared(
    records: bytes | memoryview,
    starts: NDArray[np.int64],
    pos: int,
    schemas: list[rec.SchemaRecord],
    channels: list[rec.ChannelRecord],
) -> None:
    """The schemas and channels among `records` (a chunk's, at `pos`, whole records starting
    at `starts`), added to the lists."""
    view = memoryview(records)
    opcodes = np.frombuffer(records, np.uint8)[starts]
    ends = np.append(starts[1:], len(records))
    wanted = np.flatnonzero((opcodes == rec.SCHEMA) | (opcodes == rec.CHANNEL))
    for start, opcode, stop in zip(
        starts[wanted].tolist(), opcodes[wanted].tolist(), ends[wanted].tolist(), strict=True
    ):
        if opcode == rec.SCHEMA:
            schemas.append(rec.parse_schema(rec.Fields(view, start + 9, stop, pos)))
        elif opcode == rec.CHANNEL:
            channels.append(rec.parse_channel(rec.Fields(view, start + 9, stop, pos)))


def open_mcap(buf: bytes | mmap.mmap | memoryview) -> McapFile:
    """Open an MCAP storage file's bytes (see `McapFile`)."""
    return McapFile(buf)
