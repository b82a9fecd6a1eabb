"""The codec against hand-built bytes: every packet kind of every shape, in every family.

Two-way, construct style: `decode(bytes)` gives the expected values and `encode` gives the
exact bytes back. Bodies are built with `struct` in `carla_bytes`, from the spec's tables.
"""

from __future__ import annotations

import numpy as np
import pytest

from nanorec.converters.carla import codec
from nanorec.converters.carla.codec import (
    EmptyTable,
    FixedTable,
    VarTable,
    WheelsTable,
    decode,
    decode_body,
    encode,
    encode_body,
)
from nanorec.converters.carla.ids import FAMILIES, SHAPES, Engine, Kind, Shape
from nanorec.converters.carla.records import ActorAdd, PhysicsControl, VehicleWheels, WalkerBones
from nanorec.errors import FormatError, TruncatedError, UnknownNameError
from tests.converters.carla import carla_bytes as cb

FAMILY_NAMES = list(FAMILIES)
UE4 = FAMILIES["0.9.16"]
UE5 = FAMILIES["ue5-0.10"]


def _kinds(name: str) -> list[Kind]:
    return [item.kind for item in FAMILIES[name].order]


@pytest.mark.parametrize("name", FAMILY_NAMES)
def test_rich_recording_round_trips_with_every_kind_decoded(name: str) -> None:
    family = FAMILIES[name]
    data = cb.recording(family, 3)
    recording = decode(data, family=name)
    batch = recording.batches[0]
    assert len(batch.raw.index) == 0
    assert encode(recording) == data
    for kind in _kinds(name):
        table = batch.table(kind, family)
        assert table is not None, kind
        expected = {
            Shape.EMPTY: EmptyTable,
            Shape.SINGLE: FixedTable,
            Shape.FIXED: FixedTable,
            Shape.VAR: WheelsTable if kind is Kind.ANIM_VEHICLE_WHEELS else VarTable,
        }[SHAPES[kind]]
        assert isinstance(table, expected), kind
        assert len(table.index) == 3
    # Detection picks the same family from these frames.
    assert decode(data).family.name == name


@pytest.mark.parametrize("name", FAMILY_NAMES)
def test_decode_body_and_encode_body_are_inverse_for_every_kind(name: str) -> None:
    family = FAMILIES[name]
    for kind in _kinds(name):
        body = cb.rich_body(kind, family, seed=2)
        decoded = decode_body(kind, body, family)
        assert encode_body(kind, decoded, family) == body, kind


def test_fixed_records_hold_the_values_of_the_spec_layouts() -> None:
    body = cb.counted(
        [
            cb.position(Engine.UE4, 7, (1.5, -2.0, 3.25), (0.0, -90.0, 179.5)),
            cb.position(Engine.UE4, 8, (4.0, 5.0, 6.0), (0.0, 0.0, 0.0)),
        ]
    )
    records = decode_body(Kind.POSITION, body, UE4)
    assert isinstance(records, np.ndarray)
    assert records.dtype.itemsize == 28
    assert records["id"].tolist() == [7, 8]
    assert records["location"].dtype == np.float32
    assert records["location"][0].tolist() == [1.5, -2.0, 3.25]
    assert records["rotation"][0].tolist() == [0.0, -90.0, 179.5]

    collision = decode_body(
        Kind.COLLISION, cb.counted([cb.collision(3, 24, 0xFFFFFFFF, 1, 0)]), UE4
    )
    assert isinstance(collision, np.ndarray)
    assert collision.dtype.itemsize == 14
    assert collision[0].tolist() == (3, 24, 0xFFFFFFFF, 1, 0)

    state = decode_body(Kind.STATE, cb.counted([cb.state(50, 1, 2.5, 2)]), UE4)
    assert isinstance(state, np.ndarray)
    assert state.dtype.itemsize == 10
    assert state[0].tolist() == (50, 1, 2.5, 2)

    anim = decode_body(
        Kind.ANIM_VEHICLE, cb.counted([cb.anim_vehicle(9, 0.5, 1.0, 0.25, 1, -1)]), UE4
    )
    assert isinstance(anim, np.ndarray)
    assert anim.dtype.itemsize == 21
    assert anim[0].tolist() == (9, 0.5, 1.0, 0.25, 1, -1)

    light = decode_body(
        Kind.SCENE_LIGHT, cb.counted([cb.scene_light(-3, 5.0, (1, 0.5, 0, 1), 1, 2)]), UE4
    )
    assert isinstance(light, np.ndarray)
    assert light.dtype.itemsize == 26
    assert light["light_id"][0] == -3
    assert light["color"][0].tolist() == [1.0, 0.5, 0.0, 1.0]

    frame = decode_body(Kind.FRAME_START, cb.frame_start(12, -1.0, 0.6000000089406967), UE4)
    assert isinstance(frame, np.ndarray)
    assert frame[0].tolist() == (12, -1.0, 0.6000000089406967)

    weather = decode_body(Kind.WEATHER, cb.counted([cb.weather()]), FAMILIES["ue4-dev-2026"])
    assert isinstance(weather, np.ndarray)
    assert weather.dtype.itemsize == 56
    assert weather["dust_storm"][0] == 13.0


def test_ue5_vectors_are_float64() -> None:
    value = (0.1, -1e300, 12345.678901234)  # not representable in float32
    body = cb.counted([cb.position(Engine.UE5, 7, value, (0.0, 0.0, 0.1))])
    records = decode_body(Kind.POSITION, body, UE5)
    assert isinstance(records, np.ndarray)
    assert records.dtype.itemsize == 52
    assert records["location"].dtype == np.float64
    assert records["location"][0].tolist() == list(value)
    assert encode_body(Kind.POSITION, records, UE5) == body

    add = cb.counted(
        [cb.actor_add(Engine.UE5, 5, 1, value, (0, 0, 0), 3, "vehicle.a", [(3, "k", "v")])]
    )
    (actor,) = decode_body(Kind.EVENT_ADD, add, UE5)
    assert isinstance(actor, ActorAdd)
    assert actor.location.dtype == np.float64
    assert actor.location.tolist() == list(value)
    assert (actor.id, actor.type, actor.uid, actor.blueprint) == (5, 1, 3, "vehicle.a")
    assert [(a.type, a.id, a.value) for a in actor.attributes] == [(3, "k", "v")]
    # The same bytes do not parse with UE4 widths.
    with pytest.raises((FormatError, TruncatedError)):
        decode_body(Kind.EVENT_ADD, add, UE4)

    bones = cb.counted([cb.walker_bones(Engine.UE5, 60, [("root", value, (1, 2, 3))])])
    (walker,) = decode_body(Kind.WALKER_BONES, bones, UE5)
    assert isinstance(walker, WalkerBones)
    assert walker.names == ("root",)
    assert walker.locations.dtype == np.float64
    assert walker.locations[0].tolist() == list(value)


@pytest.mark.parametrize("wheel_size", [36, 48])
def test_ue4_physics_control_wheels_of_36_or_48_bytes(wheel_size: int) -> None:
    family = FAMILIES["0.9.10-0.9.13"]
    body = cb.counted([cb.physics_ue4(24, wheel_size, wheels=4, base=2.0)])
    (record,) = decode_body(Kind.PHYSICS_CONTROL, body, family)
    assert isinstance(record, PhysicsControl)
    assert record.id == 24
    assert record.wheel_size == wheel_size
    wheels = record.array("wheels")
    assert len(wheels) == 4
    assert wheels["tire_friction"].tolist() == [2.0, 3.0, 4.0, 5.0]
    assert encode_body(Kind.PHYSICS_CONTROL, [record], family) == body
    data = (
        cb.header()
        + cb.packet(0, cb.frame_start(1, -1, 0))
        + cb.packet(15, body)
        + cb.packet(1, b"")
    )
    batch = decode(data, family=family).batches[0]
    assert batch.physics_wheel_sizes == {wheel_size}


def test_ue5_physics_control_keeps_wheels_opaque() -> None:
    body = cb.counted([cb.physics_ue5(24, wheels=4, wheel_bytes=208)])
    (record,) = decode_body(Kind.PHYSICS_CONTROL, body, UE5)
    assert isinstance(record, PhysicsControl)
    wheels = record.array("wheels")
    assert wheels.shape == (4, 208)
    assert bytes(wheels[1]) == bytes(range(208))
    assert record.array("forward_gear_ratios").tolist() == [4.0, 2.0, 1.0]
    with pytest.raises(UnknownNameError, match=r"'nope'.*wheels"):
        record.array("nope")
    assert encode_body(Kind.PHYSICS_CONTROL, [record], UE5) == body
    # An element size other than the computed 208 is derived from the packet size.
    odd = cb.counted([cb.physics_ue5(24, wheels=3, wheel_bytes=200)])
    (record,) = decode_body(Kind.PHYSICS_CONTROL, odd, UE5)
    assert isinstance(record, PhysicsControl)
    assert record.array("wheels").shape == (3, 200)
    assert encode_body(Kind.PHYSICS_CONTROL, [record], UE5) == odd


def test_vehicle_wheels_decode_to_columns_and_records() -> None:
    family = FAMILIES["0.9.15"]
    body = cb.rich_body(Kind.ANIM_VEHICLE_WHEELS, family)
    data = cb.header() + cb.packet(0, cb.frame_start(1, -1, 0)) + cb.packet(21, body)
    data += cb.packet(21, cb.counted([])) + cb.packet(1, b"")
    batch = decode(data, family=family).batches[0]
    table = batch.tables[21]
    assert isinstance(table, WheelsTable)
    assert table.counts.tolist() == [2, 0]
    assert table.ids.tolist() == [24, 26]
    assert table.wheel_counts.tolist() == [4, 2]
    assert table.wheels["location"].tolist() == [0, 1, 2, 3, 0, 1]
    assert table.wheels["steering_angle"].tolist() == [10, 10, 0, 0, 5, 0]
    records = table.records()
    assert all(isinstance(record, VehicleWheels) for record in records)
    assert [len(record.wheels) for record in records] == [4, 2]
    assert codec.encode_batch(batch, family) == data[len(cb.header()) :]


def _frame(*packets: tuple[int, bytes]) -> bytes:
    return b"".join(cb.packet(pid, body) for pid, body in packets)


@pytest.mark.parametrize("name", FAMILY_NAMES)
def test_ids_21_to_24_mean_what_the_family_says(name: str) -> None:
    family = FAMILIES[name]
    packets = [(0, cb.frame_start(1, -1.0, 0.0))]
    for pid in (21, 22, 23, 24):
        kind = family.kind_of(pid)
        packets.append((pid, cb.rich_body(kind, family) if kind else b"\x07\x00fork data"))
    packets.append((1, b""))
    data = cb.header() + _frame(*packets)
    recording = decode(data, family=name)
    batch = recording.batches[0]
    for pid in (21, 22, 23, 24):
        kind = family.kind_of(pid)
        if kind is None:
            assert pid not in batch.tables
            position = int(np.flatnonzero(batch.packet_ids == pid)[0])
            raw_at = batch.raw.index.tolist().index(position)
            assert batch.raw.reasons[raw_at] is None  # unknown id, not a misfit
        else:
            assert batch.tables[pid].kind is kind
    assert encode(recording) == data


def test_user_and_dreyevr_packets_are_carried_raw() -> None:
    family = UE4
    frame = cb.rich_frame(family)
    extra = [(100, b"user data"), (139, bytes(300)), (140, b""), (141, b"\xff" * 7), (255, b"x")]
    packets = frame.packets[:-1] + extra + frame.packets[-1:]
    data = cb.header() + _frame(*packets) + cb.rich_frame(family, 1).bytes()
    recording = decode(data)
    assert recording.family is family
    batch = recording.batches[0]
    raw_ids = batch.packet_ids[batch.raw.index].tolist()
    assert raw_ids == [100, 139, 140, 141, 255]
    assert batch.raw.reasons == [None] * 5
    assert batch.raw.bodies == [body for _, body in extra]
    assert encode(recording) == data


def test_known_packet_that_does_not_fit_is_carried_raw_or_raised_when_strict() -> None:
    family = FAMILIES["0.9.10-0.9.13"]
    good = cb.rich_frame(family, additional=False)
    bad_position = cb.counted([cb.position(Engine.UE4, 1, (0, 0, 0), (0, 0, 0))])[:-1]  # 1 short
    packets = [(pid, bad_position if pid == 6 else body) for pid, body in good.packets]
    data = cb.header() + _frame(*packets)
    offset = len(cb.header()) + sum(
        5 + len(body) for pid, body in packets[: [p for p, _ in packets].index(6)]
    )
    recording = decode(data, family=family)
    batch = recording.batches[0]
    assert batch.packet_ids[batch.raw.index].tolist() == [6]
    reason = batch.raw.reasons[0]
    assert reason is not None and "packet id 6" in reason and f"byte {offset}" in reason
    assert encode(recording) == data
    with pytest.raises(FormatError) as error:
        decode(data, family=family, strict=True)
    assert error.value.offset == offset
    assert "packet id 6 (position)" in str(error.value)


def test_var_packet_with_a_string_past_its_body_is_raw_or_truncated_error() -> None:
    family = UE4
    add = cb.counted([cb.actor_add(Engine.UE4, 5, 1, (0, 0, 0), (0, 0, 0), 3, "vehicle.abc")])
    broken = add[:-4]  # the blueprint string now runs past the body
    data = cb.header() + _frame((0, cb.frame_start(1, -1, 0)), (2, broken), (1, b""))
    recording = decode(data, family=family)
    batch = recording.batches[0]
    assert batch.packet_ids[batch.raw.index].tolist() == [2]
    assert encode(recording) == data
    with pytest.raises(TruncatedError) as error:
        decode(data, family=family, strict=True)
    assert "packet id 2 (event_add)" in str(error.value)
    assert error.value.offset is not None and error.value.offset > len(cb.header())


def test_absurd_count_is_a_misfit() -> None:
    body = bytearray(cb.rich_body(Kind.POSITION, UE4))
    body[0:2] = b"\xff\xff"
    data = cb.header() + _frame((0, cb.frame_start(1, -1, 0)), (6, bytes(body)), (1, b""))
    recording = decode(data, family=UE4)
    reasons = recording.batches[0].raw.reasons
    assert len(reasons) == 1 and reasons[0] is not None and "count 65535" in reasons[0]
    assert encode(recording) == data


def test_encode_rebuilds_from_values_not_from_input_bytes() -> None:
    family = UE4
    data = cb.recording(family, 2)
    recording = decode(data, family=family)
    table = recording.batches[0].tables[6]
    assert isinstance(table, FixedTable)
    table.records["location"][0] = (9.0, 9.0, 9.0)
    changed = encode(recording)
    assert changed != data and len(changed) == len(data)
    again = decode(changed, family=family).batches[0].tables[6]
    assert isinstance(again, FixedTable)
    assert again.records["location"][0].tolist() == [9.0, 9.0, 9.0]


def test_iter_batches_streams_whole_frames_and_encodes_back() -> None:
    family = FAMILIES["0.9.15"]
    data = cb.recording(family, 12)[:-7]  # ends mid-packet
    batches = list(codec.iter_batches(data, batch_bytes=2000))
    assert len(batches) > 2
    assert all(int(batch.packet_ids[0]) == 0 for batch in batches)
    assert batches[-1].truncation is not None and len(batches[-1].tail) > 0
    encoded = cb.header() + b"".join(codec.encode_batch(batch, family) for batch in batches)
    assert encoded == data


def test_vehicle_wheels_in_frames_with_the_same_and_different_layouts() -> None:
    family = FAMILIES["0.9.16"]
    car = [(0, 1.0, 2.0), (1, 1.0, 2.0), (2, 0.0, 2.0), (3, 0.0, 2.0)]
    bike = [(0, 5.0, 9.0), (1, 0.0, 9.0)]
    same = cb.counted(
        [cb.vehicle_wheels(1, car), cb.vehicle_wheels(2, car), cb.vehicle_wheels(3, bike)]
    )
    swapped = cb.counted(  # same count and size, other layout
        [cb.vehicle_wheels(3, bike), cb.vehicle_wheels(1, car), cb.vehicle_wheels(2, car)]
    )
    for bodies in ([same] * 5, [same, same, swapped, same], [swapped, same]):
        data = cb.header() + b"".join(
            cb.packet(0, cb.frame_start(i + 1, 0.05, 0.05 * i))
            + cb.packet(21, body)
            + cb.packet(1, b"")
            for i, body in enumerate(bodies)
        )
        recording = decode(data, family=family)
        table = recording.batches[0].tables[21]
        assert isinstance(table, WheelsTable)
        expected_ids = [i for body in bodies for i in ([1, 2, 3] if body is same else [3, 1, 2])]
        assert table.ids.tolist() == expected_ids
        assert table.wheels["tire_rotation"][-2:].tolist() == (
            [9.0, 9.0] if bodies[-1] is same else [2.0, 2.0]
        )
        assert encode(recording) == data
