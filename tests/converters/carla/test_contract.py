"""CARLA passes the converter contract on every bundled sample."""

from __future__ import annotations

from pathlib import Path

import pytest

from nanorec.converters.carla.header import Header
from nanorec.converters.carla.walk import walk
from tests.conftest import SAMPLES
from tests.converters.contract import ConverterContract


class TestCarlaContract(ConverterContract):
    name = "carla"

    def fuzz_boundaries(self, data: bytes) -> list[int]:
        start = Header.parse(data).size
        return [start, *walk(data, start).offsets.tolist()]

    @pytest.fixture
    def samples(self) -> list[Path]:
        return sorted(SAMPLES.glob("carla-*.log"))


@pytest.mark.parametrize(
    ("case", "verb"),
    [(548, ["info", "--json"]), (865, ["play", "--immediate"])],
)
def test_what_the_stress_fuzz_found(
    case: int, verb: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """NANOREC_STRESS=1 cases that once failed: a collision packet with no body made
    `info --json` raise struct.error; a map name that is not UTF-8 in a flipped frame made
    `play` raise UnicodeEncodeError (JSON keys too must be valid text)."""
    import zlib

    from nanorec.cli import _register, app
    from tests.conftest import make_runner
    from tests.converters import fuzz

    monkeypatch.setattr(fuzz, "CASES", 1000)
    sample = SAMPLES / "carla-0.9.15-crash-town05.log"
    data = sample.read_bytes()
    contract = TestCarlaContract()
    seed = zlib.crc32(f"carla/{sample.name}".encode())
    mutants = fuzz.mutants(data, contract.fuzz_boundaries(data), seed)
    _, content = next(m for n, m in enumerate(mutants) if n == case)
    source = tmp_path / "case.log"
    source.write_bytes(content)
    _register()
    result = make_runner().invoke(app, [verb[0], str(source), *verb[1:]])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert result.exit_code in (0, 1)
