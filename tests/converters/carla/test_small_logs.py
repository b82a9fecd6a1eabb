"""Small CARLA logs (0.1-2 MB, what a lab records by the thousand) are converted with the
archive writer's fast blocks (`convert._SMALL_BYTES`): one compressor in the converting
thread. Their archives stay byte for byte those of fresh compressors per block."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from nanorec import ArchiveReader, registry
from nanorec.archive import blockdeflate
from nanorec.contract import ConvertRequest
from nanorec.converters.carla import convert
from nanorec.converters.carla.converter import CarlaConvertOptions
from tests.conftest import SAMPLES, carla_realdata

_Batch = list[tuple[blockdeflate.Block, bool, bool, bool]]
_Done = list[tuple[blockdeflate.Pieces, int]]


@pytest.mark.parametrize("name", ["carla-0.9.16-town03.log", "carla-0.9.15-crash-town05.log"])
def test_a_small_log_keeps_its_bytes_with_fast_blocks(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    used: list[int] = []
    compress = blockdeflate.FastBlocks.compress

    def counted(self: blockdeflate.FastBlocks, batch: _Batch) -> _Done:
        used.append(len(batch))
        return compress(self, batch)

    monkeypatch.setattr(blockdeflate.FastBlocks, "compress", counted)
    converter = registry.get("carla")
    fast, fresh = tmp_path / "fast.nanover.zip", tmp_path / "fresh.nanover.zip"
    converter.convert(SAMPLES / name, fast)
    assert used  # the small log took the fast blocks
    monkeypatch.setattr(convert, "_SMALL_BYTES", 0)  # every log "large": fresh compressors
    used.clear()
    converter.convert(SAMPLES / name, fresh)
    assert not used
    assert fast.read_bytes() == fresh.read_bytes()
    with ArchiveReader(fast) as reader:
        assert reader.raw(len(reader) - 1)


@pytest.mark.parametrize("source", carla_realdata(), ids=lambda path: path.name)
def test_every_real_log_keeps_its_bytes_with_fast_blocks(
    source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    converter = registry.get("carla")
    fast, fresh = tmp_path / "fast.nanover.zip", tmp_path / "fresh.nanover.zip"
    converter.convert(source, fast)
    monkeypatch.setattr(convert, "_SMALL_BYTES", 0)
    converter.convert(source, fresh)
    assert fast.read_bytes() == fresh.read_bytes()


def test_the_frame_keys_are_made_once_an_engine() -> None:
    """`archive_meta`'s "keys" (numpy's `dtype.descr` for each fixed kind) is the same for
    every file of an engine: made once, and still the dtypes of `records.FIXED_DTYPES`."""
    from nanorec.converters.carla.ids import Engine
    from nanorec.converters.carla.meta import frame_keys
    from nanorec.converters.carla.records import FIXED_DTYPES

    for engine in Engine:
        keys = frame_keys(engine)
        assert frame_keys(engine) is keys
        for entry in keys.values():
            if "dtype" in entry:
                kind = next(k for k in FIXED_DTYPES[engine] if k.value == entry["kind"])
                assert entry["dtype"] == FIXED_DTYPES[engine][kind].descr


def test_a_small_log_is_walked_once(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Detection walks a small log whole; the conversion takes those packets instead of
    walking it again (`Detection.packets`, `iter_walk(first=...)`), unless the family is
    forced (no detection)."""
    from nanorec.converters.carla import walk

    calls: list[int] = []
    original = walk.walk

    def counted(*args: Any, **kwargs: Any) -> walk.Packets:
        calls.append(args[1])
        return original(*args, **kwargs)

    monkeypatch.setattr(walk, "walk", counted)  # the conversion's walks (iter_walk)
    source = SAMPLES / "carla-0.9.16-town03.log"
    converter = registry.get("carla")
    detected, forced = tmp_path / "detected.nanover.zip", tmp_path / "forced.nanover.zip"
    converter.convert(source, detected)
    assert calls == []
    request = ConvertRequest(options=CarlaConvertOptions(family="0.9.16"))
    converter.convert(source, forced, request)
    assert len(calls) == 1
    assert detected.read_bytes() == forced.read_bytes()


@pytest.mark.parametrize("name", ["carla-0.9.16-town03.log", "carla-0.9.15-crash-town05.log"])
def test_the_detection_packets_are_the_walk_s(name: str) -> None:
    from nanorec.converters.carla.detect import detect
    from nanorec.converters.carla.header import Header
    from nanorec.converters.carla.walk import iter_walk

    buf = (SAMPLES / name).read_bytes()
    start = Header.parse(buf).size
    detection = detect(buf, start)
    assert detection.packets is not None
    given = list(iter_walk(buf, start, first=detection.packets))
    walked = list(iter_walk(buf, start))
    assert len(given) == len(walked) == 1
    for column in ("ids", "offsets", "sizes"):
        assert (getattr(given[0], column) == getattr(walked[0], column)).all()
    assert (given[0].end, given[0].truncation) == (walked[0].end, walked[0].truncation)
    assert detect(buf, start, max_bytes=1000).packets is None  # the scan is not the file
