"""Encode decoded batches (and single packet bodies) back to CARLA bytes, every byte
rebuilt from the decoded values (see `codec.py`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeAlias

import numpy as np
import numpy.typing as npt

from nanorec.buffers import Buffer
from nanorec.errors import FormatError, TruncatedError

from .ids import SHAPES, Engine, Family, Kind, Shape
from .ragged import (
    copy_runs,
    ragged_layout,
)
from .records import (
    U16,
    VarRecord,
    fixed_dtype,
    parse_var_body,
    serialize_var_body,
)
from .tables import (
    MAX_PACKET_SIZE,
    U16_DTYPE,
    WHEEL_SIZE,
    WHEELS_HEAD,
    Batch,
    EmptyTable,
    FixedTable,
    Table,
    VarTable,
    WheelsTable,
)
from .walk import PACKET_HEADER_DTYPE, IntArray, scatter


def encode_batch(batch: Batch, family: Family) -> bytearray:
    """The bytes of `batch`'s packets (and tail), rebuilt from its decoded values.

    Raises `FormatError` when a value does not fit the wire format (a count over 65535, a
    body over 4 GiB, records that disagree with the counts).
    """
    engine = family.engine
    count = len(batch.packet_ids)
    sizes = np.full(count, -1, dtype=np.int64)
    writers = []
    for table in batch.tables.values():
        body_sizes, writer = _plan(table, engine)
        sizes[table.index] = body_sizes
        writers.append((table.index, writer))
    raw = batch.raw
    if len(raw.index):
        sizes[raw.index] = [len(body) for body in raw.bodies]
    if count and sizes.min() < 0:
        missing = int(np.flatnonzero(sizes < 0)[0])
        raise FormatError(f"packet {missing} of the batch is in no table")
    if count and sizes.max() > MAX_PACKET_SIZE:
        raise FormatError("a packet body is over 4 GiB, its u32 size cannot hold it")
    spans = sizes + 5
    headers_at = np.cumsum(spans) - spans
    total = int(spans.sum())
    out = bytearray(total + len(batch.tail))
    headers = np.empty(count, dtype=PACKET_HEADER_DTYPE)
    headers["id"] = batch.packet_ids
    headers["size"] = sizes
    scatter(out, headers_at, headers)
    bodies_at = headers_at + 5
    for index, writer in writers:
        writer(out, bodies_at[index])
    for i, body in zip(raw.index.tolist(), raw.bodies, strict=True):
        start = int(bodies_at[i])
        out[start : start + len(body)] = body
    out[total:] = batch.tail
    return out


#: Writes a table's packet bodies into the output at the given offsets.
_Writer: TypeAlias = Callable[[bytearray, IntArray], None]


def _plan(table: Table, engine: Engine) -> tuple[IntArray, _Writer]:
    """Body sizes of `table`'s packets and a function writing their bodies at given offsets."""
    if isinstance(table, EmptyTable):
        return np.zeros(len(table.index), dtype=np.int64), lambda out, at: None
    if isinstance(table, FixedTable):
        return _plan_fixed(table, engine)
    if isinstance(table, WheelsTable):
        return _plan_wheels(table)
    return _plan_var(table, engine)


def _plan_fixed(table: FixedTable, engine: Engine) -> tuple[IntArray, _Writer]:
    dtype = fixed_dtype(table.kind, engine)
    records = table.records
    if records.dtype.itemsize != dtype.itemsize:
        raise FormatError(
            f"{table.kind.value} records are {records.dtype.itemsize} bytes, "
            f"the {engine.value} layout has {dtype.itemsize}"
        )
    if table.counts is None:
        if len(records) != len(table.index):
            raise FormatError(
                f"{table.kind.value}: {len(records)} records for {len(table.index)} packets"
            )

        def write_single(out: bytearray, at: IntArray) -> None:
            scatter(out, at, records)

        return np.full(len(table.index), dtype.itemsize, dtype=np.int64), write_single
    counts = table.counts.astype(np.int64)
    if int(counts.sum()) != len(records):
        raise FormatError(
            f"{table.kind.value}: counts add up to {int(counts.sum())}, "
            f"the table has {len(records)} records"
        )
    _check_counts(table.kind, counts)

    def write_fixed(out: bytearray, at: IntArray) -> None:
        scatter(out, at, counts.astype(U16_DTYPE))
        filled = counts > 0
        first = np.cumsum(counts) - counts
        source = np.ascontiguousarray(records).view(np.uint8)
        record = dtype.itemsize
        copy_runs(source, first[filled] * record, out, at[filled] + 2, counts[filled], record)

    return 2 + counts * dtype.itemsize, write_fixed


def _check_counts(kind: Kind, counts: IntArray) -> None:
    if len(counts) and (counts.max() > 0xFFFF or counts.min() < 0):
        raise FormatError(f"{kind.value}: a packet count does not fit a u16")


def _plan_wheels(table: WheelsTable) -> tuple[IntArray, _Writer]:
    counts = table.counts.astype(np.int64)
    _check_counts(table.kind, counts)
    n = table.wheel_counts.astype(np.int64)
    if int(counts.sum()) != len(n) or int(n.sum()) != len(table.wheels):
        raise FormatError("anim_vehicle_wheels: counts disagree with the records")

    def write_wheels(out: bytearray, at: IntArray) -> None:
        heads = np.empty(len(n), dtype=WHEELS_HEAD)
        heads["id"] = table.ids
        heads["wheel_count"] = n
        scatter(out, at, counts.astype(U16_DTYPE))
        if _write_wheels_uniform(out, at, counts, heads, table.wheels):
            return
        records_at, _ = ragged_layout(at + 2, counts, 8 + WHEEL_SIZE * n)
        scatter(out, records_at, heads)
        wheel_first = np.cumsum(n) - n
        source = np.ascontiguousarray(table.wheels).view(np.uint8)
        copy_runs(source, wheel_first * WHEEL_SIZE, out, records_at + 8, n, WHEEL_SIZE)

    _, packet_bytes = ragged_layout(
        np.zeros(len(counts), dtype=np.int64), counts, 8 + WHEEL_SIZE * n
    )
    return 2 + packet_bytes, write_wheels


def _write_wheels_uniform(
    out: Buffer,
    at: IntArray,
    counts: IntArray,
    heads: npt.NDArray[Any],
    wheels: npt.NDArray[Any],
) -> bool:
    """Write the records when all packets have one layout (see `_wheels_uniform`)."""
    m = len(counts)
    if m < 2 or counts.min() != counts.max() or not counts[0]:
        return False
    layout = heads["wheel_count"].astype(np.int64).reshape(m, -1)
    first = layout[0]
    if not np.all(layout == first[None, :]):
        return False
    sizes = 8 + WHEEL_SIZE * first
    blocks = np.empty((m, int(sizes.sum())), dtype=np.uint8)
    head_bytes = np.ascontiguousarray(heads).view(np.uint8).reshape(m, -1, 8)
    wheel_bytes = np.ascontiguousarray(wheels).view(np.uint8).reshape(m, -1)
    edges = np.flatnonzero(np.diff(first)) + 1
    start = record_index = wheel_column = 0
    for lo, hi in zip([0, *edges.tolist()], [*edges.tolist(), len(first)], strict=True):
        n = int(first[lo])
        record = 8 + WHEEL_SIZE * n
        run = blocks[:, start : start + (hi - lo) * record].reshape(m, hi - lo, record)
        run[:, :, :8] = head_bytes[:, record_index : record_index + hi - lo]
        if n:
            width = (hi - lo) * WHEEL_SIZE * n
            run[:, :, 8:] = wheel_bytes[:, wheel_column : wheel_column + width].reshape(
                m, hi - lo, -1
            )
            wheel_column += width
        start += (hi - lo) * record
        record_index = hi
    scatter(out, at + 2, blocks.reshape(-1).view(f"V{blocks.shape[1]}"))
    return True


def _plan_var(table: VarTable, engine: Engine) -> tuple[IntArray, _Writer]:
    counts = table.counts.astype(np.int64)
    _check_counts(table.kind, counts)
    if int(counts.sum()) != len(table.records):
        raise FormatError(f"{table.kind.value}: counts disagree with the records")
    sizes = np.full(len(counts), 2, dtype=np.int64)
    filled = np.flatnonzero(counts).tolist()
    bodies: list[bytes] = []
    start = 0
    ends = np.cumsum(counts).tolist()
    for i in filled:
        end = ends[i]
        start = end - int(counts[i])
        body = serialize_var_body(table.records[start:end], engine)
        bodies.append(body)
        sizes[i] = len(body)

    def write_var(out: bytearray, at: IntArray) -> None:
        scatter(out, at, counts.astype(U16_DTYPE))
        for i, body in zip(filled, bodies, strict=True):
            begin = int(at[i])
            out[begin : begin + len(body)] = body

    return sizes, write_var


# --------------------------------------------------------------------------- per packet


def decode_body(
    kind: Kind, body: bytes | memoryview, family: Family, base_offset: int = 0
) -> npt.NDArray[Any] | list[VarRecord]:
    """Decode one packet body of `kind` (without its 5-byte header).

    FIXED kinds give a structured array (a view of `body`), SINGLE kinds a one-record
    array, FrameEnd an empty list, VAR kinds a list of typed records. `base_offset` is the
    body's absolute file offset, used in errors. Raises `FormatError`/`TruncatedError`
    when the body does not fit the layout.
    """
    shape = SHAPES[kind]
    size = len(body)
    if shape is Shape.EMPTY:
        if size:
            raise FormatError(
                f"{kind.value} has {size} body bytes, expected none", offset=base_offset
            )
        return []
    if shape is Shape.VAR:
        return parse_var_body(kind, body, family.engine, base=base_offset)
    dtype = fixed_dtype(kind, family.engine)
    if shape is Shape.SINGLE:
        if size != dtype.itemsize:
            raise FormatError(
                f"{kind.value} body is {size} bytes, expected {dtype.itemsize}",
                offset=base_offset,
                expected=dtype.itemsize,
                actual=size,
            )
        return np.frombuffer(body, dtype=dtype)
    if size < 2:
        raise TruncatedError(
            f"{kind.value} body of {size} bytes has no u16 count", offset=base_offset
        )
    (count,) = U16.unpack_from(body, 0)
    if size != 2 + count * dtype.itemsize:
        raise FormatError(
            f"{kind.value} count {count} needs {2 + count * dtype.itemsize} body bytes, has {size}",
            offset=base_offset,
            expected=2 + count * dtype.itemsize,
            actual=size,
        )
    return np.frombuffer(body, dtype=dtype, count=count, offset=2)


def encode_body(
    kind: Kind, decoded: npt.NDArray[Any] | Sequence[VarRecord], family: Family
) -> bytes:
    """The body bytes of one packet of `kind` from its decoded value (see `decode_body`)."""
    shape = SHAPES[kind]
    if shape is Shape.EMPTY:
        if len(decoded):
            raise FormatError(f"{kind.value} has no records")
        return b""
    if shape is Shape.VAR:
        if isinstance(decoded, np.ndarray):
            raise FormatError(f"{kind.value} needs a list of records, not an array")
        return serialize_var_body(decoded, family.engine)
    dtype = fixed_dtype(kind, family.engine)
    if not isinstance(decoded, np.ndarray) or decoded.dtype.itemsize != dtype.itemsize:
        raise FormatError(f"{kind.value} needs an array of {dtype.itemsize}-byte records")
    data = np.ascontiguousarray(decoded).tobytes()
    if shape is Shape.SINGLE:
        if len(decoded) != 1:
            raise FormatError(f"{kind.value} holds exactly one record, got {len(decoded)}")
        return data
    if len(decoded) > 0xFFFF:
        raise FormatError(f"{kind.value}: {len(decoded)} records do not fit a u16 count")
    return U16.pack(len(decoded)) + data
