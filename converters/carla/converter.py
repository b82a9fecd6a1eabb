"""The CARLA recorder converter, registered under the entry-point group `nanorec.converters`.

A thin adapter from the contract (`nanorec.contract.Converter`) to this package's
`convert`, `export`, `export_clip` and `CarlaRecording`. Imports are deferred so that
listing the registered formats costs nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from nanorec.contract import ConvertReport, ConvertRequest, ExportReport, ExportRequest, NoOptions
from nanorec.errors import UsageError

from .about import TITLE
from .ids import MAGIC

if TYPE_CHECKING:
    import typer

    from nanorec.archive.reader import ArchiveReader

    from .recording import CarlaRecording


@dataclass(frozen=True)
class CarlaConvertOptions:
    """`nanorec convert -O family=0.9.15`: read the file as this release family (a name of
    `ids.FAMILIES`) instead of detecting it."""

    family: str | None = None


class CarlaConverter:
    """CARLA's recorder files (`client.start_recorder()`), every release from 0.9.4."""

    name = "carla"
    title = TITLE
    suffixes = (".log", ".rec")
    convert_options: ClassVar[type[CarlaConvertOptions]] = CarlaConvertOptions
    export_options: ClassVar[type[NoOptions]] = NoOptions

    def sniff(self, head: bytes) -> bool:
        return head[4:18] == MAGIC

    def convert(
        self, source: Path, output: Path, request: ConvertRequest = ConvertRequest()
    ) -> ConvertReport:
        """Options: `CarlaConvertOptions`."""
        from .convert import convert

        return convert(
            source,
            output,
            family=request.options_as(CarlaConvertOptions).family,
            overwrite=request.overwrite,
            progress=request.progress_in_bytes(source),
        )

    def export(
        self, reader: ArchiveReader, output: Path, request: ExportRequest = ExportRequest()
    ) -> ExportReport:
        """The exact file without a selection; else a clip CARLA replays (frames only: a
        kind filter has no meaning for a CARLA file)."""
        overwrite, selection = request.overwrite, request.selection
        if selection is None or selection.everything:
            from .export import export

            return export(reader.path, output, overwrite=overwrite)
        if selection.kinds is not None:
            raise UsageError("a CARLA clip keeps whole frames: --type does not apply to export")
        from .clip import export_clip

        recording = self.open_archive(reader)
        numbers = selection.chosen(reader.index)  # the one rule for an empty selection
        lo, hi = int(numbers[0]), int(numbers[-1]) + 1
        return export_clip(recording, output, start=lo, stop=hi, overwrite=overwrite)

    def open_archive(self, reader: ArchiveReader) -> CarlaRecording:
        from .recording import CarlaRecording

        return CarlaRecording(reader)

    def adopt(self, reader: ArchiveReader) -> dict[str, bytes] | None:
        """Side members for a recovered archive whose messages are CARLA frames."""
        from .adopt import rebuild_members

        return rebuild_members(reader)

    def commands(self) -> typer.Typer | None:
        from . import cli_author, cli_metrics, cli_queries  # noqa: F401 - commands join the app
        from .cli import app

        return app


CONVERTER = CarlaConverter()
