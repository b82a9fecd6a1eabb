"""The self-description member `nanorec.msgpack`: what the archive is, and a columnar index.

NanoVer archives say nothing about themselves (no version, units, producer or source), and
their index is a msgpack list that takes seconds to parse at a million entries. nanorec adds
one extra member, which NanoVer's reader ignores, holding a msgpack map:

    format "nanorec", format_version 1 or 2, producer, created_utc (ISO 8601, UTC; nil unless
    SOURCE_DATE_EPOCH is set, so the same input always gives the same archive bytes),
    source_format, source (the producer's map: file name, size, sha256...),
    time_unit "us", timestamp_key "nanorec.t", checksum "crc32",
    message_count, messages_size, index_size, index_crc32, types_table,
    blocks (compact archives only: the block table, see `nanorec.archive.blocks`),
    columns {name: {"dtype": numpy dtype string, "data": raw little-endian bytes}}

Version 2 (the paged layout, `nanorec.archive.pages`) has `pages` (the page table) instead of
`blocks`, and an empty `columns` map: the columns and block table are in `nanorec.pages`, one
page at a time, so that an archive read by URL fetches a page, not the whole index. Version 1
readers refuse version 2 and parse `index.msgpack`, as for any description they cannot use.

`columns` always has `length`, `timestamp_us`, `crc` and `types` (a row number of
`types_table`, the distinct lists of top-level keys). `flags` is left out when every flag is
zero and `offset` when messages are contiguous from 0 (offsets are then the running sum of
lengths). A column may carry `"encoding"`: absent or "raw" (the bytes as they are), "zlib"
(deflated), or "delta-zlib" (deflated differences from the previous row, the first from 0,
in the column's dtype with wrap-around). Timestamps compress to almost nothing as deltas and
lengths, flags and types deflate well; CRCs are random and stay raw. This keeps the copy at a
few bytes per message, which matters when messages are small, and inflating it still takes
only milliseconds per million messages.

`index_size`/`index_crc32` describe the `index.msgpack` member this copy was made from: a
reader trusts the columns only when they still match it, so an archive whose index was
rewritten by another tool falls back to parsing `index.msgpack`. `columns` is the last key so
that a writer can stream the (raw) column bytes.
"""

from __future__ import annotations

import datetime as _dt
import os
import re
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import msgpack
import numpy as np
from numpy.typing import NDArray

from nanorec.archive.deflate import zlib_compressor
from nanorec.archive.index import Index, TypesTable
from nanorec.archive.wire import TIMESTAMP_KEY, bin_header, map_header
from nanorec.errors import (
    ArchiveError,
    IndexMismatchError,
    NanorecError,
    UnsupportedError,
    UsageError,
)
from nanorec.untyped import Payload

MEMBER_NAME: Final = "nanorec.msgpack"
FORMAT: Final = "nanorec"
FORMAT_VERSION: Final = 2
#: A description without a `pages` table (its columns whole) still says 1: older readers of
#: version 1 read it; version 2 (the paged layout) they refuse, and parse `index.msgpack`.
UNPAGED_VERSION: Final = 1
TIME_UNIT: Final = "us"
CHECKSUM: Final = "crc32"

#: Column name -> required numpy kind ("u" unsigned, "i" signed).
COLUMN_KINDS: Final = {
    "offset": "ui",
    "length": "ui",
    "timestamp_us": "ui",
    "crc": "u",
    "flags": "u",
    "types": "u",
}
REQUIRED_COLUMNS: Final = ("length", "timestamp_us", "crc", "types")
RAW: Final = "raw"
ZLIB: Final = "zlib"
DELTA_ZLIB: Final = "delta-zlib"
ENCODINGS: Final = (RAW, ZLIB, DELTA_ZLIB)


@dataclass(frozen=True)
class ColumnSource:
    """A column to write into the description: name, dtype, row count, its raw bytes in
    chunks, and how to encode them."""

    name: str
    dtype: np.dtype[Any]
    count: int
    chunks: Iterable[bytes]
    encoding: str = RAW


def _deflated(column: ColumnSource, fast: bool) -> bytes:
    """The column's bytes encoded as `column.encoding` says (zlib or delta-zlib; by ISA-L
    if `fast`, see `nanorec.archive.closing.fast_members`)."""
    deflater = zlib_compressor(fast=fast)
    parts = []
    previous = np.zeros(1, dtype=column.dtype)
    for chunk in column.chunks:
        if column.encoding == DELTA_ZLIB:
            values = np.frombuffer(chunk, dtype=column.dtype)
            if not len(values):
                continue
            with np.errstate(over="ignore"):
                chunk = np.diff(values, prepend=previous).astype(column.dtype).tobytes()
            previous = values[-1:]
        parts.append(deflater.compress(chunk))
    parts.append(deflater.flush())
    return b"".join(parts)


def iter_description(
    fields: Mapping[str, Any], columns: Sequence[ColumnSource], *, fast: bool = False
) -> Iterator[bytes]:
    """The bytes of a `nanorec.msgpack` member, streamed.

    `fields` are the plain keys (in the order given); the `columns` map comes last. Each
    column's chunks must add up to `count * dtype.itemsize` bytes. `fast`: encoded columns
    are deflated by ISA-L.
    """
    yield map_header(len(fields) + 1)
    for key, value in fields.items():
        yield msgpack.packb(key) + msgpack.packb(value)
    yield msgpack.packb("columns") + map_header(len(columns))
    for column in columns:
        head = msgpack.packb("dtype") + msgpack.packb(column.dtype.str)
        if column.encoding != RAW:
            # Encoded columns are small: built in memory, so their size is known up front.
            data = _deflated(column, fast)
            head += msgpack.packb("encoding") + msgpack.packb(column.encoding)
            yield msgpack.packb(column.name) + map_header(3) + head + msgpack.packb("data")
            yield bin_header(len(data)) + data
            continue
        nbytes = column.count * column.dtype.itemsize
        yield (
            msgpack.packb(column.name)
            + map_header(2)
            + head
            + msgpack.packb("data")
            + bin_header(nbytes)
        )
        written = 0
        for chunk in column.chunks:
            written += len(chunk)
            yield chunk
        if written != nbytes:  # a writer bug, not bad input
            raise AssertionError(f"column {column.name}: wrote {written} bytes, not {nbytes}")


def created_utc() -> str | None:
    """The `created_utc` to record: SOURCE_DATE_EPOCH's time when it is set (the
    reproducible-builds.org convention), else None; never the wall clock, which would make two
    conversions of the same input differ. Raises `UsageError` for a malformed value."""
    value = os.environ.get("SOURCE_DATE_EPOCH", "")
    if not value:
        return None
    bad = UsageError(
        f"SOURCE_DATE_EPOCH must be whole seconds since 1970 (as `date +%s` prints), not {value!r}"
    )
    if not re.fullmatch(r"[0-9]+", value):
        raise bad
    try:
        when = _dt.datetime.fromtimestamp(int(value), _dt.timezone.utc)
    except (ValueError, OverflowError, OSError):  # beyond the years datetime holds
        raise bad from None
    return when.isoformat(timespec="seconds")


def base_fields(
    *,
    producer: str,
    created_utc: str | None,
    source_format: str | None,
    source: Mapping[str, Any],
    message_count: int,
    messages_size: int,
    index_size: int,
    index_crc32: int,
    types_table: TypesTable,
) -> dict[str, Any]:
    """The description's plain fields, in their documented order."""
    return {
        "format": FORMAT,
        "format_version": UNPAGED_VERSION,
        "producer": producer,
        "created_utc": created_utc,
        "source_format": source_format,
        "source": dict(source),
        "time_unit": TIME_UNIT,
        "timestamp_key": TIMESTAMP_KEY,
        "checksum": CHECKSUM,
        "message_count": message_count,
        "messages_size": messages_size,
        "index_size": index_size,
        "index_crc32": index_crc32,
        "types_table": [list(types) for types in types_table],
    }


@dataclass(frozen=True)
class Description:
    """A parsed `nanorec.msgpack`: its plain fields and its decoded columns."""

    fields: dict[str, Any]
    columns: dict[str, NDArray[Any]]

    @property
    def message_count(self) -> int:
        return int(self.fields["message_count"])

    def to_index(self, messages_size: int) -> Index:
        """The columns as an `Index`, checked against the messages member's size (bytes).

        Raises `IndexMismatchError` when they disagree with each other or with that size.
        """
        count = self.message_count
        cols = self.columns
        for name, column in cols.items():
            if len(column) != count:
                raise IndexMismatchError(
                    f"description column {name!r} has {len(column)} rows for {count} messages",
                    expected=count,
                    actual=len(column),
                )
        length = cols["length"].astype(np.int64, copy=False)
        if "offset" in cols:
            offset = cols["offset"].astype(np.int64, copy=False)
        else:
            offset = np.cumsum(length) - length
            total = int(length.sum())
            if total != messages_size:
                raise IndexMismatchError(
                    "description lengths do not add up to the messages member size",
                    expected=messages_size,
                    actual=total,
                )
        flags = cols.get("flags")
        if flags is not None and not flags.any():
            flags = None  # all zero: kept as a broadcast view
        index = Index.stored(
            offset=offset,
            length=length,
            timestamp_us=cols["timestamp_us"],
            crc=cols["crc"],
            flags=flags,
            types_code=cols["types"],
            types_table=self.fields["types_table"],
        )
        index.check_bounds(messages_size)
        return index


def parse_columns(
    raw_columns: dict[Payload, Payload],
    count: int,
    kinds: Mapping[str, str],
    fail: Callable[[str], NanorecError],
) -> dict[str, NDArray[Any]]:
    """The columns of a msgpack `{name: {dtype, data, encoding?}}` map, each `count` values,
    decoded (see the module docstring); names not in `kinds` (name -> allowed numpy kinds) are
    skipped. Inflating is bounded by `count`. Raises `fail(what)` for a malformed column."""
    columns: dict[str, NDArray[Any]] = {}
    for name, spec in raw_columns.items():
        if name not in kinds:
            continue  # a later minor addition: ignore what we do not know
        if type(spec) is not dict or type(spec.get("data")) is not bytes:
            raise fail(f"column {name!r} is not a {{dtype, data}} map")
        try:
            dtype = np.dtype(spec.get("dtype"))
        except TypeError:
            raise fail(f"column {name!r} has dtype {spec.get('dtype')!r}") from None
        if dtype.kind not in kinds[name] or dtype.itemsize > 8 or dtype.byteorder == ">":
            raise fail(f"column {name!r} has unsupported dtype {dtype.str}")
        encoding = spec.get("encoding", RAW)
        if encoding not in ENCODINGS:
            raise fail(f"column {name!r} has unknown encoding {encoding!r}")
        data = spec["data"]
        expected = count * dtype.itemsize
        if encoding != RAW:
            inflater = zlib.decompressobj()
            try:
                # Bounded: a damaged stream cannot inflate past the column's size.
                data = inflater.decompress(data, expected + 1)
            except zlib.error as error:
                raise fail(f"column {name!r} does not inflate ({error})") from None
            if not inflater.eof:
                raise fail(f"column {name!r} inflates past {expected} bytes or ends early")
        if len(data) != expected:
            raise fail(f"column {name!r} holds {len(data)} bytes, expected {expected}")
        column = np.frombuffer(data, dtype=dtype)
        if encoding == DELTA_ZLIB:
            column = np.cumsum(column, dtype=dtype)
        columns[name] = column
    return columns


def encoded_column(
    name: str, values: NDArray[Any], encoding: str, *, fast: bool = False
) -> dict[str, Any]:
    """`values` as a column spec of a columns map (`parse_columns` reads it back)."""
    spec: dict[str, Any] = {"dtype": values.dtype.str}
    data = values.tobytes()
    if encoding != RAW:
        source = ColumnSource(name, values.dtype, len(values), (data,), encoding)
        spec["encoding"] = encoding
        data = _deflated(source, fast)
    spec["data"] = data
    return spec


def _fail(message: str) -> ArchiveError:
    return ArchiveError(f"{MEMBER_NAME}: {message}")


def parse_description(data: bytes) -> Description:
    """Parse a `nanorec.msgpack` member.

    Raises `ArchiveError` when it is not a well-formed description, `UnsupportedError` for a
    newer `format_version` than this nanorec knows.
    """
    try:
        decoded = msgpack.unpackb(data)
    except (ValueError, TypeError, msgpack.UnpackException) as error:
        raise _fail(f"not valid msgpack ({error})") from None
    if type(decoded) is not dict or decoded.get("format") != FORMAT:
        raise _fail("not a nanorec description map")
    version = decoded.get("format_version")
    if type(version) is not int:
        raise _fail(f"format_version is {version!r}, not an integer")
    if version > FORMAT_VERSION:
        raise UnsupportedError(
            f"{MEMBER_NAME} has format_version {version}; this nanorec reads up to "
            f"{FORMAT_VERSION}",
            expected=FORMAT_VERSION,
            actual=version,
        )
    for key in ("message_count", "messages_size", "index_size", "index_crc32"):
        if type(decoded.get(key)) is not int or decoded[key] < 0:
            raise _fail(f"{key} is {decoded.get(key)!r}, not a non-negative integer")
    table = decoded.get("types_table")
    if type(table) is not list or not all(
        type(types) is list and all(type(t) is str for t in types) for types in table
    ):
        raise _fail("types_table is not a list of lists of str")
    raw_columns = decoded.pop("columns", None)
    if type(raw_columns) is not dict:
        raise _fail("columns is missing or not a map")
    if decoded.get("pages") is not None:
        # the paged layout (`nanorec.archive.pages`): the columns are in its pages
        if raw_columns:
            raise _fail("a paged description also holds whole columns")
        return Description(fields=decoded, columns={})
    columns = parse_columns(raw_columns, decoded["message_count"], COLUMN_KINDS, _fail)
    missing = [name for name in REQUIRED_COLUMNS if name not in columns]
    if missing:
        raise _fail(f"columns {missing} are missing")
    if len(columns["types"]) and int(columns["types"].max()) >= len(table):
        raise _fail("a types code points past types_table")
    return Description(fields=decoded, columns=columns)


__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "MEMBER_NAME",
    "ColumnSource",
    "Description",
    "base_fields",
    "encoded_column",
    "iter_description",
    "parse_columns",
    "parse_description",
]
