"""The ROS1 bag converter, registered under the entry-point group `nanorec.converters`.

A thin adapter from the contract to `convert.py`, `export.py`, `filter.py` and
`BagRecording`; imports are deferred so listing formats costs nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from nanorec.contract import ConvertReport, ConvertRequest, ExportReport, ExportRequest, NoOptions
from nanorec.errors import UsageError

from ..about import ROS1_TITLE
from ..common.foreign import ExportsFromAnyRecording
from .records import VERSION_LINE

if TYPE_CHECKING:
    import typer

    from nanorec.archive.reader import ArchiveReader

    from .recording import BagRecording


@dataclass(frozen=True)
class Ros1ExportOptions:
    """A new bag's chunk `compression`: none, bz2 or lz4 (an exact export keeps the bag's)."""

    compression: str = "none"


class BagConverter(ExportsFromAnyRecording):
    """ROS1 bags, format 2.0 (uncompressed, bz2 and lz4 chunks; crashed `.bag.active` too)."""

    name = "rosbag"
    title = ROS1_TITLE
    suffixes = (".bag", ".bag.active")
    bridge_module = "to_ros1"
    convert_options: ClassVar[type[NoOptions]] = NoOptions
    export_options: ClassVar[type[Ros1ExportOptions]] = Ros1ExportOptions
    #: `nanorec export --format` values beyond native/parquet/mcap.
    export_formats: ClassVar[Mapping[str, str]] = {
        "indexed": "a new indexed bag (the repair of a crashed bag)"
    }

    #: `nanorec export --format ros1` from a recording of any format.
    foreign_formats: ClassVar[Mapping[str, str]] = {
        "ros1": "a ROS1 bag of a ROS 2 bag, a CARLA recording or a pbstream"
    }

    def sniff(self, head: bytes) -> bool:
        return head.startswith(b"#ROSBAG V") and len(head) >= len(VERSION_LINE)

    def convert(
        self, source: Path, output: Path, request: ConvertRequest = ConvertRequest()
    ) -> ConvertReport:
        from .convert import convert

        progress = request.progress_in_bytes(source)
        return convert(source, output, overwrite=request.overwrite, progress=progress)

    def export(
        self, reader: ArchiveReader, output: Path, request: ExportRequest = ExportRequest()
    ) -> ExportReport:
        """The exact bag without a selection; else (or with form "indexed", the repair of a
        crashed bag) a new indexed bag of the selected messages (`Ros1ExportOptions`)."""
        form = request.form
        if form not in ("native", "indexed"):
            raise UsageError(f"a bag exports as native or indexed, not {form!r}")
        if request.everything and form == "native":
            from .export import export_exact

            return export_exact(reader, output, overwrite=request.overwrite)
        from .filter import export_selection

        return export_selection(
            reader,
            output,
            selection=request.selection,
            overwrite=request.overwrite,
            compression=request.options_as(Ros1ExportOptions).compression,
        )

    def open_archive(self, reader: ArchiveReader) -> BagRecording:
        from .recording import BagRecording

        return BagRecording(reader)

    def adopt(self, reader: ArchiveReader) -> dict[str, bytes] | None:
        """The bag members of an archive recovered from a killed conversion."""
        from .adopt import rebuild_members

        return rebuild_members(reader)

    def commands(self) -> typer.Typer | None:
        from .cli import app

        return app


CONVERTER = BagConverter()
