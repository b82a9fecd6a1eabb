"""Parquet tables of a pbstream a run at once (`columnar.py`, #39 item 9): the same table as
the per-record `rows` (schema, values, order) for every real and sample file, every table;
records of other shapes, garbled or cut, read record by record with the same error."""

from __future__ import annotations

import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from nanorec import registry
from nanorec.converters.pbstream import columnar, tables
from nanorec.converters.pbstream.convert import convert
from nanorec.converters.pbstream.generate import Plan, iter_payloads
from nanorec.converters.pbstream.recording import PbstreamRecording
from nanorec.converters.pbstream.records import FIXED_FRAME, IMU, NODE, ODOMETRY
from nanorec.converters.pbstream.stream import MAGIC, SIZE, build_member
from nanorec.converters.pbstream.wire import iter_fields
from nanorec.errors import NanorecError
from nanorec.outputs.arrow import column_batches, iter_batches
from tests.conftest import REALDATA, SAMPLES

pa = pytest.importorskip("pyarrow")

FILES = sorted(SAMPLES.glob("pbstream-*.pbstream")) + sorted(
    (REALDATA / "pbstream").glob("*.pbstream") if (REALDATA / "pbstream").is_dir() else []
)


def _opened(path: Path, tmp_path: Path) -> PbstreamRecording:
    if path.suffix == ".pbstream":
        archive = tmp_path / f"{path.name}.nanover.zip"
        convert(path, archive)
        path = archive
    opened = registry.open(path)
    assert isinstance(opened, PbstreamRecording)
    return opened


def _slow(rec: PbstreamRecording, kind: str) -> Any:
    return pa.Table.from_batches(list(iter_batches(rec, kind)))


def _fast(rec: PbstreamRecording, kind: str) -> Any:
    batches = [batch for _, batch in column_batches(rec, [kind])]
    return pa.Table.from_batches(batches) if batches else None


def _same_tables(rec: PbstreamRecording) -> None:
    for kind in rec.table_kinds():
        slow = _slow(rec, kind)
        fast = _fast(rec, kind)
        if not slow.num_rows:
            assert fast is None or not fast.num_rows, kind
            continue
        assert fast is not None, kind
        assert fast.schema.equals(slow.schema), (kind, fast.schema, slow.schema)
        assert fast.equals(slow), kind


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_every_table_is_the_per_record_table(path: Path, tmp_path: Path) -> None:
    if path.stat().st_size > 1 << 20 and REALDATA in path.parents:
        pytest.skip("large real file: see test_large_real_files")
    with _opened(path, tmp_path) as rec:
        _same_tables(rec)


@pytest.mark.slow
def test_large_real_files(tmp_path: Path) -> None:
    large = [p for p in FILES if p.stat().st_size > 1 << 20 and REALDATA in p.parents]
    if not large:
        pytest.skip("no large real pbstream here")
    for path in large:
        with _opened(path, tmp_path) as rec:
            _same_tables(rec)


def _write(path: Path, payloads: list[bytes]) -> Path:
    with path.open("wb") as stream:
        stream.write(MAGIC)
        for payload in payloads:
            member = build_member(payload)
            stream.write(SIZE.pack(len(member)) + member)
    return path


def _changed(payloads: list[bytes], key: int, every: int, change: Any) -> list[bytes]:
    """`payloads` with `change` applied to every `every`-th one of SerializedData `key`."""
    out, seen = [], 0
    for payload in payloads:
        if payload[0] == key:
            seen += 1
            if seen % every == 0:
                payload = change(payload)
        out.append(payload)
    return out


def _generated(plan: Plan) -> list[bytes]:
    return list(iter_payloads(plan, "2"))


IMU_KEY, ODOMETRY_KEY, NODE_KEY = 6 << 3 | 2, 7 << 3 | 2, 4 << 3 | 2


def test_generated_file_reads_at_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The generator's IMU, odometry and node records (zeros left out) take the fast path: no
    record of theirs goes through `record_rows`."""
    path = _write(tmp_path / "g.pbstream", _generated(Plan(trajectories=2, nodes=30)))
    slow_kinds: list[str] = []
    real = tables.record_rows

    def counted(rec: Any, kind: str, numbers: list[int]) -> Iterator[dict[str, Any]]:
        slow_kinds.extend([kind] * len(numbers))
        yield from real(rec, kind, numbers)

    with _opened(path, tmp_path) as rec:
        _same_tables(rec)
        monkeypatch.setattr(columnar, "record_rows", counted)
        for kind in (IMU, ODOMETRY, NODE):
            assert _fast(rec, kind).num_rows == len(rec.numbers_of(kind))
    assert slow_kinds == []


def _odd_double(payload: bytes) -> bytes:
    """The record with an extra unknown fixed64 field (9) in its inner message: valid,
    not the usual shape."""
    fields = list(iter_fields(payload))
    _, _, a, b = fields[0]
    inner = payload[a:b] + bytes([9 << 3 | 1]) + struct.pack("<d", 1.5)
    return bytes([payload[0], len(inner)]) + inner if len(inner) < 0x80 else payload


def _repeated_vector(payload: bytes) -> bytes:
    """The IMU body's angular velocity given twice (the last wins)."""
    fields = list(iter_fields(payload))
    _, _, a, b = fields[0]
    body = payload[a:b]
    imu_at = body.index(b"\x12", 0)  # ids first: `08 t` then `12 len`
    if body[0] == 0x08:
        imu_at = body.index(b"\x12", 2)
    extra = b"\x1a\x09\x09" + struct.pack("<d", -2.0)
    inner = body[imu_at + 2 :] + extra
    body = body[:imu_at] + bytes([0x12, len(inner)]) + inner
    return bytes([payload[0], len(body)]) + body


def _garbled(payload: bytes) -> bytes:
    """The key of the record's last double (IMU: angular velocity z; pose: qw) made wire
    type 7, which protobuf does not have."""
    return payload[:-9] + b"\x1f" + payload[-8:]


def _cut(payload: bytes) -> bytes:
    """The record 3 bytes shorter, the record's and its inner message's lengths with it:
    its last sub-message runs past them."""
    fields = list(iter_fields(payload))
    _, _, a, b = fields[0]
    inner = [f for f in iter_fields(payload, a, b) if f[0] == 2]
    cut = bytearray(payload[:-3])
    cut[a - 1] -= 3
    cut[inner[0][2] - 1] -= 3
    return bytes(cut)


@pytest.mark.parametrize(
    ("change", "key", "every"),
    [
        (_odd_double, IMU_KEY, 7),
        (_odd_double, ODOMETRY_KEY, 5),
        (_repeated_vector, IMU_KEY, 3),
    ],
)
def test_other_shapes_are_read_record_by_record(
    change: Any, key: int, every: int, tmp_path: Path
) -> None:
    payloads = _changed(_generated(Plan(trajectories=2, nodes=25)), key, every, change)
    with _opened(_write(tmp_path / "odd.pbstream", payloads), tmp_path) as rec:
        _same_tables(rec)


def _error(produce: Any) -> str:
    with pytest.raises(NanorecError) as caught:
        produce()
    return str(caught.value)


@pytest.mark.parametrize(
    ("change", "key"),
    [
        (_garbled, IMU_KEY),
        (_cut, IMU_KEY),
        (_garbled, ODOMETRY_KEY),
        (_cut, ODOMETRY_KEY),
        (_garbled, NODE_KEY),
    ],
)
def test_damaged_records_give_the_per_record_error(change: Any, key: int, tmp_path: Path) -> None:
    payloads = _changed(_generated(Plan(trajectories=2, nodes=25)), key, 11, change)
    with _opened(_write(tmp_path / "bad.pbstream", payloads), tmp_path) as rec:
        kind = {IMU_KEY: IMU, ODOMETRY_KEY: ODOMETRY, NODE_KEY: NODE}[key]
        if not len(rec.numbers_of(kind)):
            pytest.skip("the damaged records are not of the kind any more")
        slow = _error(lambda: _slow(rec, kind))
        assert slow == _error(lambda: _fast(rec, kind))
        assert "record" in slow or "field" in slow


def test_fixed_frame_and_a_selection(tmp_path: Path) -> None:
    """A time range and a number range select the same rows both ways."""
    from nanorec.selection import Selection

    path = _write(tmp_path / "g.pbstream", _generated(Plan(trajectories=2, nodes=40)))
    with _opened(path, tmp_path) as rec:
        for selection in (Selection(start=1.0, end=9.0), Selection(first=10, stop=200)):
            for kind in (IMU, ODOMETRY, FIXED_FRAME):
                slow = pa.Table.from_batches(list(iter_batches(rec, kind, selection)))
                batches = [b for _, b in column_batches(rec, [kind], selection)]
                if not slow.num_rows:
                    assert not batches or not sum(b.num_rows for b in batches)
                    continue
                assert pa.Table.from_batches(batches).equals(slow), (kind, selection)
                assert np.all(np.diff(slow["number"].to_numpy()) > 0)


def _graphs(rec: PbstreamRecording) -> tuple[Any, Any, bool]:
    """The pose graph parsed at once and by the decoder, and whether the first was taken."""
    from nanorec.converters.pbstream import graph_columns
    from nanorec.converters.pbstream.trajectory import PoseGraph

    body = rec.body(int(rec.numbers_of("pose_graph")[0]))
    taken = graph_columns.parse(*body) is not None
    fast = PoseGraph.parse(*body)
    saved = graph_columns.parse
    graph_columns.parse = lambda *args: None  # type: ignore[assignment]
    try:
        slow = PoseGraph.parse(*body)
    finally:
        graph_columns.parse = saved
    return fast, slow, taken


def _same_graph(fast: Any, slow: Any) -> None:
    for mine, theirs in ((fast.nodes, slow.nodes), (fast.submaps, slow.submaps)):
        assert list(mine) == list(theirs)
        for tid, poses in theirs.items():
            for name in ("index", "timestamp", "translation", "rotation"):
                got, want = getattr(mine[tid], name), getattr(poses, name)
                assert got.dtype == want.dtype and np.array_equal(got, want), (tid, name)
            assert mine[tid].source == poses.source
    assert fast.constraints.tobytes() == slow.constraints.tobytes()
    assert fast.landmarks == slow.landmarks


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_pose_graph_at_once_is_the_decoded_graph(path: Path, tmp_path: Path) -> None:
    with _opened(path, tmp_path) as rec:
        if not len(rec.numbers_of("pose_graph")):
            pytest.skip("no pose graph")
        fast, slow, taken = _graphs(rec)
        assert taken
        _same_graph(fast, slow)


def test_pose_graph_of_another_shape_is_decoded(tmp_path: Path) -> None:
    """A node pose given twice in the pose graph (the last wins): declined, decoded as before;
    a garbled one: the decoder's error, noted as before."""
    payloads = _generated(Plan(trajectories=1, nodes=20))
    graph = next(p for p in payloads if p[0] == 0x0A)
    fields = list(iter_fields(graph))
    _, _, a, b = fields[0]
    body = graph[a:b]
    # the first node of the first trajectory: 22 len (trajectory) 0a len (node) ...
    at = body.index(b"\x0a", body.index(b"\x22") + 2)
    node_length = body[at + 1]
    node = body[at + 2 : at + 2 + node_length]
    twice = (
        node + node[node.index(b"\x2a") : node.index(b"\x2a") + 2 + node[node.index(b"\x2a") + 1]]
    )
    for replacement, declined in ((twice, True), (node[:-9] + b"\x1f" + node[-8:], True)):
        if len(replacement) >= 0x80:
            pytest.skip("the generated node is too long for this edit")
        changed = body[:at] + bytes([0x0A, len(replacement)]) + replacement
        changed += body[at + 2 + node_length :]
        start = body.index(b"\x22")
        length = len(changed) - start - 3  # the trajectory: 22 and a 2-byte length
        if not 0x80 <= length < 0x4000 or body[start + 1] < 0x80:
            pytest.skip("the generated trajectory's length is not two bytes")
        changed = (
            changed[: start + 1] + bytes([length & 0x7F | 0x80, length >> 7]) + changed[start + 3 :]
        )
        new = bytes([graph[0]]) + _varint(len(changed)) + changed
        out = [new if p is graph else p for p in payloads]
        with _opened(_write(tmp_path / f"graph{len(replacement)}.pbstream", out), tmp_path) as rec:
            from nanorec.converters.pbstream import graph_columns

            assert (
                graph_columns.parse(*rec.body(int(rec.numbers_of("pose_graph")[0]))) is None
            ) == declined
            try:
                fast, slow, _ = _graphs(rec)
            except NanorecError as error:
                with pytest.raises(NanorecError, match=str(error)[:20]):
                    _graphs(rec)
                continue
            _same_graph(fast, slow)
        tmp_path = tmp_path / "next"
        tmp_path.mkdir()


def _varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)
