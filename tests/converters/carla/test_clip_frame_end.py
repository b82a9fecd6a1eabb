"""A clip ending on a frame that had no FrameEnd (damaged source) still holds every frame."""

from __future__ import annotations

from pathlib import Path

import nanorec
from nanorec.contract import ExportRequest
from nanorec.converters.carla.walk import iter_walk
from tests.conftest import SAMPLES


def test_a_clip_ending_on_a_frame_without_frame_end(tmp_path: Path) -> None:
    source = SAMPLES / "carla-0.9.16-town03.log"
    data = source.read_bytes()
    with nanorec.open(source) as rec:
        header = rec.header.size
    ends = [
        offset
        for packets in iter_walk(data, header)
        for pid, offset in zip(packets.ids.tolist(), packets.offsets.tolist(), strict=True)
        if pid == 1
    ]
    cut = ends[100]  # frame 100's FrameEnd: gone
    damaged = tmp_path / "no-end.log"
    damaged.write_bytes(data[:cut] + data[cut + 5 :])
    with nanorec.open(damaged) as rec:
        assert len(rec) == 300
        clip = tmp_path / "clip.log"
        rec_converter = nanorec.registry.get("carla")
        selection = nanorec.Selection.make(messages="90:101")
        rec_converter.export(rec.reader, clip, ExportRequest(selection))
    with nanorec.open(clip) as again:
        assert len(again) == 11
