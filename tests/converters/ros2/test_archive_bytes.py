"""The archives of our generator's bags, byte for byte as they were (sha256 pinned).

Why: the conversion is made faster again and again (batched walks, runs built with numpy,
MCAP chunks read from their index), each time promising the same archive; these hashes,
taken from the conversion before issue 33's item 1, hold it to that. The generator's bags
themselves are checked first (a changed generator is not a changed conversion). A hash
also depends on zlib's deflate (level 6 and 1 of the compact blocks): a platform linking
another zlib (zlib-ng) would fail every case at once, with the bag hashes still right.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from nanorec.archive.deflate import isal_deflate
from nanorec.contract import ConvertRequest
from nanorec.converters.ros.ros2.converter import CONVERTER
from nanorec.converters.ros.ros2.generate import generate

pytest.importorskip("mcap")  # the generator's MCAP writer
pytest.importorskip("zstandard")
if isal_deflate is not None:
    pytest.skip("NANOREC_DEFLATE=isal: other archive bytes", allow_module_level=True)

#: (storage, seconds, image side, humble) -> (the bag's files' sha256, first 12 hex; the
#: archive's sha256)
CASES = {
    ("sqlite3", 30, 0, False): (
        "c1344252998e",
        "727ca60f8e6ac1dc086c3ea7cdebdbda4198525877acd4dd9a03dcde06a838ef",
    ),
    ("sqlite3", 30, 0, True): (
        "32000316586f",
        "9ef9bed07b45ad47253079596e06c07acdffc156211d05a8df1265ca2074b68c",
    ),
    ("mcap", 30, 0, False): (
        "2b312445bda9",
        "e31c01a8c6817688116d7ba39ac1d83899b8e89d98a4d688143a745daa3607a0",
    ),
    ("sqlite3", 3, 64, False): (
        "2788805ca301",
        "ac650c2e004bc52cd8515dc63b985aa61ca9d1cc8fb6e25b45f8ce9f17175bee",
    ),
    ("mcap", 3, 64, False): (
        "7ce0a25d5ffe",
        "2cef12d436e252c510fb4abc8d89bfc828f0d5b8b616d456d93da50ed5d4f84b",
    ),
}
#: ~7 MB bags of small messages: runs cut at 4 MiB, blocks, many MCAP chunks
SLOW_CASES = {
    ("sqlite3", 4000, 0, False): (
        "4d6771e502ee",
        "c8bf482b7e5d090fcbc979e4729ce85918444c48c752d382b2d8ac01496ff67d",
    ),
    ("mcap", 4000, 0, False): (
        "96b30c7966d5",
        "491528ffdc67275f23fe32c9ca3a1664e7608573791c10a8307196bbf19071b4",
    ),
}


@pytest.fixture(autouse=True)
def _no_creation_time(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)  # it would be in the archive


def _check(tmp_path: Path, case: tuple[str, int, int, bool], hashes: tuple[str, str]) -> None:
    storage, seconds, image, humble = case
    bag = tmp_path / "bag"
    generate(bag, seconds=seconds, storage=storage, image=image, humble=humble)
    files = b"".join(p.read_bytes() for p in sorted(bag.iterdir()))
    assert hashlib.sha256(files).hexdigest()[:12] == hashes[0], "the generator changed"
    out = tmp_path / "bag.nanover.zip"
    CONVERTER.convert(bag, out, ConvertRequest())
    assert hashlib.sha256(out.read_bytes()).hexdigest() == hashes[1]


@pytest.mark.parametrize("case", list(CASES), ids=lambda c: "-".join(map(str, c)))
def test_archive_is_as_it_was(tmp_path: Path, case: tuple[str, int, int, bool]) -> None:
    _check(tmp_path, case, CASES[case])


@pytest.mark.slow
@pytest.mark.parametrize("case", list(SLOW_CASES), ids=lambda c: "-".join(map(str, c)))
def test_bigger_archive_is_as_it_was(tmp_path: Path, case: tuple[str, int, int, bool]) -> None:
    _check(tmp_path, case, SLOW_CASES[case])
