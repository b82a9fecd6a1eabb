"""Every converter's own functions return the contract's reports (issue #35 item 3): what
`nanorec.converters.carla.convert.convert` gives a Python caller is what `nanorec convert
--json` prints, with nothing copied field by field in between."""

from __future__ import annotations

from pathlib import Path

from nanorec import registry
from nanorec.archive.reader import ArchiveReader
from nanorec.contract import ConvertReport, ConvertRequest, ExportReport, ExportRequest
from nanorec.selection import Selection
from tests.conftest import SAMPLES


def _same(module_report: ConvertReport, converter_report: ConvertReport) -> None:
    one, other = module_report.to_json(), converter_report.to_json()
    one.pop("output"), other.pop("output")
    assert one == other


def test_carla_functions_give_the_contracts_reports(tmp_path: Path) -> None:
    from nanorec.converters.carla.clip import export_clip
    from nanorec.converters.carla.convert import convert, export
    from nanorec.converters.carla.recording import CarlaRecording

    source = SAMPLES / "carla-0.9.15-crash-town05.log"
    report = convert(source, tmp_path / "a.zip")
    assert type(report) is ConvertReport and report.format == "carla"
    assert report.cut is not None and set(report.details) == {"family", "raw_packets"}
    by_converter = registry.get("carla").convert(source, tmp_path / "b.zip", ConvertRequest())
    _same(report, by_converter)
    back = export(tmp_path / "a.zip", tmp_path / "back.log")
    assert type(back) is ExportReport and back.identical and back.messages == report.messages
    with CarlaRecording.open(tmp_path / "a.zip") as rec:
        clip = export_clip(rec, tmp_path / "clip.log", start=1, stop=4)
    assert type(clip) is ExportReport and clip.messages == 3
    assert clip.details == {"start": 1, "stop": 4, "actors_spawned": clip.details["actors_spawned"]}


def test_pbstream_functions_give_the_contracts_reports(tmp_path: Path) -> None:
    from nanorec.converters.pbstream.convert import convert
    from nanorec.converters.pbstream.export import export_native

    source = SAMPLES / "pbstream-small.pbstream"
    report = convert(source, tmp_path / "a.zip")
    assert type(report) is ConvertReport and report.format == "pbstream"
    assert set(report.details) == {"format_version", "raw_members"}
    converter = registry.get("pbstream")
    _same(report, converter.convert(source, tmp_path / "b.zip", ConvertRequest()))
    with ArchiveReader(tmp_path / "a.zip") as reader:
        back = export_native(reader, tmp_path / "back.pbstream")
        assert type(back) is ExportReport and back.identical and back.messages == len(reader)
        cut = converter.export(
            reader, tmp_path / "cut.pbstream", ExportRequest(selection=Selection(first=0, stop=5))
        )
    assert type(cut) is ExportReport and "trajectories" in cut.details
