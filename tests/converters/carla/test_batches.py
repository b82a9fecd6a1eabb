"""The walk's batch size (`frames._Batches`) changes how frames are grouped, never what the
archive says: larger batches after ones that came nearly all in runs, small ones otherwise."""

from __future__ import annotations

from pathlib import Path

import pytest

from nanorec.converters.carla import frames
from nanorec.converters.carla.convert import convert
from nanorec.converters.carla.generate import generate_to
from nanorec.layout import STORED, use_layout


def test_batch_size_follows_the_decoded_share() -> None:
    batches = frames._Batches()
    assert batches.size() == frames._Batches.BATCH_BYTES
    batches.decoded(60, 8000)  # nearly all in runs
    assert batches.size() == frames._Batches.RUN_BATCH_BYTES
    batches.decoded(4000, 8000)  # frames that differ: decoded, so back to small batches
    assert batches.size() == frames._Batches.BATCH_BYTES


def _messages(path: Path, out: Path) -> bytes:
    with use_layout(STORED):
        convert(path, out, overwrite=True)
    return out.read_bytes()


@pytest.mark.parametrize("vehicles", [40, 3])
def test_stored_archive_does_not_depend_on_the_batches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, vehicles: int
) -> None:
    """Stored archives (no blocks whose ends follow the writer's flushes) are byte for byte
    the same whatever the batch sizes, tiny ones (many runs cut) included."""
    source = tmp_path / "in.log"
    generate_to(source, "0.9.16", target_bytes=3_000_000, vehicles=vehicles, walkers=4)
    reference = _messages(source, tmp_path / "a.zip")
    seen: list[int] = []
    real = frames._Batches.decoded

    def record(self: frames._Batches, decoded: int, packets: int) -> None:
        real(self, decoded, packets)
        seen.append(self.size())

    monkeypatch.setattr(frames._Batches, "decoded", record)
    monkeypatch.setattr(frames._Batches, "BATCH_BYTES", 400_000)
    monkeypatch.setattr(frames._Batches, "RUN_BATCH_BYTES", 1_000_000)
    assert _messages(source, tmp_path / "b.zip") == reference
    assert 1_000_000 in seen  # the larger batches were used
    monkeypatch.setattr(frames._Batches, "RUN_SHARE", -1.0)  # never larger
    assert _messages(source, tmp_path / "c.zip") == reference
