"""Reads check the CRC-32 each message carries: a flipped bit is an error naming the message,
never a wrong value (issue: one flipped bit gave x = -59173 cm instead of -14793 cm)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import nanorec
from nanorec.archive.layout import use_layout
from nanorec.archive.reader import ArchiveReader
from nanorec.cli import _register, app
from nanorec.converters.carla.convert import convert
from nanorec.errors import ChecksumError
from tests.conftest import SAMPLES, make_runner


def _flipped(tmp_path: Path, number: int) -> Path:
    archive = tmp_path / "a.nanover.zip"
    with use_layout("stored"):  # the bit is flipped at the message's stored offset
        convert(SAMPLES / "carla-0.9.16-town03.log", archive)
    with ArchiveReader(archive) as reader:
        start = reader._messages_start + int(reader.index.offset[number])
        middle = start + int(reader.index.length[number]) // 2
    damaged = tmp_path / "damaged.nanover.zip"
    shutil.copy(archive, damaged)
    with damaged.open("r+b") as handle:
        handle.seek(middle)
        byte = handle.read(1)
        handle.seek(middle)
        handle.write(bytes([byte[0] ^ 0x10]))
    return damaged


def test_a_flipped_bit_is_named_not_returned(tmp_path: Path) -> None:
    damaged = _flipped(tmp_path, 73)
    with nanorec.open(damaged) as rec:
        rec.frame(72)
        rec.frame(74)  # its neighbours read fine
        with pytest.raises(ChecksumError, match="message 73 fails its CRC-32"):
            rec.frame(73)
    with ArchiveReader(damaged, verify=False) as reader:  # the explicit opt-out
        reader[73]
    _register()
    result = make_runner().invoke(app, ["cat", str(damaged), "--type", "position"])
    assert result.exit_code == 2 and "message 73 fails its CRC-32" in result.stderr


def test_recover_drops_what_fails_its_checksum_never_reblesses_it(tmp_path: Path) -> None:
    from nanorec.maintain.recover import recover
    from nanorec.maintain.verify import verify

    damaged = _flipped(tmp_path, 73)
    with ArchiveReader(damaged, verify=False) as reader:
        count = len(reader)
        wanted = [reader.raw(n) for n in range(count) if n != 73]
    result = recover(damaged, tmp_path / "out.nanover.zip")
    assert result.failed_checksums == 1 and result.messages == count - 1
    assert verify(tmp_path / "out.nanover.zip").ok
    with ArchiveReader(tmp_path / "out.nanover.zip") as out:
        assert [out.raw(n) for n in range(len(out))] == wanted
