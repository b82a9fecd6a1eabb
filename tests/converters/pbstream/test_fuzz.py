"""Valid gzip around damaged protobuf: flipped bytes inside payloads never give anything but
a `NanorecError` (or a result) from any reader of the recording, and the export stays exact."""

from __future__ import annotations

import contextlib
import random
import struct
from pathlib import Path

import pytest

from nanorec import registry
from nanorec.converters.pbstream.generate import Plan, iter_payloads
from nanorec.converters.pbstream.recording import PbstreamRecording
from nanorec.converters.pbstream.rosmap import assemble
from nanorec.converters.pbstream.stream import MAGIC, build_member
from nanorec.converters.pbstream.subset import export_subset
from nanorec.errors import NanorecError

PAYLOADS = list(iter_payloads(Plan(trajectories=2, nodes=6, nodes_per_submap=3, grid_cells=12)))


def _stream(payloads: list[bytes]) -> bytes:
    members = (build_member(p) for p in payloads)
    return MAGIC + b"".join(struct.pack("<Q", len(m)) + m for m in members)


def _everything(rec: PbstreamRecording, folder: Path) -> None:
    """Every reader of a recording, each allowed to fail only with a NanorecError."""
    steps = [
        rec.summary,
        rec.trajectories,
        rec.local_poses,
        lambda: [rec.decode(n) for n in range(len(rec))],
        lambda: [list(rec.rows(kind)) for kind in rec.table_kinds()],
        lambda: assemble(rec),
        lambda: export_subset(rec, folder / "subset.pbstream", trajectories=[1], overwrite=True),
    ]
    for step in steps:
        with contextlib.suppress(NanorecError):
            step()


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(int(__import__("os").environ.get("FUZZ", "40"))))
def test_flipped_payload_bytes(seed: int, tmp_path: Path) -> None:
    rng = random.Random(seed)
    payloads = list(PAYLOADS)
    for _ in range(rng.choice((1, 1, 2, 4))):
        number = rng.randrange(len(payloads))
        damaged = bytearray(payloads[number])
        if damaged:
            damaged[rng.randrange(len(damaged))] ^= 1 << rng.randrange(8)
        payloads[number] = bytes(damaged)
    source = tmp_path / "fuzz.pbstream"
    data = _stream(payloads)
    source.write_bytes(data)
    with registry.open(source) as rec:
        assert isinstance(rec, PbstreamRecording)
        _everything(rec, tmp_path)
        back = tmp_path / "back.pbstream"
        registry.get("pbstream").export(rec.reader, back)
    assert back.read_bytes() == data
