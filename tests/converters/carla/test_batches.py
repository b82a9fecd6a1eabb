"""The walk's batch size (`frames._Batches`) changes how frames are grouped, never what the
archive says: larger batches after ones that came nearly all in runs, small ones otherwise."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from nanorec.archive.layout import STORED, use_layout
from nanorec.converters.carla import frames
from nanorec.converters.carla.convert import convert
from nanorec.converters.carla.generate import generate_to


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


def test_last_frame_of_a_run_goes_the_fast_way(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run's last frame, once its successor proved it whole, is written from the run's
    template like the frames before it: the same bytes as the per-frame way, fewer frames
    written that way."""
    from nanorec.converters.carla import convert as convert_module

    source = tmp_path / "in.log"
    generate_to(source, "0.9.16", target_bytes=3_000_000, vehicles=40, walkers=4)
    real_fast = convert_module.fast_rows
    real_write = convert_module.write_frame

    def archive(out: Path, last: bool) -> tuple[bytes, int, int]:
        per_frame = [0]
        lasts = [0]

        def fast(*args: Any, **kwargs: Any) -> Any:
            if kwargs.get("last"):
                if not last:
                    return None
                lasts[0] += 1
            return real_fast(*args, **kwargs)

        def write(*args: Any, **kwargs: Any) -> Any:
            per_frame[0] += 1
            return real_write(*args, **kwargs)

        with monkeypatch.context() as patch:
            patch.setattr(convert_module, "fast_rows", fast)
            patch.setattr(convert_module, "write_frame", write)
            data = _messages(source, out)
        return data, per_frame[0], lasts[0]

    fast_way, fast_count, lasts = archive(tmp_path / "a.zip", last=True)
    slow_way, slow_count, _ = archive(tmp_path / "b.zip", last=False)
    assert fast_way == slow_way
    assert lasts > 0
    assert fast_count < slow_count
