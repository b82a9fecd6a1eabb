"""A `TFMessage` given as columns (`nanorec.standard.Transforms`) laid out at once
(`bridge/columns.py`): the plain encoder's bytes for any names (every padding), stamps and
numbers, read back by `rosbags` as the values, and in ROS1 the transcoder's bytes; what the
layout does not take goes through the plain path."""

from __future__ import annotations

import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("rosbags")

from rosbags.typesys import Stores, get_typestore

from nanorec.converters.ros.bridge.columns import TransformsEncoder
from nanorec.converters.ros.bridge.standard import StandardEncoder
from nanorec.converters.ros.bridge.types import ros2_to_ros1
from nanorec.converters.ros.ros2.cdr_encode import Encoder
from nanorec.standard import Transforms

HUMBLE = get_typestore(Stores.ROS2_HUMBLE)
TF = "tf2_msgs/msg/TFMessage"
_NAME = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=11)


def transforms(time_ns: int, names: list[tuple[str, str]], seed: int) -> Transforms:
    rng = np.random.default_rng(seed)
    n = len(names)
    return Transforms(
        time_ns,
        tuple(p for p, _ in names),
        tuple(c for _, c in names),
        rng.normal(0, 100, (n, 3)),
        rng.normal(0, 1, (n, 4)),
    )


@settings(max_examples=80, deadline=None)
@given(
    time_ns=st.integers(0, ((1 << 31) - 1) * 1_000_000_000),
    names=st.lists(st.tuples(_NAME, _NAME), min_size=1, max_size=6),
    seed=st.integers(0, 1 << 30),
)
def test_layout_is_the_plain_encoding(
    time_ns: int, names: list[tuple[str, str]], seed: int
) -> None:
    value = transforms(time_ns, names, seed)
    encoder = StandardEncoder()
    data = TransformsEncoder().encode(value)
    assert data is not None
    assert data == Encoder(encoder.definitions).encode(TF, dict(value))
    assert encoder.encode(TF, value) == data
    ros1 = ros2_to_ros1(TF, encoder.definitions).transcode(data)
    assert TransformsEncoder().encode_ros1(value) == ros1
    assert encoder.encode_ros1(TF, value) == ros1
    back = HUMBLE.deserialize_cdr(data, TF)
    assert [(t.header.frame_id, t.child_frame_id) for t in back.transforms] == names
    sec, nanosec = divmod(time_ns, 1_000_000_000)
    for k, t in enumerate(back.transforms):
        assert (t.header.stamp.sec, t.header.stamp.nanosec) == (sec, nanosec)
        v, q = t.transform.translation, t.transform.rotation
        assert [v.x, v.y, v.z] == value.position[k].tolist()
        assert [q.x, q.y, q.z, q.w] == value.orientation[k].tolist()


def test_a_layout_serves_every_message_with_the_same_names() -> None:
    encoder = TransformsEncoder()
    names = [("map", f"actor_{k}") for k in (1, 22, 333)] + [("actor_1", "actor_4444")]
    plain = Encoder(StandardEncoder().definitions)
    for seed in range(5):
        value = transforms(seed * 50_000_000, names, seed)
        assert encoder.encode(value) == plain.encode(TF, dict(value))
    assert len(encoder._layouts) == 1


@pytest.mark.parametrize(
    "value",
    [
        Transforms(0, (), (), np.zeros((0, 3)), np.zeros((0, 4))),  # no transform
        Transforms(1 << 63, ("a",), ("b",), np.zeros((1, 3)), np.zeros((1, 4))),  # sec too big
        Transforms(0, ("a",), ("b", "c"), np.zeros((1, 3)), np.zeros((1, 4))),  # names differ
        Transforms(0, ("a",), ("b",), np.zeros((1, 4)), np.zeros((1, 4))),  # not (n, 3)
    ],
)
def test_what_the_layout_does_not_take(value: Transforms) -> None:
    assert TransformsEncoder().encode(value) is None
    assert TransformsEncoder().encode_ros1(value) is None


def test_the_plain_path_then_judges() -> None:
    encoder = StandardEncoder()
    empty = Transforms(5, (), (), np.zeros((0, 3)), np.zeros((0, 4)))
    assert encoder.encode(TF, empty) == b"\x00\x01\x00\x00" + bytes(4)
    big = Transforms(1 << 63, ("a",), ("b",), np.zeros((1, 3)), np.zeros((1, 4)))
    with pytest.raises(struct.error):
        encoder.encode(TF, big)
