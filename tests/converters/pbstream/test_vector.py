"""`vector.describe_run` against `records.describe_prefix`, record for record: every row it
reads must read as `describe_prefix` reads it (the rest goes to `describe_prefix`)."""

from __future__ import annotations

import random

import numpy as np

from nanorec.converters.pbstream.generate import Plan, iter_payloads
from nanorec.converters.pbstream.records import (
    LEGACY_KINDS,
    NODE,
    UNKNOWN,
    V2_KINDS,
    describe_prefix,
)
from nanorec.converters.pbstream.vector import PAD, describe_run, kind_codes


def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _field(number: int, wire: int, body: bytes) -> bytes:
    if wire == 2:
        return _varint(number << 3 | 2) + _varint(len(body)) + body
    return _varint(number << 3 | wire) + body


def _payloads(seed: int, count: int) -> list[bytes]:
    """Record-shaped payloads, many slightly wrong: odd ids, times, lengths, keys."""
    rng = random.Random(seed)
    found = []
    for _ in range(count):
        kind = rng.choice([1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 16])
        trajectory = rng.choice([0, 1, 5, -1, 2**31, 2**40, -(2**40), 300])
        index = rng.choice([0, 1, 200, -3, 2**33])
        now = 637_000_000_000_000_000 + rng.randrange(10**12)
        ticks = rng.choice([0, 1, 127, 128, -5, 2**63 - 1, 2**64 - 1, now])
        tail = bytes(rng.randrange(256) for _ in range(rng.randrange(60)))
        time = rng.choice(
            [_field(1, 0, _varint(ticks))] * 8 + [b"", _field(1, 2, b"x"), _field(2, 0, b"\x01")]
        )
        parts = []
        if kind in (2, 4):
            ids = b"".join(
                _field(k, 0, _varint(trajectory if k == 1 else index))
                for k in rng.choice([[], [1], [2], [1, 2], [2, 1], [1, 1], [1, 2, 2], [3]])
            )
            if rng.random() < 0.9:
                parts.append(_field(1, 2, ids))
            if rng.random() < 0.1:
                parts.append(_field(3, 0, b"\x05"))
            if rng.random() < 0.95:
                parts.append(_field(5, 2, time + tail))
        else:
            if rng.random() < 0.6:
                parts.append(_field(1, 0, _varint(trajectory)))
            if rng.random() < 0.05:
                parts.append(_field(1, 0, _varint(trajectory + 1)))
            if rng.random() < 0.95:
                parts.append(_field(2, 2, time + tail))
        payload = _field(kind, 2, b"".join(parts))
        chance = rng.random()
        if chance < 0.05:
            payload = payload[:-1]
        elif chance < 0.08:
            payload += b"\x00"
        elif chance < 0.1:
            payload = payload[:1] + b"\xff\xff\xff\xff\x0f" + payload[2:]
        elif chance < 0.2:
            edited = bytearray(payload)
            edited[rng.randrange(len(edited))] = rng.randrange(256)
            payload = bytes(edited)
        if rng.random() < 0.02:
            payload = b""
        found.append(payload)
    return found


def _check(payloads: list[bytes], kinds: dict[int, str]) -> int:
    sizes = np.fromiter(map(len, payloads), dtype=np.int64, count=len(payloads))
    ok, keys, nodes, trajectory, index, ticks = describe_run(
        b"".join([*payloads, PAD]), sizes, kind_codes(kinds)
    )
    for row in np.flatnonzero(ok).tolist():
        info = describe_prefix(payloads[row], len(payloads[row]), kinds)
        assert info is not None and info.kind != UNKNOWN and info.problem is None, row
        assert info.kind == kinds[int(keys[row]) >> 3]
        assert (info.kind == NODE) == bool(nodes[row])
        assert info.trajectory_id == int(trajectory[row])
        assert info.ticks == int(ticks[row])
        if info.kind == NODE:
            assert info.index == int(index[row])
        else:
            assert info.index is None
    return int(ok.sum())


def test_fuzzed_rows_read_as_describe_prefix() -> None:
    for seed in range(4):
        payloads = _payloads(seed, 3000)
        assert _check(payloads, V2_KINDS) > 500
        _check(payloads, LEGACY_KINDS)


def test_generated_streams_read_whole() -> None:
    for layout, kinds in (("2", V2_KINDS), ("legacy", LEGACY_KINDS)):
        payloads = list(iter_payloads(Plan(trajectories=3, nodes=120), layout))[2:]
        read = _check(payloads, kinds)
        assert read >= len(payloads) // 2
