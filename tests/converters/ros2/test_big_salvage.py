"""Issue #34 item 1, the last gap: the chunk a crashed MCAP writer was killed in is salvaged
in windows (`mcap_salvage.WINDOW`), never inflated whole. The windowed salvage gives what
the whole one gave (checked with windows made tiny, against an unchanged window); the memory
bound itself on a cut 256 MiB chunk, in a subprocess (slow)."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from nanorec.converters.ros.ros2 import mcap_salvage
from nanorec.converters.ros.ros2.mcap_file import open_mcap
from tests.converters.ros2.big_mcap import write_big_chunk
from tests.converters.ros2.peak import peak_mb

pytest.importorskip("zstandard")
pytest.importorskip("lz4")


def _cut_in_chunk(source: Path, fraction: float) -> bytes:
    """`source`'s bytes cut at `fraction` of its one chunk's compressed records."""
    data = source.read_bytes()
    pos = 8
    while data[pos] != 6:  # the chunk record
        pos += 9 + struct.unpack_from("<Q", data, pos + 1)[0]
    length = struct.unpack_from("<Q", data, pos + 1)[0]
    return data[: pos + 9 + int(length * fraction)]


def _salvaged(data: bytes) -> tuple[list[tuple[int, int, bytes]], list[str]]:
    found = open_mcap(data)
    messages = [(m.topic, m.timestamp, bytes(m.data)) for m in found.messages()]
    return messages, [region.reason for region in found.damage.losses]


@pytest.mark.parametrize("compression", ["", "zstd", "lz4"])
@pytest.mark.parametrize("message", [100, 5000])  # smaller and larger than a tiny window
@pytest.mark.parametrize("fraction", [0.3, 0.97])
def test_a_cut_chunk_salvaged_in_windows_gives_what_the_whole_did(
    compression: str, message: int, fraction: float, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    source = tmp_path / "big.mcap"
    count = write_big_chunk(source, 1 << 20, message, compression)
    data = _cut_in_chunk(source, fraction)
    whole, whole_losses = _salvaged(data)
    assert 0 < len(whole) < count
    monkeypatch.setattr(mcap_salvage, "WINDOW", 1024)
    windowed, windowed_losses = _salvaged(data)
    assert windowed == whole
    assert windowed_losses == whole_losses
    assert f"{len(whole)} messages recovered" in windowed_losses[0]


def test_a_cut_chunk_ending_in_a_malformed_record_stops_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A message record too short for its head ends the salvage, in whichever window."""
    source = tmp_path / "big.mcap"
    write_big_chunk(source, 1 << 18, 100, "")
    data = bytearray(_cut_in_chunk(source, 0.8))
    records = data.index(b"\x05", data.index(b"/chatter") + 20)  # first message record
    struct.pack_into("<BQ", data, records + 131 * 40, 5, 10)  # the 41st: too short
    for window in (1 << 20, 1000):
        monkeypatch.setattr(mcap_salvage, "WINDOW", window)
        messages, _ = _salvaged(bytes(data))
        assert len(messages) == 40, window


@pytest.mark.slow
@pytest.mark.parametrize("compression", ["zstd", "lz4"])
def test_a_cut_256_mib_chunk_is_salvaged_in_bounded_memory(
    compression: str, tmp_path: Path
) -> None:
    """Before: the cut chunk's prefix was inflated whole, twice (~2x its size in RSS)."""
    source = tmp_path / "big.mcap"
    write_big_chunk(source, 256 << 20, 64 << 10, compression)
    cut = tmp_path / "cut.mcap"
    cut.write_bytes(_cut_in_chunk(source, 0.9))
    archive = tmp_path / "cut.nanover.zip"
    assert peak_mb("info", cut, damaged=True) < 250
    assert peak_mb("convert", cut, "-o", archive, damaged=True) < 250
    assert peak_mb("export", archive, "-o", tmp_path / "back.mcap") < 250
    assert (tmp_path / "back.mcap").read_bytes() == cut.read_bytes()
