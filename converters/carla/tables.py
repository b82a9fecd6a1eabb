"""The decoded form of a run of CARLA frames (a *batch*): one columnar table per packet id.

Produced by `decode.decode_packets`, written back by `encode.encode_batch`; `codec.py`
describes the whole codec.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from .ids import Family, Kind
from .records import (
    WHEEL_ANIM_DTYPE,
    PhysicsControl,
    VarRecord,
    VehicleWheels,
)
from .walk import IntArray, Packets, Truncation

DEFAULT_BATCH_BYTES = 8 << 20
U16_DTYPE = np.dtype("<u2")
WHEELS_HEAD = np.dtype([("id", "<u4"), ("wheel_count", "<u4")])
WHEEL_SIZE = WHEEL_ANIM_DTYPE.itemsize  # 9 bytes: u8 location, f32 steering, f32 rotation
MAX_PACKET_SIZE = 0xFFFFFFFF


@dataclass(frozen=True, eq=False)
class FixedTable:
    """Every packet of one FIXED or SINGLE packet id in a batch.

    `index` holds the positions of these packets in the batch's packet sequence
    (ascending). `counts` is the u16 record count of each packet (None for SINGLE kinds:
    one record each). `records` holds all their records in file order.
    """

    kind: Kind
    packet_id: int
    index: IntArray
    counts: npt.NDArray[np.uint16] | None
    records: npt.NDArray[Any]

    def starts(self) -> IntArray:
        """Index in `records` of each packet's first record."""
        if self.counts is None:
            return np.arange(len(self.index), dtype=np.int64)
        return np.cumsum(self.counts, dtype=np.int64) - self.counts

    def packet(self, i: int) -> npt.NDArray[Any]:
        """The records of this table's `i`-th packet."""
        if self.counts is None:
            return self.records[i : i + 1]
        start = int(self.starts()[i])
        return self.records[start : start + int(self.counts[i])]


@dataclass(frozen=True, eq=False)
class EmptyTable:
    """Every packet of a body-less packet id (FrameEnd) in a batch."""

    kind: Kind
    packet_id: int
    index: IntArray


@dataclass(frozen=True, eq=False)
class VarTable:
    """Every packet of one VAR packet id (EventAdd, PhysicsControl, WalkerBones) in a batch.

    `records` is flat, in file order; `counts[i]` records belong to the `i`-th packet.
    """

    kind: Kind
    packet_id: int
    index: IntArray
    counts: npt.NDArray[np.uint16]
    records: list[VarRecord]

    def packet(self, i: int) -> list[VarRecord]:
        """The records of this table's `i`-th packet."""
        start = int(np.sum(self.counts[:i], dtype=np.int64))
        return self.records[start : start + int(self.counts[i])]

    @property
    def physics_wheel_sizes(self) -> frozenset[int]:
        """Wheel record sizes (bytes) of the PhysicsControl records that have wheels."""
        return frozenset(
            record.wheel_size
            for record in self.records
            if isinstance(record, PhysicsControl) and len(record.array("wheels"))
        )


@dataclass(frozen=True, eq=False)
class WheelsTable:
    """Every AnimVehicleWheels packet of a batch, columnar.

    Per packet: `counts` (vehicle records). Per vehicle record: `ids`, `wheel_counts`.
    Per wheel: `wheels` (`WHEEL_ANIM_DTYPE`: location code, steering and tire rotation
    angles in degrees), all in file order.
    """

    kind: Kind
    packet_id: int
    index: IntArray
    counts: npt.NDArray[np.uint16]
    ids: npt.NDArray[np.uint32]
    wheel_counts: npt.NDArray[np.uint32]
    wheels: npt.NDArray[Any]

    def records(self) -> list[VehicleWheels]:
        """All records as `VehicleWheels` values (slow path, for converters)."""
        ends = np.cumsum(self.wheel_counts, dtype=np.int64)
        return [
            VehicleWheels(int(vid), self.wheels[int(end - n) : int(end)])
            for vid, n, end in zip(self.ids, self.wheel_counts, ends, strict=True)
        ]


@dataclass(frozen=True, eq=False)
class RawTable:
    """Packets carried verbatim: `bodies[i]` of the packet at batch position `index[i]`.

    `reasons[i]` is None when the family does not know the id (forks, user packets), or
    says why a known packet's body did not fit its layout.
    """

    index: IntArray
    bodies: list[bytes]
    reasons: list[str | None]


Table = FixedTable | EmptyTable | VarTable | WheelsTable


@dataclass(frozen=True, eq=False)
class Batch:
    """A decoded run of frames.

    `packet_ids` is the packet sequence (what the encoder writes back, in order); `tables`
    maps each decoded packet id to its table; `raw` holds the packets carried verbatim.
    `packets` are the walk columns of the input (absolute offsets and sizes, for indexes).
    `tail` is the truncated remainder of the file (only in the last batch of a recording
    that ends mid-packet), written back verbatim after the packets.
    """

    packet_ids: npt.NDArray[np.uint8]
    tables: dict[int, Table]
    raw: RawTable
    packets: Packets
    tail: bytes = b""
    physics_wheel_sizes: frozenset[int] = field(default_factory=frozenset)

    @property
    def truncation(self) -> Truncation | None:
        return self.packets.truncation

    @property
    def offset(self) -> int:
        """Absolute input offset of the batch's first packet."""
        return self.packets.start

    @property
    def input_size(self) -> int:
        """Input bytes covered by the batch, tail included."""
        return self.packets.end - self.packets.start + len(self.tail)

    def table(self, kind: Kind, family: Family) -> Table | None:
        """The table of `kind` (by `family`'s id), or None when the batch has no such packet."""
        pid = family.kinds.get(kind)
        return None if pid is None else self.tables.get(pid)
