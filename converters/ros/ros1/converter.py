"""The ROS1 bag converter, registered under the entry-point group `nanorec.converters`.

A thin adapter from the contract to `convert.py`, `export.py`, `filter.py` and
`BagRecording`; imports are deferred so listing formats costs nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from nanorec.contract import ConvertReport, ExportReport, Progress
from nanorec.errors import UsageError

from ..about import ROS1_TITLE
from ..common.foreign import ExportsFromAnyRecording
from .records import VERSION_LINE

if TYPE_CHECKING:
    import typer

    from nanorec.archive.reader import ArchiveReader
    from nanorec.selection import Selection

    from .recording import BagRecording


class BagConverter(ExportsFromAnyRecording):
    """ROS1 bags, format 2.0 (uncompressed, bz2 and lz4 chunks; crashed `.bag.active` too)."""

    name = "rosbag"
    title = ROS1_TITLE
    suffixes = (".bag", ".bag.active")
    bridge_module = "to_ros1"
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
        self,
        source: Path,
        output: Path,
        *,
        overwrite: bool = False,
        progress: Progress | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> ConvertReport:
        from .convert import convert

        total = source.stat().st_size
        done = convert(
            source,
            output,
            overwrite=overwrite,
            progress=None if progress is None else (lambda n: progress(n, total)),
        )
        return ConvertReport(
            source=done.source,
            output=done.output,
            format=self.name,
            messages=done.messages,
            source_size=done.source_size,
            archive_size=done.archive_size,
            sha256=done.sha256,
            cut=done.cut,
            damaged=done.damaged,
            details={
                "chunks": done.chunks,
                "kept_chunks": done.kept_chunks,
                "unindexed": done.unindexed,
            },
        )

    def export(
        self,
        reader: ArchiveReader,
        output: Path,
        *,
        selection: Selection | None = None,
        overwrite: bool = False,
        progress: Progress | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> ExportReport:
        """The exact bag without a selection; else (or with `options={"format": "indexed"}`,
        the repair of a crashed bag) a new indexed bag of the selected messages. Option
        `compression`: none (default), bz2 or lz4 for the new bag's chunks."""
        opts = dict(options or {})
        form = opts.get("format") or "native"
        if form not in ("native", "indexed"):
            raise UsageError(f"a bag exports as native or indexed, not {form!r}")
        if (selection is None or selection.everything) and form == "native":
            from .export import export_exact

            return export_exact(reader, output, overwrite=overwrite)
        from .filter import export_selection

        return export_selection(
            reader,
            output,
            selection=selection,
            overwrite=overwrite,
            compression=str(opts.get("compression") or "none"),
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
