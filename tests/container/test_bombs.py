"""Zip bombs: nothing inflates without a bound, and sizes nothing justifies are refused."""

from __future__ import annotations

import resource
import zipfile
import zlib
from pathlib import Path

import msgpack
import pytest

import nanorec
from nanorec.archive.reader import ArchiveReader
from nanorec.cli import _register, app
from nanorec.converters.carla.convert import WORLD_MEMBER, convert
from nanorec.errors import NanorecError
from tests.conftest import SAMPLES, make_runner

BOMB = 512 << 20  # inflated size of the bombs, bytes


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


@pytest.mark.slow
def test_a_deflated_member_that_claims_too_much_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "bomb.nanover.zip"
    index = msgpack.packb([{"offset": 0, "length": 1, "metadata": {"types": [], "timestamp": 0}}])
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        with archive.open("messages.msgpack", "w", force_zip64=True) as member:
            block = bytes(1 << 20)
            for _ in range(BOMB >> 20):
                member.write(block)
        archive.writestr("index.msgpack", index)
    assert path.stat().st_size < 2_000_000
    before = _rss_mb()
    with ArchiveReader(path) as reader, pytest.raises(NanorecError, match="zip bomb"):
        reader.read(0)
    _register()
    for verb in ("verify", "cat", "play", "info"):
        result = make_runner().invoke(app, [verb, str(path)])
        assert isinstance(result.exception, SystemExit | None), (verb, result.exception)
        assert result.exit_code in ((0,) if verb == "info" else (1, 2)), (verb, result.stdout)
    assert _rss_mb() - before < 200


@pytest.mark.slow
def test_a_bomb_in_a_format_member_is_refused(tmp_path: Path) -> None:
    good = tmp_path / "good.nanover.zip"
    convert(SAMPLES / "carla-0.9.16-town03.log", good)
    bad = tmp_path / "bad.nanover.zip"
    deflater = zlib.compressobj(9)
    payload = b"".join(deflater.compress(bytes(1 << 20)) for _ in range(BOMB >> 20))
    payload += deflater.flush()
    with zipfile.ZipFile(good) as source, zipfile.ZipFile(bad, "w") as target:
        for info in source.infolist():
            data = payload if info.filename == WORLD_MEMBER else source.read(info)
            target.writestr(info.filename, data)
    before = _rss_mb()
    with pytest.raises(NanorecError, match="inflates past"):
        nanorec.open(bad)
    assert _rss_mb() - before < 200
