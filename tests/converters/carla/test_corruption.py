"""A ladder of one-corruption-each inputs: a clean error naming the offset, or a clean report.

Every input either raises a `NanorecError` subclass (only a broken header can) or decodes
with the damage reported (truncation, packets carried raw) and encodes back to the exact
input bytes. No other exception type, ever.
"""

from __future__ import annotations

import random
import struct

import pytest

from nanorec.converters.carla.codec import decode, encode
from nanorec.converters.carla.header import Header
from nanorec.converters.carla.ids import FAMILIES
from nanorec.converters.carla.roundtrip import roundtrip
from nanorec.errors import BadMagicError, FormatError, NanorecError, TruncatedError
from tests.converters.carla import carla_bytes as cb

FAMILY = FAMILIES["0.9.16"]


def _small() -> tuple[bytes, list[int]]:
    """A small file of two 0.9.16 frames, and the offsets where its packets start."""
    frames = [cb.rich_frame(FAMILY, 0, additional=False), cb.rich_frame(FAMILY, 1)]
    data = bytearray(cb.header())
    starts = []
    for frame in frames:
        for pid, body in frame.packets:
            starts.append(len(data))
            data += cb.packet(pid, body)
    return bytes(data), starts


@pytest.mark.slow
def test_cut_at_every_offset() -> None:
    data, starts = _small()
    header_size = len(cb.header())
    boundaries = set(starts) | {len(data)}
    for cut in range(len(data) + 1):
        piece = data[:cut]
        if cut < header_size:
            with pytest.raises(TruncatedError) as error:
                decode(piece)
            assert error.value.offset is not None and error.value.offset <= cut
            continue
        # Detection and a forced family must both cope; check detection every few cuts.
        family = None if cut % 7 == 0 else FAMILY
        recording = decode(piece, family=family)
        truncation = recording.truncation
        if cut in boundaries:
            assert truncation is None, cut
        else:
            assert truncation is not None, cut
            assert truncation.offset == max(s for s in starts if s < cut), cut
        assert encode(recording) == piece, cut
        if family is FAMILY:
            assert len(recording.batches[0].raw.index) == 0, cut


def test_report_of_a_cut_file() -> None:
    data, starts = _small()
    cut = starts[20] + 3  # inside a packet header of the second frame
    report = roundtrip(data[:cut])
    assert report.identical
    assert report.truncation is not None and report.truncation.offset == starts[20]
    assert "packet header cut" in report.truncation.reason
    assert report.frames == 2 and report.incomplete_frame
    cut = starts[20] + 9  # inside a body
    report = roundtrip(data[:cut])
    assert report.truncation is not None and report.truncation.offset == starts[20]
    assert "announces" in report.truncation.reason
    assert report.identical and report.raw_by_id == {}


@pytest.mark.parametrize("at", range(2, 18))
def test_bad_magic_names_offset_2(at: int) -> None:
    data = bytearray(_small()[0])
    data[at] ^= 0x20
    with pytest.raises(BadMagicError) as error:
        decode(bytes(data))
    assert error.value.offset == 2
    assert "not a CARLA recorder" in str(error.value)


def test_not_a_recorder_at_all() -> None:
    for data in (b"PK\x03\x04 a zip file", b"\x01\x00\x0e\x00CARLA_RECORDEX"):
        with pytest.raises(BadMagicError):
            decode(data)


def test_map_name_past_the_end() -> None:
    data = bytearray(cb.header("Town10HD_Opt"))
    with pytest.raises(TruncatedError) as error:
        Header.parse(bytes(data[:-3]))
    assert error.value.offset == 28
    assert error.value.expected == 12 and error.value.actual == 9


def test_header_round_trips_any_version_date_and_map_bytes() -> None:
    raw = cb.header("Town05", date=-5, version=7)[:-8] + struct.pack("<H", 3) + b"\xff\x00A"
    header = Header.parse(raw)
    assert (header.version, header.date, header.size) == (7, -5, len(raw))
    assert header.serialize() == raw


def test_size_past_the_end_is_a_truncation() -> None:
    data, starts = _small()
    tweaked = bytearray(data)
    victim = starts[8]  # a Position packet of frame 1
    struct.pack_into("<I", tweaked, victim + 1, 0xFFFFFFFF)
    recording = decode(bytes(tweaked), family=FAMILY)
    assert recording.truncation is not None
    assert recording.truncation.offset == victim
    assert "4294967295" in recording.truncation.reason
    assert encode(recording) == bytes(tweaked)


def test_size_too_small_for_the_kind_is_carried_raw() -> None:
    data = cb.header() + cb.packet(0, b"\x00" * 23) + cb.packet(6, b"\x01") + cb.packet(1, b"x")
    recording = decode(data, family=FAMILY)
    batch = recording.batches[0]
    assert batch.packet_ids[batch.raw.index].tolist() == [0, 6, 1]
    assert all(reason is not None for reason in batch.raw.reasons)
    assert encode(recording) == data
    with pytest.raises(FormatError) as error:
        decode(data, family=FAMILY, strict=True)
    assert error.value.offset == len(cb.header())  # the first misfit: FrameStart


@pytest.mark.slow
def test_random_byte_flips_never_raise_anything_else() -> None:
    data, _ = _small()
    header_size = len(cb.header())
    rng = random.Random(20261121)
    for _ in range(400):
        corrupt = bytearray(data)
        for _ in range(rng.choice((1, 1, 2, 5))):
            at = rng.randrange(len(corrupt))
            corrupt[at] = rng.randrange(256)
        try:
            recording = decode(bytes(corrupt), family=rng.choice((None, FAMILY)))
        except NanorecError as error:
            assert error.offset is not None and error.offset < header_size
            continue
        assert encode(recording) == bytes(corrupt)


def test_random_garbage_after_a_valid_header() -> None:
    rng = random.Random(7)
    for size in (1, 4, 5, 6, 50, 500):
        for _ in range(20):
            data = cb.header() + bytes(rng.randrange(256) for _ in range(size))
            for strict in (False, True):
                try:
                    recording = decode(data, strict=strict)
                except NanorecError:
                    assert strict
                    continue
                assert encode(recording) == data
