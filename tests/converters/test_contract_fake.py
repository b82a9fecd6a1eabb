"""The contract suite on a format nanorec never imports: found through its entry point."""

from __future__ import annotations

from pathlib import Path

import pytest

from nanorec import registry
from tests.converters.contract import ConverterContract
from tests.converters.fake_plugin import sample


class TestFakeContract(ConverterContract):
    name = "fake"
    viewable = False  # a plug-in that draws nothing is still a format

    def fuzz_boundaries(self, data: bytes) -> list[int]:
        return [i + 1 for i, byte in enumerate(data) if byte == 0x0A]

    @pytest.fixture
    def samples(self, tmp_path: Path) -> list[Path]:
        return [
            sample(tmp_path / "a.fakelog"),
            sample(tmp_path / "crashed.fakelog", 30, tail=b"3000000 a half a li"),
        ]


def test_found_through_the_entry_point_only() -> None:
    import sys

    converter = registry.get("fake")
    assert type(converter).__module__ == "tests.converters.fake_plugin"
    assert "nanorec.converters.fake" not in sys.modules  # not one of ours
    assert set(registry.converters()) >= {"carla", "fake"}


def test_an_unknown_format_name_lists_the_known(tmp_path: Path) -> None:
    from nanorec.errors import UnsupportedError

    with pytest.raises(UnsupportedError, match=r"known: .*carla.*fake"):
        registry.get("nope")
