"""`nanorec.outputs.mcap_protobuf` writes what the `protobuf` package reads: varints, timestamps,
blocks of doubles, against the bundled FileDescriptorSet (which is Foxglove's own)."""

from __future__ import annotations

import math

import numpy as np
import pytest

pytest.importorskip("google.protobuf")

from google.protobuf import descriptor_pb2

from nanorec.outputs import mcap_protobuf as pb
from tests.mcap.decode import message_class, parse, plain

SCHEMAS = pb.descriptor_set()


def test_the_bundled_schemas_name_foxglove_types() -> None:
    files = descriptor_pb2.FileDescriptorSet.FromString(SCHEMAS)
    names = {f"{f.package}.{m.name}" for f in files.file for m in f.message_type}
    assert set(pb.TYPES) <= names
    assert {"google.protobuf.Timestamp", "foxglove.SceneEntity", "foxglove.Color"} <= names
    for name in pb.TYPES:
        message_class(SCHEMAS, name)  # every import resolves


def test_the_bundled_schemas_are_foxglove_schemas_protobuf() -> None:
    """The same messages and fields as the package they were taken from (the `bench`
    extra), when it is installed."""
    fsp = pytest.importorskip("foxglove_schemas_protobuf.SceneUpdate_pb2")
    frames = pytest.importorskip("foxglove_schemas_protobuf.FrameTransforms_pb2")
    bundled = {f.name: f for f in descriptor_pb2.FileDescriptorSet.FromString(SCHEMAS).file}
    seen: set[str] = set()
    todo = [fsp.DESCRIPTOR, frames.DESCRIPTOR]
    while todo:
        file = todo.pop()
        if file.name in seen:
            continue
        seen.add(file.name)
        todo += file.dependencies
        theirs = descriptor_pb2.FileDescriptorProto()
        file.CopyToProto(theirs)
        assert bundled[file.name].message_type == theirs.message_type, file.name
    assert seen == set(bundled)


@pytest.mark.parametrize("value", [0, 1, 127, 128, 300, 2**31 - 1, 2**63 + 5])
def test_varints_and_timestamps_read_back(value: int) -> None:
    timestamp = message_class(SCHEMAS, "google.protobuf.Timestamp")
    time_ns = value % (2**62)
    data = pb.timestamp(1, time_ns)
    assert data[0] == 0x0A and data[1] == len(data) - 2
    read = timestamp.FromString(data[2:])
    assert (read.seconds, read.nanos) == divmod(time_ns, 1_000_000_000)
    assert (
        data[2:]
        == timestamp(
            seconds=time_ns // 1_000_000_000, nanos=time_ns % 1_000_000_000
        ).SerializeToString()
    )
    assert pb.varint(value) == _reference_varint(value)


def _reference_varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def test_a_block_of_doubles_is_a_pose() -> None:
    """A `foxglove.Pose` laid by `DoubleBlock` for many rows at once, each row read back
    by protobuf, every double exact (NaN, infinities and -0.0 too)."""
    block = pb.DoubleBlock([*pb.message(1, pb.doubles(3)), *pb.message(2, pb.doubles(4))])
    rng = np.random.default_rng(3)
    values = rng.normal(size=(50, 7)) * 1e3
    values[0] = [math.nan, math.inf, -math.inf, -0.0, 0.0, 5e-324, 1.0]
    rows = block.rows([values[:, i] for i in range(7)])
    assert len(rows) == 50 and {len(row) for row in rows} == {block.width}
    for row, expected in zip(rows, values.tolist(), strict=True):
        pose = plain(parse(SCHEMAS, "foxglove.Pose", row))
        got = [*pose["position"].values(), *pose["orientation"].values()]
        assert np.array_equal(got, expected, equal_nan=True)
        assert [math.copysign(1, v) for v in got] == [math.copysign(1, v) for v in expected]
    assert block.rows([np.empty(0)] * 7) == []
    with pytest.raises(ValueError, match="columns"):
        block.fill([values[:, 0]])


def test_on_grid_keeps_the_resolution_and_zeros_low_bits() -> None:
    values = np.random.default_rng(5).uniform(-500, 500, 1000)
    rounded = pb.on_grid(values, 20)
    assert np.abs(rounded - values).max() <= 2.0**-21
    low = rounded.view(np.uint64) & np.uint64(0xFFFF)  # |x| < 2**9: 23+ zero mantissa bits
    assert not low.any()
    assert (pb.on_grid(rounded, 20) == rounded).all()
