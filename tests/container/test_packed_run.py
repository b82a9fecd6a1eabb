"""`ArchiveWriter.write_packed_run` writes the same archive content as one `write_packed`
per message (both layouts), and checks its timestamps like it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgpack
import pytest

from nanorec.archive.reader import ArchiveReader
from nanorec.archive.writer import ArchiveWriter
from nanorec.errors import UsageError


def _messages() -> list[tuple[bytes, tuple[str, ...], int]]:
    out = []
    for number in range(300):
        kind = ("a", "b", "c")[number % 3]
        body: dict[str, Any] = {kind: {"member": bytes(number % 7000), "n": number}}
        if number % 50 == 0:  # a two-key map, and a large message (pieces, not one copy)
            body = {"x": bytes(5000), "y": number}
        out.append((msgpack.packb(body), tuple(body), 10 * number))
    return out


@pytest.mark.parametrize("compact", [False, True])
def test_run_reads_like_single_writes(tmp_path: Path, compact: bool) -> None:
    messages = _messages()
    one, run = tmp_path / "one.zip", tmp_path / "run.zip"
    with ArchiveWriter(one, compact=compact) as writer:
        for packed, types, stamp in messages:
            writer.write_packed(packed, types=types, timestamp_us=stamp)
    with ArchiveWriter(run, compact=compact) as writer:
        writer.write_packed_run(
            [m[0] for m in messages[:7]],
            types=[m[1] for m in messages[:7]],
            timestamps_us=[m[2] for m in messages[:7]],
        )
        rest = messages[7:]
        first = writer.write_packed_run(
            [m[0] for m in rest], types=[m[1] for m in rest], timestamps_us=[m[2] for m in rest]
        )
        assert first == 7
    with ArchiveReader(one) as a, ArchiveReader(run) as b:
        assert len(a) == len(b) == len(messages)
        assert (a.index.timestamp_us == b.index.timestamp_us).all()
        for number in range(len(a)):
            assert bytes(a.raw(number)) == bytes(b.raw(number))
            assert a.index.types(number) == b.index.types(number)


def test_run_refuses_decreasing_times(tmp_path: Path) -> None:
    with ArchiveWriter(tmp_path / "t.zip") as writer:
        writer.write_packed(msgpack.packb({"a": 1}), types=("a",), timestamp_us=5)
        with pytest.raises(UsageError):
            writer.write_packed_run([msgpack.packb({"a": 1})], types=[("a",)], timestamps_us=[4])
