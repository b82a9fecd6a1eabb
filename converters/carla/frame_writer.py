"""The frames of a CARLA recorder file, written the way a CARLA server of a release writes them.

CARLA's own writer is the simulator: it fixes the header, the per-frame packet order of
its release (spec §3.2), which packets are written even when empty, the −1.0 duration
left in the last frame and the back-patched durations of all the others (spec §3.3).
`FrameWriter` reproduces all of that for any `Family`, taking each frame's records as
serialized bytes per kind (`_add`); `RecordingWriter` (`writer.py`) is what callers use:
one method per packet kind, and `add_records` / `add_var` / `add_raw` for bulk writers.

It never seeks: the last frame is kept in memory until the next frame's time is known,
then its duration is patched in the buffer and the buffer is written out. So it streams
to pipes and sockets as well as to files with bounded memory (one frame plus a flush
threshold), and produces the same bytes as CARLA's seek-and-patch writer. A path is
written through `nanorec.archive.atomic` (a partial file beside it, renamed when complete).
"""

from __future__ import annotations

import math
import os
import struct
from collections import Counter
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from types import TracebackType
from typing import BinaryIO, TypeVar

import numpy as np

from nanorec.archive.atomic import atomic_output
from nanorec.errors import FormatError, UnsupportedError, UsageError

from .geometry import carla_delta
from .ids import (
    ADDITIONAL_DATA,
    MAGIC,
    SHAPES,
    Engine,
    Family,
    Kind,
    Shape,
)
from .ids import (
    family as family_named,
)
from .records import (
    I64,
    PACKET_HEADER,
    PHYSICS_WHEEL_DTYPES,
    U16,
    fixed_dtype,
    pack_string,
)

__all__ = ["BACK_PATCHED", "DEFAULT_DATE", "FrameWriter", "WriterStats"]

# A fixed file date (2023-11-14 22:13:20 UTC) so that written files are reproducible;
# CARLA itself stores `time(0)` at `start_recorder`.
DEFAULT_DATE = 1_700_000_000

# Packets whose size CARLA writes as 0 and then seeks back to patch (read from the
# recorder sources of 0.9.10-0.9.16). Every seek flushes CARLA's file buffer, so a
# crashed server leaves a file that ends just after one of these (spec §9).
BACK_PATCHED: frozenset[Kind] = frozenset(
    {
        Kind.EVENT_ADD,
        Kind.EVENT_DEL,
        Kind.EVENT_PARENT,
        Kind.ANIM_VEHICLE,
        Kind.PHYSICS_CONTROL,
        Kind.WALKER_BONES,
        Kind.ANIM_VEHICLE_WHEELS,
    }
)

_MAX_COUNT = 0xFFFF  # every packet count is a u16
_F64 = struct.Struct("<d")
_FRAME_START = struct.Struct("<BIQdd")
_SINGLE = struct.Struct("<BId")
_DURATION_OFFSET = 5 + 8  # packet header + u64 frame id


@dataclass
class WriterStats:
    """What a writer has put in its file so far (complete packets only)."""

    frames: int = 0
    size: int = 0  # bytes, header included
    last_elapsed: float | None = None  # seconds; the `Duration` CARLA's file info prints
    packets: Counter[Kind] = field(default_factory=Counter)
    spawned: Counter[int] = field(default_factory=Counter)  # actor type byte -> count
    destroyed: Counter[int] = field(default_factory=Counter)  # actor type byte -> count


@dataclass
class _Packet:
    kind: Kind
    data: bytes


_W = TypeVar("_W", bound="FrameWriter")


class _Aborted(Exception):
    """Ends the atomic output of an aborted writer (its partial file is removed)."""


class FrameWriter:
    """Writes one CARLA recorder file for a release `Family`, frame by frame, from records
    of each kind; see `RecordingWriter` for the arguments and a method per packet kind."""

    def __init__(
        self,
        target: str | os.PathLike[str] | BinaryIO,
        family: Family | str,
        *,
        map_name: str,
        date: int = DEFAULT_DATE,
        additional_data: bool = False,
        overwrite: bool = False,
        physics_wheel_size: int | None = None,
        flush_bytes: int = 1 << 20,
    ) -> None:
        self.family = family_named(family) if isinstance(family, str) else family
        self.engine = self.family.engine
        self.additional_data = additional_data
        self.map_name = map_name
        self.date = date
        order_kinds = {item.kind for item in self.family.order}
        if additional_data and not (order_kinds & ADDITIONAL_DATA):
            raise UnsupportedError(
                f"CARLA family {self.family.name!r} cannot record additional data"
            )
        if self.engine is Engine.UE4 and Kind.PHYSICS_CONTROL in order_kinds:
            wheel = physics_wheel_size or self.family.physics_wheel_size or 48
            if wheel not in PHYSICS_WHEEL_DTYPES:
                raise UsageError(f"UE4 physics wheel records are 36 or 48 bytes, not {wheel}")
            self.physics_wheel_size: int | None = wheel
        else:
            self.physics_wheel_size = physics_wheel_size
        self._writable = frozenset(
            kind
            for kind in order_kinds - {Kind.FRAME_START, Kind.FRAME_END}
            if additional_data or kind not in ADDITIONAL_DATA
        )
        self._order = tuple(
            (item.kind, item.always, self.family.id_of(item.kind))
            for item in self.family.order
            if item.kind in self._writable or item.kind in (Kind.FRAME_START, Kind.FRAME_END)
        )
        self._dtypes = {
            kind: fixed_dtype(kind, self.engine)
            for kind in self._writable
            if SHAPES[kind] in (Shape.FIXED, Shape.SINGLE)
        }
        self._flush_bytes = flush_bytes
        self.stats = WriterStats()
        self._actor_types: dict[int, int] = {}

        self._closed = False

        self._buf = bytearray()
        self._flushed = 0  # bytes already handed to the stream
        self._frame_id = 0
        self._open = False
        self._elapsed = 0.0
        self._prev_duration_at: int | None = None  # absolute offset of last frame's duration
        self._chunks: dict[Kind, list[bytes]] = {}
        self._counts: dict[Kind, int] = {}
        self._singles: dict[Kind, float] = {}
        self._pending_types: dict[int, int] = {}
        self._pending_deletes: list[int] = []

        header = (
            U16.pack(self.family.header_version)
            + pack_string(MAGIC.decode("ascii"))
            + I64.pack(date)
            + pack_string(map_name)
        )
        self._buf += header
        self.stats.size = len(header)
        # Last: nothing above can fail and leave a partial file open.
        self._output: AbstractContextManager[BinaryIO] | None = None
        if isinstance(target, (str, os.PathLike)):
            self._output = atomic_output(target, overwrite=overwrite)
            self._stream: BinaryIO = self._output.__enter__()
        else:
            self._stream = target

    # ------------------------------------------------------------------ lifecycle

    def __enter__(self: _W) -> _W:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()

    @property
    def frame_id(self) -> int:
        """The id of the open (or last written) frame; 0 before the first frame."""
        return self._frame_id

    @property
    def elapsed(self) -> float:
        """Elapsed seconds of the open (or last written) frame."""
        return self._elapsed

    @property
    def in_frame(self) -> bool:
        """True between `begin_frame` and `end_frame`."""
        return self._open

    @property
    def closed(self) -> bool:
        return self._closed

    def begin_frame(self, *, elapsed: float | None = None, delta: float | None = None) -> int:
        """Open the next frame and return its id (1, 2, ...).

        `elapsed` (seconds since the recording started) is written as given. Or give the
        tick's `delta` (seconds) and the writer sums it as CARLA does: rounded to float32,
        widened to double, added to the previous elapsed (frame 1 is always at 0). The
        previous frame's duration becomes `delta` when given, else the elapsed difference.
        Raises RuntimeError if a frame is already open or the writer is closed, ValueError
        for a non-finite time.
        """
        self._check_usable()
        if self._open:
            raise RuntimeError(f"frame {self._frame_id} is still open; call end_frame first")
        first = self._frame_id == 0
        step = carla_delta(delta) if delta is not None else None
        if elapsed is None:
            new_elapsed = 0.0 if first else self._elapsed + (step if step is not None else 0.0)
        else:
            new_elapsed = float(elapsed)
        if not math.isfinite(new_elapsed) or (step is not None and not math.isfinite(step)):
            raise UsageError(f"frame times must be finite, got elapsed={elapsed} delta={delta}")
        if self._prev_duration_at is not None:
            duration = step if step is not None else new_elapsed - self._elapsed
            at = self._prev_duration_at - self._flushed
            _F64.pack_into(self._buf, at, duration)
            if len(self._buf) >= self._flush_bytes:
                self._flush()
        self._frame_id += 1
        self._elapsed = new_elapsed
        self._open = True
        return self._frame_id

    def end_frame(self) -> None:
        """Write the open frame's packets in the family's order and close the frame.

        Raises RuntimeError if no frame is open and FormatError if a packet has more
        than 65535 records.
        """
        packets = self._assemble()
        start = self.stats.size
        self._prev_duration_at = start + _DURATION_OFFSET
        for packet in packets:
            self._buf += packet.data
            self.stats.packets[packet.kind] += 1
        self.stats.size += sum(len(packet.data) for packet in packets)
        self._finish_frame()

    @contextmanager
    def frame(self, *, elapsed: float | None = None, delta: float | None = None) -> Iterator[int]:
        """`begin_frame` ... `end_frame` as a context manager yielding the frame id."""
        frame_id = self.begin_frame(elapsed=elapsed, delta=delta)
        yield frame_id
        self.end_frame()

    def simulate_crash(self, *, mid_packet: bool = False) -> int:
        """Cut the file inside the open frame the way a crashed CARLA server leaves it.

        CARLA's file buffer is flushed by every seek; the last ones in a frame are the
        size patches of back-patched packets (and, from frame 2 on, the duration patch
        made while writing FrameStart). The file therefore ends at the packet boundary
        just after the frame's last back-patched packet: no FrameEnd, and this frame's
        duration stays −1.0 (spec §9). With `mid_packet`, half of the next packet is
        kept too. Closes the writer (renaming a path target) and returns the file size.
        """
        packets = self._assemble()
        ends = np.cumsum([len(packet.data) for packet in packets]).tolist()
        last = max(
            i
            for i, packet in enumerate(packets)
            if packet.kind in BACK_PATCHED
            or (packet.kind is Kind.FRAME_START and self._frame_id > 1)
        )  # EventAdd is back-patched and written in every frame of every family
        complete = packets[: last + 1]
        cut = int(ends[last])
        if mid_packet:  # FrameEnd at least always follows the last back-patched packet
            cut += max(1, len(packets[last + 1].data) // 2)
        data = b"".join(packet.data for packet in packets)
        self._prev_duration_at = None
        self._buf += data[:cut]
        for packet in complete:
            self.stats.packets[packet.kind] += 1
        self.stats.size += cut
        self._finish_frame()
        self.close()
        return self.stats.size

    def close(self) -> None:
        """End an open frame, write everything out and, for a path, move the file in place.

        Raises OutputExistsError if the path appeared meanwhile and `overwrite` is False.
        """
        if self._closed:
            return
        if self._open:
            self.end_frame()
        self._flush()
        self._closed = True
        if self._output is None:
            self._stream.flush()
            return
        output, self._output = self._output, None
        output.__exit__(None, None, None)

    def abort(self) -> None:
        """Stop without finishing: a path target is left untouched (partial file removed)."""
        if self._closed:
            return
        self._closed = True
        self._buf.clear()
        if self._output is not None:
            output, self._output = self._output, None
            output.__exit__(_Aborted, _Aborted(), None)

    # --------------------------------------------------------------- internals

    def _check_usable(self) -> None:
        if self._closed:
            raise RuntimeError("the writer is closed")

    def _check_kind(self, kind: Kind) -> None:
        if kind in self._writable:
            return
        name = self.family.name
        if kind in ADDITIONAL_DATA and kind in {item.kind for item in self.family.order}:
            raise UnsupportedError(
                f"{kind.value} is additional data; open the writer with additional_data=True"
            )
        if kind in (Kind.FRAME_START, Kind.FRAME_END):
            raise UnsupportedError(f"{kind.value} is written by begin_frame/end_frame")
        raise UnsupportedError(f"CARLA family {name!r} does not write {kind.value} packets")

    def _add(self, kind: Kind, data: bytes, count: int) -> None:
        if not self._open:
            raise RuntimeError("records can only be added inside a frame (begin_frame)")
        self._check_kind(kind)
        chunks = self._chunks.get(kind)
        if chunks is None:
            self._chunks[kind] = [data]
            self._counts[kind] = count
        else:
            chunks.append(data)
            self._counts[kind] += count

    def _assemble(self) -> list[_Packet]:
        self._check_usable()
        if not self._open:
            raise RuntimeError("no frame is open; call begin_frame first")
        packets: list[_Packet] = []
        for kind, always, pid in self._order:
            if kind is Kind.FRAME_START:
                data = _FRAME_START.pack(pid, 24, self._frame_id, -1.0, self._elapsed)
            elif kind is Kind.FRAME_END:
                data = PACKET_HEADER.pack(pid, 0)
            elif kind is Kind.VISUAL_TIME or kind is Kind.PLATFORM_TIME:
                data = _SINGLE.pack(pid, 8, self._singles.get(kind, self._elapsed))
            else:
                count = self._counts.get(kind, 0)
                if not count and not always:
                    continue
                if count > _MAX_COUNT:
                    raise FormatError(
                        f"frame {self._frame_id} has {count} {kind.value} records; "
                        f"a packet holds at most {_MAX_COUNT}",
                        expected=_MAX_COUNT,
                        actual=count,
                    )
                body = b"".join(self._chunks.get(kind, ()))
                data = PACKET_HEADER.pack(pid, 2 + len(body)) + U16.pack(count) + body
            packets.append(_Packet(kind, data))
        return packets

    def _finish_frame(self) -> None:
        self.stats.frames += 1
        self.stats.last_elapsed = self._elapsed
        for actor_type in self._pending_types.values():
            self.stats.spawned[actor_type] += 1
        self._actor_types.update(self._pending_types)
        for actor_id in self._pending_deletes:
            if actor_id in self._actor_types:
                self.stats.destroyed[self._actor_types.pop(actor_id)] += 1
        self._pending_types = {}
        self._pending_deletes = []
        self._chunks = {}
        self._counts = {}
        self._singles = {}
        self._open = False

    def _flush(self) -> None:
        if self._buf:
            self._stream.write(self._buf)
            self._flushed += len(self._buf)
            self._buf = bytearray()
