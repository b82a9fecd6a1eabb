"""Release-family detection from the packets (spec §10), and forcing a family."""

from __future__ import annotations

import struct

import pytest

from nanorec.converters.carla.codec import decode, encode
from nanorec.converters.carla.detect import detect, resolve
from nanorec.converters.carla.ids import FAMILIES
from nanorec.errors import UnsupportedError
from tests.converters.carla import carla_bytes as cb


def _frames(name: str, count: int = 3, *, additional: bool = False) -> bytes:
    family = FAMILIES[name]
    return cb.header() + b"".join(
        cb.rich_frame(family, seed, additional=additional).bytes() for seed in range(count)
    )


@pytest.mark.parametrize(
    ("name", "additional"),
    [(name, False) for name in FAMILIES] + [(name, True) for name in FAMILIES][1:],
)
def test_each_family_is_detected(name: str, additional: bool) -> None:
    detection = detect(_frames(name, additional=additional))
    assert detection.family.name == name, detection.reasons
    assert not detection.forced
    assert any("best fit" in reason for reason in detection.reasons)


def test_vector_width_is_in_the_evidence() -> None:
    reasons = " | ".join(detect(_frames("ue5-0.10")).reasons)
    assert "52-byte records: UE5 float64 vectors" in reasons
    reasons = " | ".join(detect(_frames("0.9.15")).reasons)
    assert "28-byte records: UE4 float32 vectors" in reasons


def test_door_slot_evidence() -> None:
    assert "VehicleDoor at 21" in " ".join(detect(_frames("nightly-2023")).reasons)
    assert "VehicleDoor at 23" in " ".join(detect(_frames("0.9.16")).reasons)
    assert "no VehicleDoor slot" in " ".join(detect(_frames("0.9.15")).reasons)


def test_fork_weather_at_21_on_a_0914_base_stays_unknown() -> None:
    # DReyeVR on 0.9.14 writes Weather v1 as id 21 (13 floats): not AnimVehicleWheels.
    family = FAMILIES["0.9.14"]
    weather_v1 = cb.counted([struct.pack("<13f", *range(13))])
    data = bytearray(cb.header())
    for seed in range(3):
        frame = cb.rich_frame(family, seed, additional=False)
        packets = [
            *frame.packets[:-1],
            (21, weather_v1),
            (139, b"eye tracking"),
            *frame.packets[-1:],
        ]
        data += b"".join(cb.packet(pid, body) for pid, body in packets)
    recording = decode(bytes(data))
    assert recording.family.name == "0.9.14", recording.detection.reasons
    batch = recording.batches[0]
    assert sorted(set(batch.packet_ids[batch.raw.index].tolist())) == [21, 139]
    assert set(batch.raw.reasons) == {None}  # unknown ids, not misfits
    assert encode(recording) == bytes(data)


def test_forced_family_is_used_and_reported() -> None:
    data = _frames("0.9.16")
    detection = resolve(data, None, "0.9.15")
    assert detection.forced and detection.family.name == "0.9.15"
    recording = decode(data, family="0.9.15")
    assert recording.detection.forced
    batch = recording.batches[0]
    assert 23 in batch.packet_ids[batch.raw.index].tolist()  # 0.9.15 has no id 23
    assert encode(recording) == data
    with pytest.raises(UnsupportedError, match="unknown CARLA release family"):
        resolve(data, None, "0.9.99")


def test_empty_and_tiny_inputs_do_not_break_detection() -> None:
    assert detect(cb.header()).family.name == "0.9.4-0.9.9"
    assert detect(cb.header() + b"\x00\x01").family is not None


def test_a_missing_always_packet_does_not_turn_known_ids_unknown() -> None:
    # A 0.9.15 file whose AnimBiker packet is absent: still 0.9.15, 21 still decoded.
    family = FAMILIES["0.9.15"]
    data = bytearray(cb.header())
    for seed in range(4):
        packets = [p for p in cb.rich_frame(family, seed, additional=False).packets if p[0] != 22]
        data += b"".join(cb.packet(pid, body) for pid, body in packets)
    recording = decode(bytes(data))
    assert recording.family.name == "0.9.15", recording.detection.reasons
    assert len(recording.batches[0].raw.index) == 0
