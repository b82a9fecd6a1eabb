"""Encoding `index.msgpack`: the index entries NanoVer's reader expects, from numpy columns.

This module exists so that the writer's one hot step over the index, turning a chunk of rows into
NanoVer's `index.msgpack` bytes, stays apart from the in-memory `Index` (`nanorec.archive.index`)
and from the parser that reads those bytes back (`nanorec.archive.index_parse`). `index.msgpack` is
one msgpack array of maps with exactly the keys `offset`, `length`, `metadata`; `encode_entries`
produces those bytes for a whole chunk of rows with numpy (no per-message Python work), using one
fixed-width integer encoding per column and chunk; any msgpack decoder reads non-minimal integer
encodings."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import msgpack
import numpy as np
from numpy.typing import NDArray

from nanorec.archive.index import META_CRC, META_FLAGS, META_TIMESTAMP, META_TYPES
from nanorec.errors import FormatError

#: msgpack integer encodings by class: (prefix byte or None for a positive fixint, payload
#: width, signed). Each value gets the shortest class that holds it (negative values: int64).
_INT_CLASSES: Final = (
    (None, 1, False),  # positive fixint 0..127, the value is the byte
    (0xCC, 1, False),
    (0xCD, 2, False),
    (0xCE, 4, False),
    (0xCF, 8, False),
    (0xD3, 8, True),
)
_ABSENT: Final = len(_INT_CLASSES)  # flags == 0: the key is left out


def _int_classes(values: NDArray[Any]) -> NDArray[np.int64]:
    """The shortest encoding class of each value (see `_INT_CLASSES`)."""
    if values.dtype.kind == "u":
        unsigned = values
        negative = np.zeros(len(values), dtype=np.bool_)
    else:
        negative = values < 0
        unsigned = np.where(negative, 0, values).astype(np.uint64)
    classes = np.searchsorted(
        np.array([0x7F, 0xFF, 0xFFFF, 0xFFFF_FFFF], dtype=np.uint64), unsigned, side="left"
    ).astype(np.int64)
    classes[negative] = 5
    return classes


def _encoded_ints(values: NDArray[Any], cls: int) -> NDArray[np.uint8]:
    """An (n, size) matrix: the msgpack encoding of each value, all of class `cls`."""
    prefix, width, signed = _INT_CLASSES[cls]
    kind = "i" if signed else "u"
    payload = values.astype(f">{kind}{width}").view(np.uint8).reshape(len(values), width)
    if prefix is None:
        return payload
    out = np.empty((len(values), 1 + width), dtype=np.uint8)
    out[:, 0] = prefix
    out[:, 1:] = payload
    return out


def _class_size(cls: int) -> int:
    prefix, width, _ = _INT_CLASSES[cls]
    return width + (prefix is not None)


def _constant(data: bytes, rows: int) -> NDArray[np.uint8]:
    return np.broadcast_to(np.frombuffer(data, dtype=np.uint8), (rows, len(data)))


def _scatter_var(
    out: NDArray[np.uint8],
    pos: NDArray[np.int64],
    source: NDArray[np.uint8],
    src_start: NDArray[np.int64],
    lengths: NDArray[np.int64],
) -> None:
    """Copy `source[src_start[i]:src_start[i] + lengths[i]]` to `out[pos[i]:]`, every row."""
    total = int(lengths.sum())
    if not total:
        return
    run_start = np.cumsum(lengths) - lengths
    k = np.arange(total, dtype=np.int64) - np.repeat(run_start, lengths)
    out[np.repeat(pos, lengths) + k] = source[np.repeat(src_start, lengths) + k]


_K_ENTRY: Final = b"\x83" + msgpack.packb("offset")
_K_LENGTH: Final = msgpack.packb("length")
_K_METADATA: Final = msgpack.packb("metadata")
_K_TYPES: Final = msgpack.packb(META_TYPES)
_K_TIMESTAMP: Final = msgpack.packb(META_TIMESTAMP)
_K_CRC: Final = msgpack.packb(META_CRC)
_K_FLAGS: Final = msgpack.packb(META_FLAGS)


def encode_entries(
    *,
    offset: NDArray[Any],
    length: NDArray[Any],
    timestamp_us: NDArray[Any],
    crc: NDArray[Any],
    flags: NDArray[Any],
    types_code: NDArray[Any],
    types_packed: Sequence[bytes],
    extra_count: NDArray[Any] | None = None,
    extra_length: NDArray[Any] | None = None,
    extra_data: bytes = b"",
) -> bytes:
    """The packed index entries (without the enclosing array header) for a chunk of rows.

    Each entry is `{"offset", "length", "metadata": {"types", "timestamp", "crc", ["f"],
    *extra}}`, integers in their shortest msgpack encoding (negative ones as int64, CRCs
    always as uint32);
    `f` (flags) appears only when non-zero. `types_packed[c]` is the packed type list of code
    `c`. Caller metadata comes as `extra_data`, the concatenation of each row's packed
    key/value pairs (`extra_length[i]` bytes holding `extra_count[i]` pairs).

    Rows sharing a layout (types, integer classes, metadata count) are built together as one
    (rows, width) matrix by column assignment; a chunk where every row has the same layout is
    that matrix's bytes, with no scatter.
    """
    n = len(offset)
    if not n:
        return b""
    if extra_count is None or extra_length is None:
        extra_count = np.zeros(n, dtype=np.int64)
        extra_length = np.zeros(n, dtype=np.int64)
    extra_count = extra_count.astype(np.int64)
    extra_length = extra_length.astype(np.int64)
    offset = offset.astype(np.int64)
    length = length.astype(np.int64)
    timestamp_us = timestamp_us.astype(np.int64)
    crc = crc.astype(np.uint32)
    flags = flags.astype(np.uint64)
    codes = types_code.astype(np.int64)
    has_flags = flags != 0

    meta_count = 3 + has_flags.astype(np.int64) + extra_count
    if meta_count.max() > 0xFFFF:
        raise FormatError("index metadata holds more than 65535 keys")
    o_cls = _int_classes(offset)
    l_cls = _int_classes(length)
    t_cls = _int_classes(timestamp_us)
    # CRCs are uniformly random, so a fixed uint32 costs nothing on average and keeps chunks
    # uniform (one small CRC would otherwise split a chunk into layouts).
    c_cls = np.full(n, 3, dtype=np.int64)
    f_cls = np.where(has_flags, _int_classes(flags), _ABSENT)
    # One int64 per row naming its layout: 3 bits per class, 16 for the metadata count.
    layout = codes
    for classes in (o_cls, l_cls, t_cls, c_cls, f_cls):
        layout = layout * 8 + classes
    layout = layout * 0x10000 + meta_count
    if int(layout.min()) == int(layout.max()):
        keys, inverse = layout[:1], np.zeros(n, dtype=np.intp)
    else:
        keys, inverse = np.unique(layout, return_inverse=True)
    uniform = len(keys) == 1 and not len(extra_data)

    sizes = np.array([_class_size(c) for c in range(len(_INT_CLASSES))] + [0], dtype=np.int64)
    table_len = np.array([len(t) for t in types_packed], dtype=np.int64)
    flag_len = np.where(has_flags, len(_K_FLAGS) + sizes[f_cls], 0)
    base_len = (
        len(_K_ENTRY)
        + sizes[o_cls]
        + len(_K_LENGTH)
        + sizes[l_cls]
        + len(_K_METADATA)
        + np.where(meta_count > 15, 3, 1)
        + len(_K_TYPES)
        + table_len[codes]
        + len(_K_TIMESTAMP)
        + sizes[t_cls]
        + len(_K_CRC)
        + sizes[c_cls]
        + flag_len
    )
    # every row's fixed part left-aligned in one matrix, then compacted in one step
    full = np.empty((n, int(base_len.max())), dtype=np.uint8)
    for group, key in enumerate(keys.tolist()):
        rows = np.arange(n) if uniform else np.flatnonzero(inverse == group)
        k = len(rows)
        count = key % 0x10000
        key //= 0x10000
        fc, key = key % 8, key // 8
        cc, key = key % 8, key // 8
        tc, key = key % 8, key // 8
        lc, key = key % 8, key // 8
        oc, code = key % 8, key // 8
        header = bytes((0x80 | count,)) if count <= 15 else b"\xde" + count.to_bytes(2, "big")
        pieces = [
            _constant(_K_ENTRY, k),
            _encoded_ints(offset[rows], oc),
            _constant(_K_LENGTH, k),
            _encoded_ints(length[rows], lc),
            _constant(_K_METADATA + header + _K_TYPES + types_packed[code] + _K_TIMESTAMP, k),
            _encoded_ints(timestamp_us[rows], tc),
            _constant(_K_CRC, k),
            _encoded_ints(crc[rows], cc),
        ]
        if fc != _ABSENT:
            pieces.append(_constant(_K_FLAGS, k))
            pieces.append(_encoded_ints(flags[rows], fc))
        matrix = np.hstack(pieces)
        if uniform:
            return matrix.tobytes()
        full[rows, : matrix.shape[1]] = matrix
    fixed = full[np.arange(full.shape[1]) < base_len[:, None]]
    if not len(extra_data):
        return fixed.tobytes()
    row_len = base_len + extra_length
    start = np.cumsum(row_len) - row_len
    out = np.empty(int(row_len.sum()), dtype=np.uint8)
    _scatter_var(out, start, fixed, np.cumsum(base_len) - base_len, base_len)
    source = np.frombuffer(extra_data, dtype=np.uint8)
    _scatter_var(
        out, start + base_len, source, np.cumsum(extra_length) - extra_length, extra_length
    )
    return out.tobytes()


__all__ = ["encode_entries"]
