"""Index columns, the vectorised index.msgpack encoder, and the description's column codecs."""

from __future__ import annotations

import zlib
from typing import Any

import msgpack
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nanorec.archive.describe import (
    DELTA_ZLIB,
    RAW,
    ZLIB,
    ColumnSource,
    base_fields,
    iter_description,
    parse_description,
)
from nanorec.archive.index import Index, TypesRegistry
from nanorec.archive.index_encode import encode_entries
from nanorec.archive.index_parse import parse_entries
from nanorec.archive.wire import array_header
from nanorec.errors import ArchiveError

TYPES = [("frame",), ("state",), ("frame", "state"), tuple(f"k{i}" for i in range(20))]


def _expected(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for row in rows:
        metadata = {"types": list(row["types"]), "timestamp": row["t"], "crc": row["crc"]}
        if row["flags"]:
            metadata["f"] = row["flags"]
        metadata.update(row["extra"])
        out.append({"offset": row["offset"], "length": row["length"], "metadata": metadata})
    return out


rows_strategy = st.lists(
    st.fixed_dictionaries(
        {
            "length": st.one_of(st.integers(0, 300), st.integers(0, 2**40)),
            "t": st.one_of(st.integers(0, 200), st.integers(-(2**63), 2**63 - 1)),
            "crc": st.integers(0, 2**32 - 1),
            "flags": st.one_of(st.just(0), st.integers(0, 2**64 - 1)),
            "types": st.sampled_from(TYPES),
            "extra": st.one_of(
                st.just({}),
                st.dictionaries(st.text(max_size=3), st.integers(0, 9), max_size=17),
            ),
        }
    ),
    max_size=60,
)


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(rows=rows_strategy)
def test_encode_entries_decodes_to_the_entries(rows: list[dict[str, Any]]) -> None:
    registry = TypesRegistry()
    offset = 0
    for row in rows:
        row["offset"] = offset
        offset += row["length"]
    extras = [
        b"".join(msgpack.packb(k) + msgpack.packb(v) for k, v in row["extra"].items())
        for row in rows
    ]
    data = array_header(len(rows)) + encode_entries(
        offset=np.array([r["offset"] for r in rows], dtype=np.int64),
        length=np.array([r["length"] for r in rows], dtype=np.int64),
        timestamp_us=np.array([r["t"] for r in rows], dtype=np.int64),
        crc=np.array([r["crc"] for r in rows], dtype=np.uint32),
        flags=np.array([r["flags"] for r in rows], dtype=np.uint64),
        types_code=np.array([registry.code(r["types"]) for r in rows], dtype=np.uint32),
        types_packed=registry.packed(),
        extra_count=np.array([len(r["extra"]) for r in rows], dtype=np.int64),
        extra_length=np.array([len(e) for e in extras], dtype=np.int64),
        extra_data=b"".join(extras),
    )
    decoded = msgpack.unpackb(data)
    assert decoded == _expected(rows)
    assert [list(e["metadata"]) for e in decoded] == [list(e["metadata"]) for e in _expected(rows)]


def test_encode_entries_bytes_match_msgpack() -> None:
    """Shortest encodings: for CRCs >= 2**31 our bytes are exactly msgpack.packb's."""
    rows = [
        {"offset": o, "length": n, "t": t, "crc": 2**31 + o, "flags": f, "types": ty, "extra": {}}
        for o, n, t, f, ty in [
            (0, 21, 3872, 0, ("frame",)),
            (21, 27, 19053, 5, ("state",)),
            (48, 5155, 34575, 2**40, ("frame",)),
            (5203, 70000, 2**33, 0, ("frame", "state")),
        ]
    ]
    registry = TypesRegistry()
    ours = encode_entries(
        offset=np.array([r["offset"] for r in rows]),
        length=np.array([r["length"] for r in rows]),
        timestamp_us=np.array([r["t"] for r in rows]),
        crc=np.array([r["crc"] for r in rows], dtype=np.uint32),
        flags=np.array([r["flags"] for r in rows], dtype=np.uint64),
        types_code=np.array([registry.code(r["types"]) for r in rows]),
        types_packed=registry.packed(),
    )
    assert array_header(len(rows)) + ours == msgpack.packb(_expected(rows))


def _index(stamps: list[int], types: list[tuple[str, ...]]) -> Index:
    registry = TypesRegistry()
    n = len(stamps)
    return Index(
        offset=np.arange(n) * 10,
        length=np.full(n, 10),
        timestamp_us=np.array(stamps),
        crc=np.zeros(n, np.uint32),
        crc_known=np.zeros(n, np.bool_),
        flags=np.arange(n, dtype=np.uint64),
        types_code=np.array([registry.code(t) for t in types], dtype=np.uint8),
        types_table=tuple(registry.table),
    )


def test_index_queries() -> None:
    index = _index(
        [0, 10, 10, 20, 30], [("frame",), ("state",), ("frame", "state"), ("frame",), ()]
    )
    assert index.is_sorted and index.is_contiguous
    assert index.position_at_time(-1) is None
    assert index.position_at_time(10) == 2
    assert index.position_at_time(19) == 2
    assert index.position_at_time(10**9) == 4
    assert index.select(10, 30).tolist() == [1, 2, 3]
    assert index.select(types="state").tolist() == [1, 2]
    assert index.select(5, None, types=["frame", "state"]).tolist() == [1, 2, 3]
    assert index.has_type("frame").tolist() == [True, False, True, True, False]
    assert index[1].types == ("state",)
    assert index[-1].timestamp_us == 30
    sliced = index[1:3]
    assert len(sliced) == 2 and sliced.offset.tolist() == [10, 20]
    with pytest.raises(IndexError):
        index[5]
    with pytest.raises(ValueError):
        index.timestamp_us[0] = 1  # read-only columns


@pytest.mark.parametrize("encoding", [RAW, ZLIB, DELTA_ZLIB])
@pytest.mark.parametrize("dtype", ["<i8", "<u4", "|u1"])
def test_description_column_codecs(encoding: str, dtype: str) -> None:
    rng = np.random.default_rng(3)
    info = np.iinfo(dtype)
    values = rng.integers(info.min, info.max, 1000, dtype=dtype, endpoint=True)  # wraps in deltas
    chunks = [values[:300].tobytes(), values[300:].tobytes()]
    column = ColumnSource("timestamp_us", np.dtype(dtype), 1000, chunks, encoding)
    others = [
        ColumnSource(name, np.dtype("<u4"), 1000, [bytes(4000)], RAW)
        for name in ("length", "crc", "types")
    ]
    fields = base_fields(
        producer="t",
        created_utc="",
        source_format=None,
        source={},
        message_count=1000,
        messages_size=0,
        index_size=0,
        index_crc32=0,
        types_table=(("a",),),
    )
    data = b"".join(iter_description(fields, [column, *others]))
    parsed = parse_description(data)
    assert parsed.columns["timestamp_us"].tolist() == values.tolist()


def test_description_inflation_is_bounded() -> None:
    bomb = zlib.compress(bytes(10_000_000))
    fields = base_fields(
        producer="t",
        created_utc="",
        source_format=None,
        source={},
        message_count=2,
        messages_size=0,
        index_size=0,
        index_crc32=0,
        types_table=(),
    )
    described = msgpack.unpackb(b"".join(iter_description(fields, [])))
    described["columns"] = {
        name: {"dtype": "<u4", "data": bomb, "encoding": "zlib"}
        for name in ("length", "timestamp_us", "crc", "types")
    }
    with pytest.raises(ArchiveError, match="inflates past"):
        parse_description(msgpack.packb(described))


@pytest.mark.parametrize(
    "entries",
    [
        [{"offset": 0}],  # no length
        [{"offset": -1, "length": 1}],
        [{"offset": 0, "length": 1, "metadata": [1]}],
        [{"offset": 0, "length": 1, "meta": {}}],
        [[0, 1]],
    ],
)
def test_parse_entries_rejects_what_nanover_rejects(entries: list[Any]) -> None:
    with pytest.raises(ArchiveError, match="entry 0"):
        parse_entries(msgpack.packb(entries), types_of=lambda offset, length: ())


def test_parse_entries_garbage_is_bounded() -> None:
    for data in (b"\xdd\xff\xff\xff\xff", b"\xc1", b"", msgpack.packb([{"offset": 0}]) + b"x"):
        with pytest.raises(ArchiveError):
            parse_entries(data, types_of=lambda offset, length: ())
