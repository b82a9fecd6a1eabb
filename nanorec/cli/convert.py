"""`nanorec convert` (one file, or a batch) and `nanorec roundtrip`."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer

from nanorec import registry
from nanorec.archive.atomic import file_sha256
from nanorec.archive.layout import COMPACT, STORED, use_layout
from nanorec.archive.urls import is_url
from nanorec.cli.app import EXIT_BAD_INPUT, EXIT_PROBLEM, app, one_line, run
from nanorec.cli.inputs import (
    check_input,
    check_output,
    native_converter,
    output_path,
    progress_bar,
    staged_output,
)
from nanorec.cli.options import (
    Force,
    Json,
    KeepGoing,
    Stored,
)
from nanorec.contract import (
    Converter,
    ConvertReport,
    ConvertRequest,
    ExportRequest,
    convert_request,
)
from nanorec.errors import NanorecError, UsageError
from nanorec.untyped import JsonObject

FormatName = Annotated[
    str | None,
    typer.Option("--from", help="Read the input as this format instead of detecting it."),
]


ConvertOptions = Annotated[
    list[str] | None,
    typer.Option(
        "--option",
        "-O",
        help="A converter option KEY=VALUE (e.g. -O family=0.9.15 for CARLA); repeatable.",
        metavar="KEY=VALUE",
    ),
]


def _options(pairs: list[str] | None) -> dict[str, str]:
    options: dict[str, str] = {}
    for pair in pairs or ():
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise UsageError(f"--option takes KEY=VALUE, not {pair!r}")
        options[key] = value
    return options


def convert_report_lines(report: ConvertReport) -> list[str]:
    ratio = report.archive_size / max(report.source_size, 1)
    lines = [
        f"{report.source} -> {report.output}",
        f"  {report.format}: {report.messages} messages, {report.archive_size} bytes "
        f"({ratio:.3f}x the source), sha256 {report.sha256}",
    ]
    lines += [f"  {key}: {value}" for key, value in report.details.items()]
    if report.cut is not None:
        lines.append(f"  cut short: {report.cut} (kept verbatim)")
    lines += [f"  DAMAGED: {region} (kept verbatim)" for region in report.damaged]
    lines += [f"  warning: {warning}" for warning in report.warnings]
    return lines


@app.command()
def convert(
    sources: Annotated[
        list[Path],
        typer.Argument(help="Native recordings (.log, .bag, .pbstream...), or directories."),
    ],
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            help="Archive to write (default: SOURCE.nanover.zip; s3://BUCKET/KEY: uploaded); "
            "with several sources or a directory, the directory (or s3:// prefix) to write "
            "them into.",
            parser=output_path,
        ),
    ] = None,
    force: Force = False,
    keep_going: KeepGoing = False,
    fmt: FormatName = None,
    option: ConvertOptions = None,
    jobs: Annotated[
        int, typer.Option("--jobs", "-j", help="Convert this many files at once (batches).")
    ] = 1,
    stored: Stored = False,
) -> None:
    """Convert native recordings into indexed, seekable nanorec archives.

    A crashed (cut) recording converts every complete message and keeps the rest verbatim,
    so `nanorec export` gives the exact file back. Exit status 1 when an input was damaged
    inside or a warning was given (unless --keep-going), 2 when it cannot be read.
    Several sources or a directory convert as a batch: one bad file never stops it.
    Archives are compact (deflated, read a 16 KiB block at a time) unless --stored.

    Example: nanorec convert run.bag -o run.nanover.zip
    """
    from nanorec.cli.dispatch import given_by_field, given_extra, pinned_format

    fmt = fmt or pinned_format()
    into_prefix = is_url(output) and str(output).endswith("/")  # s3://bucket/runs/: a key in it
    if (
        len(sources) != 1
        or into_prefix
        or (sources[0].is_dir() and not registry.for_directory(sources[0]))
    ):
        from nanorec.cli.batch import batch_convert

        code = batch_convert(
            sources,
            output,
            jobs=jobs,
            force=force,
            keep_going=keep_going,
            fmt=fmt,
            options=run(lambda: {**given_by_field(), **_options(option)}),
            layout=STORED if stored else COMPACT,
        )
        raise typer.Exit(code)
    source = sources[0]

    def action() -> int:
        check_input(source)
        converter = native_converter(source, fmt)
        out = output or source.with_name(source.name + ".nanover.zip")
        check_output(out, source)
        extra = given_extra("convert", source, converter.name)
        options = {**_given_fields(extra), **_options(option)}
        with (
            staged_output(out, force) as written,
            use_layout(STORED if stored else COMPACT),
            progress_bar("converting", registry.input_size(source)) as update,
        ):
            wanted = convert_request(converter, options, overwrite=force, progress=update)
            report = convert_file(converter, source, written or out, wanted)
            typer.echo("\n".join(convert_report_lines(report)))
        return 0 if report.clean or keep_going else EXIT_PROBLEM

    raise typer.Exit(run(action))


def convert_file(
    converter: Converter, source: Path, output: Path, request: ConvertRequest
) -> ConvertReport:
    """The one place the convert verb calls a converter."""
    return converter.convert(source, output, request)


def _given_fields(extra: object) -> dict[str, object]:
    """A format's convert options given on the command line (`--family 0.9.15`), as the
    converter's options (the same as `-O family=0.9.15`)."""
    if extra is None or isinstance(extra, type) or not dataclasses.is_dataclass(extra):
        return {}
    defaults: Callable[[], object] = type(extra)  # every field of an options class has one
    default = defaults()
    return {
        field.name: getattr(extra, field.name)
        for field in dataclasses.fields(extra)
        if getattr(extra, field.name) != getattr(default, field.name)
    }


@app.command()
def roundtrip(
    files: Annotated[list[Path], typer.Argument(help="Native recordings to check.")],
    as_json: Json = False,
) -> None:
    """Convert each native file into an archive, export it back, and compare the bytes.

    Exit status: 0 all identical, 1 some file not identical, 2 some file unreadable.

    Example: nanorec roundtrip recordings/*.bag --json
    """
    from nanorec.outputs.tables import dumps

    results = []
    worst = 0
    for path in files:
        try:
            result = roundtrip_one(path)
        except (NanorecError, OSError) as error:
            result = {"file": str(path), "error": str(error)}
            worst = max(worst, EXIT_BAD_INPUT)
        else:
            worst = max(worst, 0 if result["identical"] else EXIT_PROBLEM)
        results.append(result)
        if not as_json:
            if "error" in result:
                typer.echo(f"nanorec: {path}: {one_line(str(result['error']))}", err=True)
            else:
                verdict = "identical" if result["identical"] else "NOT IDENTICAL"
                typer.echo(
                    f"{path}: {result['format']}, {result['messages']} messages, "
                    f"archive {result['archive_size']} bytes: {verdict}"
                )
    if as_json:
        typer.echo(dumps(results))
    raise typer.Exit(worst)


def roundtrip_one(path: Path) -> JsonObject:
    """Native -> archive -> native for one file, compared by sha256."""
    import tempfile

    check_input(path)
    converter = native_converter(path, None)
    with tempfile.TemporaryDirectory(prefix="nanorec-") as folder:
        archive = Path(folder) / "a.nanover.zip"
        report = converter.convert(path, archive, ConvertRequest())
        back = Path(folder) / "back"
        from nanorec.archive.reader import ArchiveReader

        with ArchiveReader(archive) as reader:
            exported = converter.export(reader, back, ExportRequest())
        if path.is_dir():  # a recording folder: its files, each against its recorded hash
            identical = exported.identical is True
        else:
            identical = file_sha256(back) == file_sha256(path)
    return {
        "file": str(path),
        "format": converter.name,
        "messages": report.messages,
        "archive_size": report.archive_size,
        "identical": identical,
        "damaged": [str(region) for region in report.damaged],
        "cut": None if report.cut is None else str(report.cut),
    }
