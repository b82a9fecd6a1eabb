"""The format-neutral verbs: convert, export, info, cat, play, plot, roundtrip.

Each works on any archive (a nanorec archive of any format, NanoVer's own recordings) and on
any native file a registered converter takes, through the contract only. A format with its
own command of the same name gets the command line instead (see `nanorec.cli`).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import sys
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Annotated, Any

import typer

from nanorec import registry
from nanorec.cli import EXIT_BAD_INPUT, EXIT_PROBLEM, app, fail, run
from nanorec.cli.options import (
    Duration,
    End,
    Force,
    Json,
    KeepGoing,
    Kinds,
    Messages,
    Output,
    Start,
    TableFormat,
)
from nanorec.contract import Converter, ConvertReport, Message, Recording
from nanorec.errors import NanorecError, UnsupportedError, UsageError
from nanorec.selection import Selection

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


def check_input(path: Path) -> None:
    """One wording for an input that is not there, not a file, or empty."""
    if not path.exists():
        raise UsageError(f"{path}: no such file")
    if not path.is_file():
        raise UsageError(f"{path}: not a regular file")
    if path.stat().st_size == 0:
        raise UsageError(f"{path}: the file is empty")


def check_output(output: Path, *inputs: Path) -> None:
    """Refuse an output that would replace an input (whatever `--force` says) or that has
    no directory to go to."""
    if not output.parent.is_dir():
        raise UsageError(f"{output}: the directory {output.parent} does not exist")
    for source in inputs:
        if output.exists() and source.exists() and os.path.samefile(output, source):
            raise UsageError(f"{output} is the input: refusing to write over it")


def native_converter(path: Path, name: str | None = None) -> Converter:
    """The converter for native file `path` (`name` forces one); `UsageError` for an archive,
    `UnsupportedError` for a file no converter takes."""
    head = registry.read_head(path)
    if registry.is_archive(head):
        raise UsageError(
            f"{path} is already an archive: nothing to convert (`nanorec export` writes "
            "the native file back)"
        )
    return registry.get(name) if name is not None else registry.for_native(path, head)


@contextlib.contextmanager
def progress_bar(label: str, total: int) -> Iterator[Any]:
    """A progress bar on stderr when it is a terminal (and nothing otherwise)."""
    shown = sys.stderr.isatty()
    with typer.progressbar(
        length=max(total, 1),
        label=label,
        file=sys.stderr if shown else io.StringIO(),
        show_eta=True,
    ) as bar:

        def update(done: int, _total: int) -> None:
            bar.update(done - bar.pos)

        yield update


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
            help="Archive to write (default: SOURCE.nanover.zip); with several sources or a "
            "directory, the directory to write them into.",
        ),
    ] = None,
    force: Force = False,
    keep_going: KeepGoing = False,
    fmt: FormatName = None,
    option: ConvertOptions = None,
    jobs: Annotated[
        int, typer.Option("--jobs", "-j", help="Convert this many files at once (batches).")
    ] = 1,
) -> None:
    """Convert native recordings into indexed, seekable nanorec archives.

    A crashed (cut) recording converts every complete message and keeps the rest verbatim,
    so `nanorec export` gives the exact file back. Exit status 1 when an input was damaged
    inside or a warning was given (unless --keep-going), 2 when it cannot be read.
    Several sources or a directory convert as a batch: one bad file never stops it.

    Example: nanorec convert run.bag -o run.nanover.zip
    """
    if len(sources) != 1 or sources[0].is_dir():
        from nanorec.cli.batch import batch_convert

        code = batch_convert(
            sources,
            output,
            jobs=jobs,
            force=force,
            keep_going=keep_going,
            fmt=fmt,
            options=_options(option),
        )
        raise typer.Exit(code)
    source = sources[0]

    def action() -> int:
        check_input(source)
        converter = native_converter(source, fmt)
        out = output or source.with_name(source.name + ".nanover.zip")
        check_output(out, source)
        options = _options(option)
        with progress_bar("converting", source.stat().st_size) as update:
            report = converter.convert(
                source, out, overwrite=force, progress=update, options=options
            )
        typer.echo("\n".join(convert_report_lines(report)))
        return 0 if report.clean or keep_going else EXIT_PROBLEM

    raise typer.Exit(run(action))


@contextlib.contextmanager
def opened_archive(
    path: Path, fmt: str | None = None, options: Mapping[str, Any] | None = None
) -> Iterator[Any]:
    """An `ArchiveReader` of `path`: the archive itself, or a native file converted into a
    temporary archive (removed afterwards)."""
    from nanorec.reader import ArchiveReader

    check_input(path)
    if registry.is_archive(registry.read_head(path)):
        with ArchiveReader(path) as reader:
            yield reader
        return
    converter = native_converter(path, fmt)
    with tempfile.TemporaryDirectory(prefix="nanorec-") as folder:
        archive = Path(folder) / (path.name + ".nanover.zip")
        converter.convert(path, archive, options=options)
        with ArchiveReader(archive) as reader:
            yield reader


@app.command()
def export(
    file: Annotated[Path, typer.Argument(help="An archive (or a native file, converted first).")],
    output: Output,
    force: Force = False,
    start: Start = None,
    end: End = None,
    duration: Duration = None,
    messages: Messages = None,
    kinds: Kinds = None,
    to: Annotated[
        str,
        typer.Option(
            "--format",
            "-F",
            help="native (the recording's own format), parquet (a directory of tables, "
            "needs the [tables] extra), mcap (needs the [mcap] extra), or a format's own "
            "(pbstream: ros-map).",
            metavar="FORMAT",
        ),
    ] = "native",
) -> None:
    """Write the native file back, byte for byte, or a valid cut of it; or the recording in
    another format (Parquet tables, MCAP).

    Without a range the whole recording is written and checked against the sha256 recorded
    at conversion (exit 1 if it differs). With --start/--end/--duration, --messages or
    --type, a valid native file holding just that (where the format allows such a cut).

    Example: nanorec export run.nanover.zip -o clip.log --start 10 --end 25
    """

    selection = run(
        lambda: Selection.make(
            start=start, end=end, duration=duration, messages=messages, kinds=kinds
        )
    )
    raise typer.Exit(run(lambda: export_file(file, output, selection, force=force, to=to)))


def export_file(
    file: Path,
    output: Path,
    selection: Selection,
    *,
    force: bool,
    to: str = "native",
    convert_options: Mapping[str, Any] | None = None,
) -> int:
    """`nanorec export` (and a format's own export): print the report, return the status."""
    check_output(output, file)
    if to in ("parquet", "mcap"):
        return _export_other(to, file, output, selection, force)
    with opened_archive(file, options=convert_options) as reader:
        converter = registry.for_archive(reader)
        if converter is None:
            raise UnsupportedError(
                f"{file} is a plain archive (no converter wrote it): there is no native "
                "file to export"
            )
        options = None if to == "native" else {"format": to}
        report = converter.export(
            reader, output, selection=selection, overwrite=force, options=options
        )
    verdict = (
        f"a cut of {report.messages} messages"
        if report.identical is None
        else "identical to the source"
        if report.identical
        else "DIFFERS from the source"
    )
    typer.echo(f"{report.output}: {report.size} bytes, sha256 {report.sha256} ({verdict})")
    return EXIT_PROBLEM if report.identical is False else 0


def message_dict(message: Message) -> dict[str, Any]:
    return {
        "number": message.number,
        "time": message.time,
        "kind": message.kind,
        "value": message.value,
    }


def _export_other(to: str, file: Path, output: Path, selection: Selection, force: bool) -> int:
    """Parquet tables or MCAP, from any recording (`nanorec.arrow`, `nanorec.mcap`)."""
    with opened(file) as recording:
        if to == "parquet":
            from nanorec.arrow import export_parquet

            lines = export_parquet(recording, output, selection=selection, overwrite=force)
        else:
            from nanorec.mcap import export_mcap

            lines = export_mcap(recording, output, selection=selection, overwrite=force)
    typer.echo("\n".join(lines))
    return 0


@contextlib.contextmanager
def opened(path: Path) -> Iterator[Recording]:
    check_input(path)
    recording = registry.open(path)
    try:
        yield recording
    finally:
        recording.close()


@app.command()
def info(
    file: Annotated[Path, typer.Argument(help="An archive or a native recording.")],
    as_json: Json = False,
) -> None:
    """Summarise a recording: format, messages, times, kinds.

    Formats have their own richer text (CARLA's and rosbag's info), used automatically.

    Example: nanorec info recording.nanover.zip --json
    """
    from nanorec.tables import dumps

    def action() -> None:
        with opened(file) as recording:
            summary = recording.summary()
        if as_json:
            typer.echo(dumps(summary))
            return
        for key, value in summary.items():
            if isinstance(value, dict):
                typer.echo(f"{key}:")
                for name, item in value.items():
                    typer.echo(f"  {name}: {item}")
            else:
                typer.echo(f"{key}: {value}")

    run(action)


@app.command()
def cat(
    file: Annotated[Path, typer.Argument(help="An archive or a native recording.")],
    kinds: Kinds = None,
    fmt: TableFormat = "ndjson",
    start: Start = None,
    end: End = None,
    duration: Duration = None,
    messages: Messages = None,
) -> None:
    """Print records as a table, one row per record (CSV needs one --type), or with no
    --type every message as one NDJSON line (number, time, kind, value).

    Example: nanorec cat recording.nanover.zip --type frame --format csv > frames.csv
    """
    from nanorec.tables import write_csv, write_ndjson

    if fmt not in ("ndjson", "csv"):
        fail(f"--format takes ndjson or csv, not {fmt!r}")

    def action() -> None:
        selection = Selection.make(start=start, end=end, duration=duration, messages=messages)
        with opened(file) as recording:
            if not kinds:
                if fmt == "csv":
                    raise UsageError("CSV needs one --type (one table); NDJSON takes them all")
                write_ndjson(map(message_dict, recording.messages(selection)), sys.stdout)
                return
            if fmt == "csv" and len(kinds) > 1:
                raise UsageError("CSV holds one table: give one --type")
            for kind in kinds:
                rows = recording.rows(kind, selection)
                (write_csv if fmt == "csv" else write_ndjson)(rows, sys.stdout)
        sys.stdout.flush()

    run(action)


@app.command()
def play(
    file: Annotated[Path, typer.Argument(help="An archive or a native recording.")],
    rate: Annotated[
        float, typer.Option("--rate", "-r", help="Speed factor: 2 plays twice as fast.")
    ] = 1.0,
    start: Start = None,
    end: End = None,
    duration: Duration = None,
    kinds: Kinds = None,
    loop: Annotated[bool, typer.Option("--loop", "-l", help="Start over after the end.")] = False,
    immediate: Annotated[
        bool, typer.Option("--immediate", "-i", help="Print every message at once, no waiting.")
    ] = False,
    pause: Annotated[
        bool, typer.Option("--pause", help="Start paused (needs a terminal: space resumes).")
    ] = False,
) -> None:
    """Print each message as one JSON line at the recorded pace (like rosbag play).

    On a terminal, space pauses and resumes, s steps one message while paused, q quits.

    Example: nanorec play recording.nanover.zip --rate 2 --start 10 --duration 5
    """
    from nanorec.tables import dumps

    def action() -> None:
        options = dict(rate=rate, start=start, end=end, duration=duration, kinds=kinds)
        with (
            opened(file) as recording,
            terminal_player(recording, pause, loop=loop, immediate=immediate, **options) as player,
        ):
            for message in player.paced(recording.message):
                sys.stdout.write(dumps(message_dict(message)) + "\n")
                if not immediate:
                    sys.stdout.flush()
        sys.stdout.flush()

    run(action)


@contextlib.contextmanager
def terminal_player(recording: Any, pause: bool, **options: Any) -> Iterator[Any]:
    """A `Player` of `recording` driven by the keyboard when stdin is a terminal: space
    pauses and resumes, s steps while paused, q quits. Any format's `play` uses it."""
    from nanorec.player import Player, TerminalKeys

    interactive = sys.stdin.isatty()
    if pause and not interactive:
        raise UsageError("--pause needs a terminal on stdin (space resumes, s steps)")
    with contextlib.ExitStack() as stack:
        terminal = stack.enter_context(TerminalKeys(sys.stdin.fileno())) if interactive else None
        player: Player

        def keys(seconds: float) -> None:
            assert terminal is not None
            key = terminal.wait(seconds)
            if key is not None:
                player.handle_key(key)
            if key == " ":
                when = "-" if player.time is None else f"{player.time:.3f} s"
                state = "PAUSED" if player.paused else "RUNNING"
                typer.echo(f"[{state}] message {player.index}, {when}", err=True)

        player = Player(
            recording, paused=pause, keys=keys if terminal is not None else None, **options
        )
        if terminal is not None:
            typer.echo(
                "nanorec: space pauses/resumes, s steps one message while paused, q quits"
                + (" [PAUSED]" if pause else ""),
                err=True,
            )
        yield player


@app.command()
def plot(
    file: Annotated[Path, typer.Argument(help="An archive or a native recording.")],
    output: Output,
    force: Force = False,
) -> None:
    """Draw how many messages of each kind a recording holds over time (formats draw more:
    CARLA a bird's-eye view, pbstream its map). Needs the plot extra (matplotlib).

    Example: nanorec plot recording.nanover.zip -o timeline.png
    """
    from nanorec.timeline import plot_timeline

    def action() -> None:
        check_output(output, file)
        with opened(file) as recording:
            size = plot_timeline(recording, output, overwrite=force)
        typer.echo(f"{output}: {size} bytes")

    run(action)


@app.command()
def roundtrip(
    files: Annotated[list[Path], typer.Argument(help="Native recordings to check.")],
    as_json: Json = False,
) -> None:
    """Convert each native file into an archive, export it back, and compare the bytes.

    Exit status: 0 all identical, 1 some file not identical, 2 some file unreadable.

    Example: nanorec roundtrip recordings/*.bag --json
    """
    from nanorec.tables import dumps

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
                typer.echo(f"nanorec: {path}: {result['error']}", err=True)
            else:
                verdict = "identical" if result["identical"] else "NOT IDENTICAL"
                typer.echo(
                    f"{path}: {result['format']}, {result['messages']} messages, "
                    f"archive {result['archive_size']} bytes: {verdict}"
                )
    if as_json:
        typer.echo(dumps(results))
    raise typer.Exit(worst)


def roundtrip_one(path: Path) -> dict[str, Any]:
    """Native -> archive -> native for one file, compared by sha256."""
    check_input(path)
    converter = native_converter(path, None)
    with tempfile.TemporaryDirectory(prefix="nanorec-") as folder:
        archive = Path(folder) / "a.nanover.zip"
        report = converter.convert(path, archive)
        back = Path(folder) / "back"
        from nanorec.reader import ArchiveReader

        with ArchiveReader(archive) as reader:
            converter.export(reader, back)
        identical = _sha256(back) == _sha256(path)
    return {
        "file": str(path),
        "format": converter.name,
        "messages": report.messages,
        "archive_size": report.archive_size,
        "identical": identical,
        "damaged": [str(region) for region in report.damaged],
        "cut": None if report.cut is None else str(report.cut),
    }


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
