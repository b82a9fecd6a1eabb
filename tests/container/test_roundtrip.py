"""Property tests: random message streams read back identically through every access path."""

from __future__ import annotations

import bisect
import tempfile
import zlib
from pathlib import Path
from typing import Any
from unittest import mock

import msgpack
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import nanorec.archive.writer as writer_module
from nanorec import ArchiveReader, ArchiveWriter, verify

from .helpers import messages

streams = st.lists(
    st.tuples(
        messages(),
        st.integers(min_value=0, max_value=2**40),  # timestamp increment
        st.one_of(st.just(0), st.integers(min_value=0, max_value=2**64 - 1)),  # flags
        st.booleans(),  # write_packed instead of write
        st.one_of(
            st.none(),
            st.dictionaries(st.sampled_from(["note", "n"]), st.integers(-(2**63), 2**63 - 1)),
        ),
    ),
    max_size=40,
)


def _check(
    reader: ArchiveReader,
    expected: list[dict[str, Any]],
    stamps: list[int],
    flags: list[int],
    data: st.DataObject,
) -> None:
    n = len(expected)
    assert len(reader) == n
    first, last = (stamps[0] - 5, stamps[-1] + 5) if n else (-5, 5)
    # index
    assert reader.index.timestamp_us.tolist() == stamps
    assert reader.index.flags.tolist() == flags
    for i in range(n):
        assert reader[i] == expected[i]
        assert reader.index.types(i) == tuple(expected[i])
        raw = reader.raw(i, verify=True)
        assert zlib.crc32(raw) == reader.index.crc[i]
        assert msgpack.unpackb(raw) == {**expected[i], "nanorec.t": stamps[i]}
    if n:
        k = data.draw(st.integers(1, n))
        assert reader[-k] == expected[-k]
    # slicing
    a = data.draw(st.integers(-n - 2, n + 2))
    b = data.draw(st.integers(-n - 2, n + 2))
    assert reader[a:b] == expected[a:b]
    assert reader[::-1] == expected[::-1]
    # iteration
    assert list(reader) == expected
    assert list(reader.iter_messages()) == list(zip(stamps, expected, strict=True))
    # time range
    lo = data.draw(st.one_of(st.none(), st.integers(first, last)))
    hi = data.draw(st.one_of(st.none(), st.integers(first, last)))
    want = [
        (t, m)
        for t, m in zip(stamps, expected, strict=True)
        if (lo is None or t >= lo) and (hi is None or t < hi)
    ]
    assert list(reader.iter_messages(lo, hi)) == want
    # types
    kind = data.draw(st.sampled_from(["frame", "state", "command", ""]))
    assert list(reader.iter_messages(types=kind)) == [
        (t, m) for t, m in zip(stamps, expected, strict=True) if kind in m
    ]
    assert reader.index.has_type(kind).tolist() == [kind in m for m in expected]
    # time -> message
    t = data.draw(st.integers(first, last))
    position = bisect.bisect_right(stamps, t) - 1
    assert reader.index_at_time(t) == (position if position >= 0 else None)


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@pytest.mark.slow
@given(stream=streams, chunk_rows=st.sampled_from([3, 65536]), data=st.data())
def test_random_streams_round_trip(
    stream: list[tuple[dict[str, Any], int, int, bool, dict[str, int] | None]],
    chunk_rows: int,
    data: st.DataObject,
) -> None:
    expected, stamps, flags, extras = [], [], [], []
    clock = -(2**40)  # negative timestamps are allowed too
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "r.nanover.zip"
        with mock.patch.object(writer_module, "CHUNK_ROWS", chunk_rows), ArchiveWriter(path) as w:
            for message, step, flag, packed, extra in stream:
                clock += step
                if packed:
                    number = w.write_packed(
                        msgpack.packb(message),
                        types=list(message),
                        timestamp_us=clock,
                        flags=flag,
                        metadata=extra,
                    )
                else:
                    number = w.write(message, timestamp_us=clock, flags=flag, metadata=extra)
                assert number == len(expected)
                expected.append(message)
                stamps.append(clock)
                flags.append(flag)
                extras.append(extra or {})
        for use_description in (True, False):
            with ArchiveReader(path, use_description=use_description) as reader:
                assert reader.index_source == (
                    "nanorec.msgpack" if use_description else "index.msgpack"
                )
                _check(reader, expected, stamps, flags, data)
                for i in range(len(expected)):
                    metadata = reader.metadata(i)
                    want = {
                        "types": list(expected[i]),
                        "timestamp": stamps[i],
                        "crc": int(reader.index.crc[i]),
                    }
                    if flags[i]:
                        want["f"] = flags[i]
                    want.update(extras[i])
                    assert metadata == want
        report = verify(path)
        assert report.ok, report.problems


def test_member_view_is_the_member_without_a_copy(tmp_path: Path) -> None:
    path = tmp_path / "m.nanover.zip"
    with ArchiveWriter(path) as writer:
        writer.write({"a": 1}, timestamp_us=0)
        writer.add_member("big.bin", iter([b"x" * 1000, b"y" * 24]))
    reader = ArchiveReader(path)
    view = reader.member_view("big.bin")
    assert view.readonly and bytes(view) == reader.member("big.bin") == b"x" * 1000 + b"y" * 24
    reader.close()  # a live view does not make closing fail
    assert bytes(view[-2:]) == b"yy"
