"""Which converter takes which file: found through entry points, so nanorec never imports one.

A package adds a format by declaring, in its `pyproject.toml`,

    [project.entry-points."nanorec.converters"]
    myformat = "mypackage.nanorec_plugin:CONVERTER"

where `CONVERTER` satisfies `nanorec.contract.Converter`. nanorec's own converters (CARLA,
ROS1 bag, pbstream) register the same way. An archive names its converter in its
self-description (`source_format`); a native file is recognised by `sniff`.
"""

from __future__ import annotations

import functools
import os
import sys
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

from nanorec.archive.layout import scratch
from nanorec.archive.urls import is_url
from nanorec.contract import (
    COMMANDS_GROUP,
    SNIFF_BYTES,
    Converter,
    ConvertRequest,
    DirectoryFormat,
    Progress,
    Recording,
)
from nanorec.errors import TruncatedError, UnsupportedError
from nanorec.plugins import entry_points
from nanorec.requests import source_size

if TYPE_CHECKING:  # numpy and the container: imported by `open`, not to list the formats
    from nanorec.archive.reader import ArchiveReader

GROUP = "nanorec.converters"
_ZIP_SIGNATURES = (b"PK\x03\x04", b"PK\x05\x06")


@functools.cache
def converters() -> dict[str, Converter]:
    """Every registered converter by name (loaded once). A converter that fails to load is
    left out with a warning on stderr rather than breaking every other format."""
    found: dict[str, Converter] = {}
    for point in sorted(entry_points(GROUP), key=lambda p: p.name):
        try:
            converter = point.load()
        except Exception as error:  # a broken plug-in must not take the others down
            print(
                f"nanorec: warning: converter {point.name!r} not loaded: {error}", file=sys.stderr
            )
            continue
        if not isinstance(converter, Converter):
            print(
                f"nanorec: warning: {point.value} is not a nanorec converter; ignored",
                file=sys.stderr,
            )
            continue
        found.setdefault(converter.name, converter)
    return found


def named(name: str) -> Converter | None:
    """The converter called `name` (None: no such format), loading that one alone when the
    others are not loaded yet: a command on one file imports no other format."""
    if not converters.cache_info().currsize:
        points = [point for point in entry_points(GROUP) if point.name == name]
        try:
            converter = points[0].load() if len(points) == 1 else None
        except Exception:  # said by `converters` below, as for any broken plug-in
            converter = None
        if isinstance(converter, Converter) and converter.name == name:
            return converter
    return converters().get(name)


def command_titles() -> dict[str, str]:
    """The title of each format that has its own commands, by converter name, sorted: as
    declared under `contract.COMMANDS_GROUP` (loading a string, not the format), else from
    the converter itself when its `commands()` gives an app (that imports them)."""
    registered = {point.name for point in entry_points(GROUP)}
    titles: dict[str, str] = {}
    for point in entry_points(COMMANDS_GROUP):
        if point.name not in registered or point.name in titles:
            continue
        try:
            title = point.load()
        except Exception as error:  # as for a converter: the others still list
            print(f"nanorec: warning: {point.value} not loaded: {error}", file=sys.stderr)
            continue
        if isinstance(title, str):
            titles[point.name] = title
    if not registered <= titles.keys():
        for name, converter in converters().items():
            if name not in titles and converter.commands() is not None:
                titles[name] = converter.title
    return dict(sorted(titles.items()))


def get(name: str) -> Converter:
    """The converter called `name`; `UnsupportedError` listing the known ones otherwise."""
    found = named(name)
    if found is not None:
        return found
    known = converters()
    if name not in known:
        names = ", ".join(known) or "none installed"
        raise UnsupportedError(f"no converter for format {name!r} (known: {names})")
    return known[name]


def read_head(path: Path) -> bytes:
    """The first `SNIFF_BYTES` bytes of a file (nothing for a folder, nor for a FIFO or
    device, which opening would wait on: `check_input` refuses them). By URL nanorec reads
    archives only: a URL's head is taken as an archive's (opening it says if it is not)."""
    if is_url(path):
        return _ZIP_SIGNATURES[0]
    if path.is_dir() or (path.exists() and not path.is_file()):
        return b""
    with path.open("rb") as handle:
        return handle.read(SNIFF_BYTES)


def is_archive(head: bytes) -> bool:
    return head[:4] in _ZIP_SIGNATURES


def for_directory(path: Path) -> Converter | None:
    """The converter that takes the folder `path` as one recording (see
    `contract.DirectoryFormat`), or None."""
    if not path.is_dir():
        return None
    for converter in converters().values():
        if isinstance(converter, DirectoryFormat) and converter.sniff_directory(path):
            return converter
    return None


def input_size(path: Path) -> int:
    """A recording's bytes: a file's size, or the files directly in a recording folder (as
    rosbag2 counts a bag; `nanorec.requests.source_size`, what converters report in)."""
    return source_size(path)


def for_native(path: Path, head: bytes | None = None) -> Converter:
    """The converter whose `sniff` accepts `path` (a file, or a folder a converter takes
    whole). Raises `UnsupportedError` saying what the file looks like when none does."""
    if path.is_dir():
        found = for_directory(path)
        if found is None:
            raise UnsupportedError(f"{path} is a folder, not a recording nanorec knows")
        return found
    head = read_head(path) if head is None else head
    if not head:
        raise TruncatedError(f"{path} is empty", offset=0)
    if is_archive(head):
        raise UnsupportedError(f"{path} is an archive, not a native recording")
    matches = [c for c in converters().values() if c.sniff(head)]
    if len(matches) > 1:  # a suffix breaks the tie
        by_suffix = [c for c in matches if _has_suffix(path, c)]
        matches = by_suffix or matches
    if not matches:
        known = ", ".join(f"{c.title} ({' '.join(c.suffixes)})" for c in converters().values())
        raise UnsupportedError(
            f"{path} is not a recording nanorec knows ({_looks_like(head)}; "
            f"formats installed: {known or 'none'})"
        )
    return matches[0]


def for_archive(reader: ArchiveReader) -> Converter | None:
    """The converter that wrote `reader`'s archive, or None (a plain or NanoVer archive)."""
    name = (reader.description or {}).get("source_format")
    if isinstance(name, str):
        return named(name)
    return None


def open(path: str | os.PathLike[str], *, progress: Progress | None = None) -> Recording:
    """Open a recording for random access: an archive, or a native file that a converter
    takes (converted into a temporary archive, removed when the recording is closed or
    collected).

    An archive written by a converter comes back as that converter's recording (for CARLA a
    `CarlaRecording` with `frame(n)`...), any other archive as an `ArchiveRecording`. Raises
    `UnsupportedError` for a file no converter takes, `NanorecError`s for damaged input,
    `OSError` for the file itself. `progress(done, total)` follows the conversion of a
    native file (in bytes of it), for a bar: it is the long part of opening one.

    An archive named by URL (`s3://bucket/key.nanover.zip`, `gs://`, `https://`, `http://` on
    loopback; the `remote` extra) is read in place by range requests
    (`nanorec.archive.remote`), a native file by URL is not taken.
    """
    import shutil
    import tempfile

    from nanorec.archive.reader import ArchiveReader

    if is_url(path):
        try:
            reader = ArchiveReader(path)
        except TruncatedError as error:  # no zip end: a native file, or an archive cut short
            raise UnsupportedError(
                f"{path} is not a complete archive ({error.message}); by URL nanorec reads "
                "archives only: convert a native file from a local copy"
            ) from None
        return _archive_recording(reader)
    path = Path(path)
    head = read_head(path)
    if is_archive(head):
        return _archive_recording(ArchiveReader(path))
    converter = for_native(path, head)
    workdir = Path(tempfile.mkdtemp(prefix="nanorec-"))
    try:
        archive = workdir / (path.name + ".nanover.zip")
        with scratch():
            report = converter.convert(path, archive, ConvertRequest(progress=progress))
    except BaseException:
        shutil.rmtree(workdir, ignore_errors=True)
        raise
    for problem in [*map(str, report.damaged), *report.warnings]:
        # the recording opens, but some of it could not be read: say so, once
        warnings.warn(f"{path}: damaged: {problem}", UserWarning, stacklevel=2)
    reader = ArchiveReader(archive, temporary_dir=workdir)
    try:
        return converter.open_archive(reader)
    except BaseException:
        reader.close()
        raise


def _archive_recording(reader: ArchiveReader) -> Recording:
    """`reader`'s archive as its converter's recording (an `ArchiveRecording` for a plain or
    NanoVer one); `reader` is closed if that fails."""
    from nanorec.recording import ArchiveRecording

    try:
        converter = for_archive(reader)
        if converter is None:
            return ArchiveRecording(reader)
        return converter.open_archive(reader)
    except BaseException:
        reader.close()
        raise


def _has_suffix(path: Path, converter: Converter) -> bool:
    name = path.name.lower()
    return any(name.endswith(suffix) for suffix in converter.suffixes)


def _looks_like(head: bytes) -> str:
    signatures = {
        b"\x89PNG": "a PNG image",
        b"\xff\xd8\xff": "a JPEG image",
        b"%PDF": "a PDF document",
        b"\x1f\x8b": "a gzip file",
        b"BZh": "a bzip2 file",
        b"\x7fELF": "an executable",
        b"\x89MCAP": "an MCAP file",
        b"SQLite format 3": "an SQLite database",
    }
    for magic, what in signatures.items():
        if head.startswith(magic):
            return f"it looks like {what}"
    try:
        head.decode("utf-8")
        return "it looks like text"
    except UnicodeDecodeError:
        return "unrecognised bytes"


__all__ = [
    "GROUP",
    "command_titles",
    "converters",
    "for_archive",
    "for_directory",
    "for_native",
    "get",
    "input_size",
    "named",
    "open",
]
