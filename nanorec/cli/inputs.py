"""What every verb does with its inputs and outputs: one wording for a missing, empty or
foreign file, no output over an input, a progress bar, and inputs opened as archives
(a native file converted into a temporary one first)."""

from __future__ import annotations

import contextlib
import io
import os
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, cast

import typer

from nanorec import registry
from nanorec.archive.layout import scratch
from nanorec.archive.urls import is_url, url_path
from nanorec.cli._click import click
from nanorec.contract import Converter, Message, Progress, Recording, convert_request
from nanorec.errors import UsageError
from nanorec.untyped import JsonObject

if TYPE_CHECKING:
    from nanorec.archive.reader import ArchiveReader


def input_path(typed: str) -> Path:
    """An input as typed: a URL (`s3://`, `https://`...: an archive read in place, see
    `nanorec.archive.remote`) kept whole, else a local path."""
    if is_url(typed):  # a PurePosixPath keeping the URL: what the readers take for a path
        return cast("Path", url_path(typed))
    return Path(typed)


def check_input(path: Path) -> None:
    """One wording for an input that is not there, not a file (or a recording folder), or
    empty. A URL is checked by its store when it is opened."""
    if is_url(path):
        return
    if not path.exists():
        raise UsageError(f"{path}: no such file")
    if path.is_dir() and registry.for_directory(path) is not None:
        return
    if not path.is_file():
        raise UsageError(f"{path}: not a regular file")
    if path.stat().st_size == 0:
        raise UsageError(f"{path}: the file is empty")


def output_path(typed: str) -> Path:
    """`-o` as typed: a URL (`s3://bucket/key`: uploaded once written, see `staged_output`)
    kept whole, else a local path (the parser of every verb's `-o`)."""
    return input_path(typed)


def check_output(output: Path, *inputs: Path) -> None:
    """Refuse an output that would replace an input (whatever `--force` says) or that has
    no directory to go to. An output by URL is checked by its store (`staged_output`)."""
    if is_url(output):
        if any(str(source) == str(output) for source in inputs):
            raise UsageError(f"{output} is the input: refusing to write over it")
        return
    if not output.parent.is_dir():
        raise UsageError(f"{output}: the directory {output.parent} does not exist")
    for source in inputs:
        if is_url(source):
            continue
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
def progress_bar(label: str, total: int) -> Iterator[Progress]:
    """A progress bar on stderr when it is a terminal (and nothing otherwise); yields
    `update(done, total)`, whose `total` replaces the first guess when it differs."""
    shown = sys.stderr.isatty()
    with typer.progressbar(
        length=max(total, 1),
        label=label,
        file=sys.stderr if shown else io.StringIO(),
        show_eta=True,
    ) as bar:

        def update(done: int, total: int) -> None:
            if total > 0 and total != bar.length:  # a total only known once work began
                bar.length = total
            bar.update(done - bar.pos)

        yield update


@contextlib.contextmanager
def staged_output(output: Path | None, force: bool) -> Iterator[Path | None]:
    """`output` itself, or for a URL a local path to write instead, uploaded when the block
    ends without error (`nanorec.archive.upload.staged`: refused when the object exists and
    not `force`). What the verb prints meanwhile is held until the upload is done, the local
    path said as the URL: a report names the output the user asked for, and only once it
    is there."""
    if output is None or not is_url(output):
        yield output
        return
    from nanorec.archive.upload import staged

    url = str(output)
    held = io.StringIO()
    context = click.globals.get_current_context(silent=True)
    verb = f"nanorec {context.info_name}" if context is not None else ""
    bar = contextlib.ExitStack()  # an `uploading` bar, shown once the upload begins
    updates: list[Progress] = []

    def uploading(done: int, total: int) -> None:
        if not updates:
            updates.append(bar.enter_context(progress_bar("uploading", total)))
        updates[0](done, total)

    with bar, staged(url, overwrite=force, verb=verb, progress=uploading) as local:
        with contextlib.redirect_stdout(held):
            yield local
        shown = held.getvalue().replace(str(local), url)
    sys.stdout.write(shown)


@contextlib.contextmanager
def opened(path: Path, *, show_conversion: bool = False) -> Iterator[Recording]:
    """The recording of `path`; a native file is converted into a temporary archive first,
    with a `converting` bar when `show_conversion` (long passes: exports)."""
    check_input(path)
    if show_conversion and not registry.is_archive(registry.read_head(path)):
        with progress_bar("converting", registry.input_size(path)) as update:
            recording = registry.open(path, progress=update)
    else:
        recording = registry.open(path)
    try:
        yield recording
    finally:
        recording.close()


@contextlib.contextmanager
def opened_archive(
    path: Path,
    fmt: str | None = None,
    options: Mapping[str, object] | None = None,
    *,
    paged_index: bool = False,
) -> Iterator[ArchiveReader]:
    """An `ArchiveReader` of `path`: the archive itself, or a native file converted into a
    temporary archive (removed afterwards). `paged_index`: its index read a page at a time
    as asked (`ArchiveReader`'s; a pass over every message, as export's)."""
    import tempfile  # not at start-up: with random, ~3 ms of `nanorec --version`

    from nanorec.archive.reader import ArchiveReader

    check_input(path)
    if registry.is_archive(registry.read_head(path)):
        with ArchiveReader(path, paged_index=paged_index) as reader:
            yield reader
        return
    converter = native_converter(path, fmt)
    with tempfile.TemporaryDirectory(prefix="nanorec-") as folder:
        archive = Path(folder) / (path.name + ".nanover.zip")
        with scratch():
            converter.convert(path, archive, convert_request(converter, options))
        with ArchiveReader(archive, paged_index=paged_index) as reader:
            yield reader


def message_dict(message: Message) -> JsonObject:
    return {
        "number": message.number,
        "time": message.time,
        "kind": message.kind,
        "value": message.value,
    }
