"""Issue #34 item 1: an honest big MCAP chunk is walked in bounded windows (`mcap_window`),
never inflated whole. The windowed walk is checked against the whole one (same archive for
an uncompressed chunk, same messages and a byte-for-byte export for a compressed one, the
same damage found), on small chunks with the windows made small; the memory bound itself
on a 256 MiB chunk, in a subprocess (slow)."""

from __future__ import annotations

import hashlib
import struct
import zipfile
from pathlib import Path

import pytest

from nanorec import registry
from nanorec.contract import ConvertRequest, ExportRequest
from nanorec.converters.ros.ros2 import mcap_skeleton, mcap_window
from nanorec.converters.ros.ros2.mcap_file import open_mcap
from tests.conftest import REALDATA
from tests.converters.ros2.big_mcap import write_big_chunk
from tests.converters.ros2.peak import peak_mb

pytest.importorskip("zstandard")
pytest.importorskip("lz4")

REAL_MCAP = sorted((REALDATA / "ros2").glob("*/*.mcap"))


def _convert(source: Path, out: Path) -> Path:
    registry.for_native(source).convert(source, out, ConvertRequest(overwrite=True))
    return out


def _export(archive: Path, out: Path) -> bytes:
    from nanorec.archive.reader import ArchiveReader

    with ArchiveReader(archive) as reader:
        converter = registry.for_archive(reader)
        assert converter is not None
        converter.export(reader, out, ExportRequest(overwrite=True))
    return out.read_bytes()


def _windowed(monkeypatch: pytest.MonkeyPatch, window: int = 64 << 10) -> None:
    """Every chunk walked in windows of `window` bytes."""
    monkeypatch.setattr(mcap_window, "WHOLE_CHUNK", 0)
    monkeypatch.setattr(mcap_window, "WINDOW", window)


def _members(archive: Path) -> dict[str, str]:
    with zipfile.ZipFile(archive) as z:
        return {i.filename: hashlib.sha256(z.read(i)).hexdigest() for i in z.infolist()}


@pytest.mark.parametrize("message", [1000, 200_000])  # smaller and larger than a window
def test_uncompressed_chunk_in_windows_gives_the_same_archive(
    message: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = tmp_path / "big.mcap"
    write_big_chunk(source, 2 << 20, message, "")
    whole = _convert(source, tmp_path / "whole.zip").read_bytes()
    _windowed(monkeypatch)
    assert _convert(source, tmp_path / "windowed.zip").read_bytes() == whole
    assert _export(tmp_path / "windowed.zip", tmp_path / "back.mcap") == source.read_bytes()


@pytest.mark.parametrize("compression", ["zstd", "lz4"])
def test_compressed_chunk_in_windows_is_kept_and_exports_byte_for_byte(
    compression: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = tmp_path / "big.mcap"
    count = write_big_chunk(source, 2 << 20, 3000, compression)
    whole = _members(_convert(source, tmp_path / "whole.zip"))
    _windowed(monkeypatch)
    monkeypatch.setattr(mcap_skeleton, "_BIG_COPY", 4096)  # the kept chunk given as views
    windowed = _convert(source, tmp_path / "windowed.zip")
    for member in ("messages.msgpack", "index.msgpack", "ros2-time.bin"):
        assert _members(windowed)[member] == whole[member]
    assert _export(windowed, tmp_path / "back.mcap") == source.read_bytes()
    found = open_mcap(source.read_bytes())
    assert sum(1 for _ in found.batches()) > 1  # a batch a window
    assert (found.kept_chunks, found.chunks) == (1, 0)
    assert len(found.skeleton()) > source.stat().st_size  # the chunk whole in it
    assert count == sum(1 for _ in open_mcap(source.read_bytes()).messages())


def _damaged(data: bytes) -> list[str]:
    return [region.reason for region in open_mcap(data).damage.damaged]


def _chunk_at(data: bytes) -> int:
    pos = 8
    while data[pos] != 6:
        pos += 9 + struct.unpack_from("<Q", data, pos + 1)[0]
    return pos


@pytest.mark.parametrize("compression", ["", "zstd", "lz4"])
@pytest.mark.parametrize("damage", ["crc", "zeros", "short", "size"])
def test_windowed_walk_finds_the_damage_the_whole_walk_finds(
    compression: str, damage: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = tmp_path / "big.mcap"
    write_big_chunk(source, 1 << 20, 900, compression)
    data = bytearray(source.read_bytes())
    chunk = _chunk_at(bytes(data))
    content = chunk + 9
    if damage == "crc":
        data[content + 24] ^= 0xFF
    elif damage == "size":  # declares one byte more than its records
        size = struct.unpack_from("<Q", data, content + 16)[0]
        struct.pack_into("<Q", data, content + 16, size + 1)
    elif compression:
        pytest.skip("the records of a compressed chunk are changed only uncompressed")
    else:
        records = content + 28 + 4 + 8
        second = records + 931  # the second message record
        if damage == "zeros":  # records end in a run of zeros (no CRC to catch it)
            struct.pack_into("<I", data, content + 24, 0)
            data[second + 931 * 500 : second + 931 * 502] = bytes(931 * 2)
        else:  # a message record too short for its head
            struct.pack_into("<I", data, content + 24, 0)
            struct.pack_into("<BQ", data, second, 5, 10)
            struct.pack_into("<BQ", data, second + 19, 0x80, 931 - 19 - 9)
    whole = _damaged(bytes(data))
    assert whole, "the damage is seen by the whole walk"
    _windowed(monkeypatch, 4096)
    windowed = _damaged(bytes(data))
    assert len(windowed) == len(whole)
    assert windowed[0].split(":")[0] == whole[0].split(":")[0]


@pytest.mark.skipif(not REAL_MCAP, reason="../shared/realdata is not present")
def test_real_bags_join_the_same_with_big_copies_given_as_views(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`_BIG_COPY` made tiny: every COPY of every real MCAP bag goes the new way."""
    monkeypatch.setattr(mcap_skeleton, "_BIG_COPY", 16)
    for source in REAL_MCAP:
        archive = _convert(source, tmp_path / "a.zip")
        assert _export(archive, tmp_path / "back.mcap") == source.read_bytes(), source


@pytest.mark.slow
@pytest.mark.parametrize("compression", ["zstd", "lz4"])
def test_a_256_mib_chunk_is_read_in_bounded_memory(compression: str, tmp_path: Path) -> None:
    """Before: `info` and `convert` of a 256 MiB zstd chunk peaked at 939 MB RSS."""
    source = tmp_path / "big.mcap"
    write_big_chunk(source, 256 << 20, 64 << 10, compression)
    assert source.stat().st_size < 8 << 20  # small on disk: the messages repeat
    archive = tmp_path / "big.nanover.zip"
    assert peak_mb("info", source) < 250
    assert peak_mb("convert", source, "-o", archive) < 250
    assert peak_mb("export", archive, "-o", tmp_path / "back.mcap") < 250
    assert (tmp_path / "back.mcap").read_bytes() == source.read_bytes()
