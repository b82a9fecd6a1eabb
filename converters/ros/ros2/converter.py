"""The ROS 2 bag converter, registered under the entry-point group `nanorec.converters`.

A thin adapter from the contract to `convert.py`, `export.py`, `cut.py` and
`Ros2Recording`; imports are deferred so listing formats costs nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from nanorec.contract import ConvertReport, ConvertRequest, ExportReport, ExportRequest, NoOptions
from nanorec.errors import UsageError

from ..about import ROS2_TITLE
from ..common.foreign import ExportsFromAnyRecording

if TYPE_CHECKING:
    import typer

    from nanorec.archive.reader import ArchiveReader

    from .recording import Ros2Recording


class Ros2Converter(ExportsFromAnyRecording):
    """ROS 2 bags: a bag folder or one storage file; sqlite3 and MCAP storage; rosbag2's
    zstd compression per file or per message; crashed bags."""

    name = "ros2"
    title = ROS2_TITLE
    suffixes = (".db3", ".mcap", ".db3.zstd", ".mcap.zstd")
    export_formats: ClassVar[Mapping[str, str]] = {
        "indexed": "a new bag with a correct metadata.yaml (the repair of a crashed bag)"
    }

    #: `nanorec export --storage`: what a new bag is stored in.
    storages = ("sqlite3", "mcap")
    bridge_module = "to_ros2"
    convert_options: ClassVar[type[NoOptions]] = NoOptions
    export_options: ClassVar[type[NoOptions]] = NoOptions
    #: `nanorec export --format ros2` from a recording of any format.
    foreign_formats: ClassVar[Mapping[str, str]] = {
        "ros2": "a ROS 2 bag (a folder, or one .db3/.mcap) of a ROS1 bag, a CARLA "
        "recording or a pbstream"
    }

    def sniff(self, head: bytes) -> bool:
        from .bag import sniff_file  # with metadata and storage: ~20 ms, not at load

        return sniff_file(head)

    def sniff_directory(self, path: Path) -> bool:
        from .bag import is_bag_folder

        return is_bag_folder(path)

    def convert(
        self, source: Path, output: Path, request: ConvertRequest = ConvertRequest()
    ) -> ConvertReport:
        from .convert import convert

        progress = request.progress_in_bytes(source)
        return convert(source, output, overwrite=request.overwrite, progress=progress)

    def export(
        self, reader: ArchiveReader, output: Path, request: ExportRequest = ExportRequest()
    ) -> ExportReport:
        """The exact bag without a selection (a new bag when the output's storage or shape
        differs, `export.py`); else (or with form "indexed", the repair of a crashed bag) a
        new bag of the selected messages. `request.storage`: sqlite3 or mcap (default: the
        output's name's, else the source's; `writer.bag_target`)."""
        form, overwrite, storage = request.form, request.overwrite, request.storage
        if form not in ("native", "indexed"):
            raise UsageError(f"a ROS 2 bag exports as native or indexed, not {form!r}")
        if request.everything and form == "native":
            from .export import export_exact

            return export_exact(reader, output, overwrite=overwrite, storage=storage)
        from .cut import export_selection

        return export_selection(
            reader, output, selection=request.selection, overwrite=overwrite, storage=storage
        )

    def adopt(self, reader: ArchiveReader) -> dict[str, bytes] | None:
        """The ROS 2 members of an archive recovered from a killed conversion (`adopt.py`)."""
        from .adopt import rebuild_members

        return rebuild_members(reader)

    def open_archive(self, reader: ArchiveReader) -> Ros2Recording:
        from .recording import Ros2Recording

        return Ros2Recording(reader)

    def commands(self) -> typer.Typer | None:
        from .cli import app

        return app


CONVERTER = Ros2Converter()
