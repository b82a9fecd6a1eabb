"""The Cartographer `.pbstream` converter, registered under `nanorec.converters`.

A thin adapter from the contract (`nanorec.contract.Converter`) to `convert`, `export`,
`subset` and `PbstreamRecording`; imports are deferred so listing formats costs nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from nanorec.contract import ConvertReport, ConvertRequest, ExportReport, ExportRequest, NoOptions
from nanorec.errors import UsageError

from .about import NAME, TITLE
from .export_options import PbstreamExportOptions
from .stream import MAGIC

if TYPE_CHECKING:
    import typer

    from nanorec.archive.reader import ArchiveReader

    from .recording import PbstreamRecording


class PbstreamConverter:
    """Cartographer saved states (`.pbstream`): format versions 2 and 1, and legacy streams."""

    name = NAME
    title = TITLE
    suffixes = (".pbstream",)
    convert_options: ClassVar[type[NoOptions]] = NoOptions
    export_options: ClassVar[type[PbstreamExportOptions]] = PbstreamExportOptions
    #: `nanorec export --format` values beyond native/parquet/mcap.
    export_formats: ClassVar[Mapping[str, str]] = {
        "ros-map": "the 2D occupancy grid as map_saver writes it (PGM + YAML)"
    }

    def sniff(self, head: bytes) -> bool:
        return head[:8] == MAGIC

    def convert(
        self, source: Path, output: Path, request: ConvertRequest = ConvertRequest()
    ) -> ConvertReport:
        from .convert import convert

        progress = request.progress_in_bytes(source)
        return convert(source, output, overwrite=request.overwrite, progress=progress)

    def export(
        self, reader: ArchiveReader, output: Path, request: ExportRequest = ExportRequest()
    ) -> ExportReport:
        """The exact file without a selection or options; a valid stream of a subset with
        them (`PbstreamExportOptions`); form "ros-map" writes the 2D occupancy grid."""
        options = request.options_as(PbstreamExportOptions)
        to, overwrite, selection = request.form, request.overwrite, request.selection
        if to == "ros-map":
            from .rosmap import export_ros_map

            recording = self.open_archive(reader)
            written = export_ros_map(
                recording, output, resolution=options.resolution, overwrite=overwrite
            )
            return ExportReport(
                written.pgm, written.size, written.sha256, written.submaps, None, written.details
            )
        if to != "native":
            raise UsageError(f"pbstream exports native, ros-map, parquet or mcap, not {to!r}")
        if request.everything and options == PbstreamExportOptions():
            from .export import export_native

            return export_native(reader, output, overwrite=overwrite)
        from .subset import export_subset

        return export_subset(
            self.open_archive(reader),
            output,
            selection=selection,
            trajectories=options.trajectories,
            nodes=options.nodes,
            overwrite=overwrite,
        )

    def open_archive(self, reader: ArchiveReader) -> PbstreamRecording:
        from .recording import PbstreamRecording

        return PbstreamRecording(reader)

    def adopt(self, reader: ArchiveReader) -> dict[str, bytes] | None:
        """The side member of a recovered archive whose messages are pbstream records."""
        from .adopt import rebuild_members

        return rebuild_members(reader)

    def commands(self) -> typer.Typer | None:
        from .cli import app

        return app


CONVERTER = PbstreamConverter()
