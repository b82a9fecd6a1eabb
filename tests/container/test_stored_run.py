"""`ArchiveWriter.write_stored_run` (messages already holding their timestamp entry) writes
the same archive bytes as `write_packed_run` (both layouts), and checks timestamps like it."""

from __future__ import annotations

import random
import zipfile
from pathlib import Path
from typing import Any

import msgpack
import pytest

from nanorec.archive.reader import ArchiveReader
from nanorec.archive.wire import timestamp_entry
from nanorec.archive.writer import ArchiveWriter
from nanorec.errors import UsageError


def _messages() -> list[tuple[bytes, tuple[str, ...], int]]:
    out = []
    for number in range(300):
        kind = ("a", "b", "c")[number % 3]
        body: dict[str, Any] = {kind: {"member": bytes(number % 7000), "n": number}}
        if number % 50 == 0:  # a two-key map, and large messages (a block of their own)
            body = {"x": bytes(40000 + number), "y": number}
        stamp = 10 * number if number < 150 else 1_700_000_000_000_000 + number
        out.append((msgpack.packb(body), tuple(body), stamp))
    return out


def _stored(packed: bytes, types: tuple[str, ...], stamp: int) -> bytes:
    return bytes((0x80 | (len(types) + 1),)) + packed[1:] + timestamp_entry(stamp)


@pytest.mark.parametrize("compact", [False, True])
def test_stored_run_writes_the_same_bytes(tmp_path: Path, compact: bool) -> None:
    messages = _messages()
    packed, stored = tmp_path / "packed.zip", tmp_path / "stored.zip"
    with ArchiveWriter(packed, compact=compact) as writer:
        writer.write_packed_run(
            [m[0] for m in messages],
            types=[m[1] for m in messages],
            timestamps_us=[m[2] for m in messages],
        )
    with ArchiveWriter(stored, compact=compact) as writer:
        head, rest = messages[:7], messages[7:]
        for part in (head, rest):
            writer.write_stored_run(
                [_stored(*m) for m in part],
                types=[m[1] for m in part],
                timestamps_us=[m[2] for m in part],
            )
    assert packed.read_bytes() == stored.read_bytes()


def test_stored_run_refuses_decreasing_times(tmp_path: Path) -> None:
    with ArchiveWriter(tmp_path / "t.zip") as writer:
        writer.write_packed(msgpack.packb({"a": 1}), types=("a",), timestamp_us=5)
        with pytest.raises(UsageError):
            writer.write_stored_run(
                [_stored(msgpack.packb({"a": 1}), ("a",), 4)], types=[("a",)], timestamps_us=[4]
            )


def _pieces(message: bytes, cuts: int) -> tuple[bytes | memoryview, ...]:
    """`message` cut into pieces of uneven sizes (stored deflate blocks span them)."""
    view = memoryview(message)
    ends = sorted({len(message) * k // (cuts + 1) + k for k in range(1, cuts + 1)})
    ends = [end for end in ends if end < len(message)]
    return tuple(view[a:b] for a, b in zip([0, *ends], [*ends, len(message)], strict=True))


@pytest.mark.parametrize("compact", [False, True])
def test_lent_run_reads_as_the_stored_run(tmp_path: Path, compact: bool) -> None:
    """Messages lent as pieces (large ones neither joined nor copied) read back as the same
    messages with the same CRCs; an incompressible large one is stored across its pieces."""
    messages = _messages()
    noise = random.Random(1).randbytes(200_000)  # does not deflate: stored deflate blocks
    messages.append((msgpack.packb({"z": noise}), ("z",), 1_800_000_000_000_000))
    stored, lent = tmp_path / "stored.zip", tmp_path / "lent.zip"
    with ArchiveWriter(stored, compact=compact) as writer:
        writer.write_stored_run(
            [_stored(*m) for m in messages],
            types=[m[1] for m in messages],
            timestamps_us=[m[2] for m in messages],
        )
    with ArchiveWriter(lent, compact=compact) as writer:
        writer.write_lent_run(
            [
                _pieces(_stored(*m), 3 if m[1] == ("z",) else number % 5)
                for number, m in enumerate(messages)
            ],
            types=[m[1] for m in messages],
            timestamps_us=[m[2] for m in messages],
        )
    with ArchiveReader(stored) as want, ArchiveReader(lent) as got:
        assert len(got) == len(want) == len(messages)
        assert [bytes(got.raw(n)) for n in range(len(got))] == [
            bytes(want.raw(n)) for n in range(len(want))
        ]
        assert got.index.crc.tolist() == want.index.crc.tolist()
    with zipfile.ZipFile(lent) as archive:
        assert archive.testzip() is None  # every member's CRC-32, the deflate stream whole
