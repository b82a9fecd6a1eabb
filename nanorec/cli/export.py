"""`nanorec export`: the native file back (byte for byte, or a valid cut), or the
recording as Parquet tables or MCAP."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from nanorec import registry
from nanorec.archive.atomic import file_sha256
from nanorec.cli.app import EXIT_PROBLEM, app, run
from nanorec.cli.inputs import (
    check_input,
    check_output,
    input_path,
    opened,
    opened_archive,
    progress_bar,
)
from nanorec.cli.options import (
    Duration,
    End,
    ExportFormat,
    Force,
    Kinds,
    Messages,
    Output,
    Start,
    Storage,
)
from nanorec.cli.surface import check_choice, verb_command
from nanorec.contract import (
    Converter,
    ExportReport,
    ExportRequest,
    export_forms,
    foreign_forms,
    storages,
)
from nanorec.errors import UsageError

if TYPE_CHECKING:  # numpy, the verbs' machinery: imported by the commands, not for --help
    from nanorec.archive.reader import ArchiveReader
    from nanorec.cli.hooks import VerbCall
    from nanorec.selection import Selection


@verb_command(app, "export")
def export(
    file: Annotated[
        str,
        typer.Argument(help="An archive (or a native file, converted first).", show_default=False),
    ],
    output: Output,
    force: Force = False,
    start: Start = None,
    end: End = None,
    duration: Duration = None,
    messages: Messages = None,
    kinds: Kinds = None,
    fmt: ExportFormat = "native",
    storage: Storage = None,
) -> None:
    """Write the native file back, byte for byte, or a valid cut of it; or the recording in
    another format (Parquet tables, MCAP, a ROS1 or ROS 2 bag).

    Without a range the whole recording is written and checked against the sha256 recorded
    at conversion (exit 1 if it differs). With --start/--end/--duration, --messages or
    --type, a valid native file holding just that (where the format allows such a cut).

    Example: nanorec export run.nanover.zip -o clip.log --start 10 --end 25
    """
    from nanorec.cli.dispatch import run_verb
    from nanorec.cli.hooks import SelectionOptions

    chosen = SelectionOptions(start, end, duration, messages, kinds)

    def action() -> int:
        check_output(output, input_path(file))
        return run_verb(
            "export",
            file,
            _export,
            selection=chosen,
            output=output,
            force=force,
            form=fmt,
            storage=storage,
        )

    raise typer.Exit(run(action))


def _export(call: VerbCall[object]) -> int:
    """export of a recording whose format adds nothing to it."""
    assert call.output is not None and call.selection is not None
    return export_file(
        call.source,
        call.output,
        call.selection,
        force=call.force,
        to=call.form or "native",
        storage=call.storage,
    )


def export_file(
    file: Path,
    output: Path,
    selection: Selection,
    *,
    force: bool,
    to: str = "native",
    storage: str | None = None,
    convert_options: Mapping[str, object] | None = None,
) -> int:
    """`nanorec export` (and a format's own export): print the report, return the status."""
    check_output(output, file)
    check_input(file)
    converters = registry.converters().values()
    every_form = {form for c in converters for form in (*export_forms(c), *foreign_forms(c))}
    check_choice("--format", to, (*COMMON_FORMS, *sorted(every_form)))
    writer = next((c for c in converters if to in foreign_forms(c)), None)
    source = _source_format(file)
    if storage is not None:
        _check_storage(storage, to, writer or registry.converters().get(source or ""))
    if to in ("parquet", "mcap") or (writer is not None and writer.name != source):
        return _export_other(to, file, output, selection, force, storage, writer)
    # its index a page at a time: a native export walks it once (10 M messages: ~0.5 GB whole)
    with opened_archive(file, options=convert_options, paged_index=True) as reader:
        converter = registry.for_archive(reader)
        if converter is None:
            check_choice("--format", to, COMMON_FORMS)
            report = write_archive_cut(reader, output, selection, overwrite=force)
            typer.echo(
                f"{report.output}: {report.size} bytes, {report.messages} messages (a new "
                "archive of them, not the original's bytes: a plain archive has no native file)"
            )
            return 0
        if to in foreign_forms(converter):
            to = "native"  # a ROS 2 bag "exported as ros2": itself
        check_choice("--format", to, (*COMMON_FORMS, *export_forms(converter)))
        if not selection.everything:
            selection.chosen(reader.index)  # one rule for an empty selection, every format
        wanted = ExportRequest(selection, force, form=to, storage=storage)
        report = export_native(converter, reader, output, wanted)
    verdict = (
        (
            f"a cut of {report.messages} messages"
            if not selection.everything
            else f"{report.messages} messages, written anew"
        )
        if report.identical is None
        else "identical to the source"
        if report.identical
        else "DIFFERS from the source"
    )
    typer.echo(f"{report.output}: {report.size} bytes, sha256 {report.sha256} ({verdict})")
    for note in report.details.get("notes", []):  # why it is not what was asked (a new bag)
        typer.echo(f"note: {note}")
    return EXIT_PROBLEM if report.identical is False else 0


def export_native(
    converter: Converter, reader: ArchiveReader, output: Path, request: ExportRequest
) -> ExportReport:
    """The one place the export verb calls a converter (its native file, a cut, its own
    forms)."""
    return converter.export(reader, output, request)


#: What `--format` of export takes for every format (a format may add its own: the
#: converter's optional `export_formats`, see `nanorec.contract.export_forms`).
COMMON_FORMS = ("native", "parquet", "mcap")


def export_choices(converter: object) -> tuple[str, ...]:
    """Every `--format` a recording of `converter`'s format exports to: the common ones, its
    own, and the formats other converters write from any recording (`foreign_forms`)."""
    foreign = {f for c in registry.converters().values() for f in foreign_forms(c)}
    return (*COMMON_FORMS, *export_forms(converter), *sorted(foreign))


def write_archive_cut(
    reader: ArchiveReader, output: Path, selection: Selection, *, overwrite: bool
) -> ExportReport:
    """The selected messages of a plain archive (NanoVer's own recordings: no native file
    behind them) as an archive of the same kind, their metadata kept."""
    from nanorec.archive.index import RESERVED_METADATA
    from nanorec.archive.writer import ArchiveWriter

    numbers = selection.chosen(reader.index).tolist()
    stamps = reader.index.timestamp_us
    with ArchiveWriter(output, overwrite=overwrite) as writer:
        for number in numbers:
            metadata = reader.metadata(number)
            extra = {k: v for k, v in metadata.items() if k not in RESERVED_METADATA}
            writer.write(reader.read(number), timestamp_us=int(stamps[number]), metadata=extra)
    return ExportReport(output, output.stat().st_size, file_sha256(output), len(numbers))


def _check_storage(storage: str, to: str, target: Converter | None) -> None:
    """`--storage` is one the output's format offers (`nanorec.contract.StorageChoice`)."""
    offered = () if to in ("parquet", "mcap") else storages(target)
    if not offered:
        raise UsageError(f"--storage: a {to} output has one storage, it takes no --storage")
    check_choice("--storage", storage, offered)


def _source_format(file: Path) -> str | None:
    """The format of `file`'s recording (its converter's name), None for a plain archive."""
    head = registry.read_head(file)
    if registry.is_archive(head):
        from nanorec.archive.reader import ArchiveReader

        with ArchiveReader(file, paged_index=True) as reader:  # its description: no index
            converter = registry.for_archive(reader)
            return None if converter is None else converter.name
    return registry.for_native(file, head).name


def _export_other(
    to: str,
    file: Path,
    output: Path,
    selection: Selection,
    force: bool,
    storage: str | None = None,
    writer: Converter | None = None,
) -> int:
    """Parquet tables, MCAP, or another format's native file (`writer`'s foreign export), from any
    recording (`nanorec.outputs.arrow`, `nanorec.outputs.mcap`, `nanorec.contract.ForeignWriter`).
    """
    with opened(file, show_conversion=True) as recording:
        if not selection.everything:  # --type names tables or topics here, not message kinds
            dataclasses.replace(selection, kinds=None).chosen(recording.reader.index)
        with progress_bar(f"exporting {to}", len(recording.reader)) as update:
            if writer is not None and to not in ("parquet", "mcap"):
                wanted = ExportRequest(selection, force, update, form=to, storage=storage)
                report = writer.export_from(recording, output, wanted)  # type: ignore[attr-defined]
                lines = [f"{report.output}: {report.size} bytes, {report.messages} messages"]
                lines += [f"left out: {why}" for why in report.details.get("left_out", [])]
                lines += [f"note: {note}" for note in report.details.get("notes", [])]
            elif to == "parquet":
                from nanorec.outputs.arrow import export_parquet, without_pandas

                with without_pandas():  # pyarrow's import of it: ~0.5 s, for nothing here
                    lines = export_parquet(
                        recording, output, selection=selection, overwrite=force, progress=update
                    )
            else:
                from nanorec.outputs.mcap import export_mcap

                lines = export_mcap(
                    recording, output, selection=selection, overwrite=force, progress=update
                )
    typer.echo("\n".join(lines))
    return 0
