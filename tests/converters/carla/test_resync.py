"""A damaged size field mid-file: conversion goes on at the next frame, keeps the damaged
bytes verbatim (export is still byte for byte), says "damaged at byte N" and exits 1; a
recording cut at its end is still just cut (exit 0)."""

from __future__ import annotations

import struct
import warnings
from pathlib import Path

import pytest

import nanorec
from nanorec.cli import _register, app
from nanorec.converters.carla.walk import iter_walk
from tests.conftest import SAMPLES, carla_realdata, make_runner


def _size_field_offsets(data: bytes, header_size: int) -> list[int]:
    offsets: list[int] = []
    for packets in iter_walk(data, header_size):
        offsets += (packets.offsets + 1).tolist()  # the u32 after each packet's id byte
    return offsets


@pytest.mark.parametrize(
    "path", [SAMPLES / "carla-0.9.16-town03.log", *carla_realdata()], ids=lambda p: p.name
)
def test_one_broken_size_field_loses_one_frame_not_the_rest(path: Path, tmp_path: Path) -> None:
    data = path.read_bytes()
    with nanorec.open(path) as rec:
        frames = len(rec)
        header = rec.header.size
    sizes = _size_field_offsets(data, header)
    at = sizes[len(sizes) // 2]  # a packet in the middle of the file
    broken = bytearray(data)
    struct.pack_into("<I", broken, at, 0x7FFFFF00)  # points far past the end
    source = tmp_path / "broken.log"
    source.write_bytes(bytes(broken))
    _register()
    runner = make_runner()
    archive = tmp_path / "broken.nanover.zip"
    result = runner.invoke(app, ["convert", str(source), "-o", str(archive)])
    assert result.exit_code == 1 and "DAMAGED" in result.stdout, result.stdout
    kept = int(result.stdout.split("carla: ")[1].split(" messages")[0])
    assert kept >= frames - 2, (kept, frames)  # the damaged frame, not the rest of the file
    back = tmp_path / "back.log"
    assert runner.invoke(app, ["export", str(archive), "-o", str(back)]).exit_code == 0
    assert back.read_bytes() == bytes(broken)
    with pytest.warns(UserWarning, match="damaged"):
        nanorec.open(source).close()


def test_a_cut_file_is_not_called_damaged(tmp_path: Path) -> None:
    data = (SAMPLES / "carla-0.9.16-town03.log").read_bytes()
    source = tmp_path / "cut.log"
    source.write_bytes(data[: len(data) * 2 // 3])
    _register()
    result = make_runner().invoke(app, ["convert", str(source), "-o", str(tmp_path / "a.zip")])
    assert result.exit_code == 0 and "DAMAGED" not in result.stdout and "cut short" in result.stdout
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        nanorec.open(source).close()
