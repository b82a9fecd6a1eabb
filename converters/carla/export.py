"""Nanorec archive -> the native CARLA recorder file, byte for byte."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

from nanorec.archive.atomic import write_hashed
from nanorec.archive.reader import ArchiveReader
from nanorec.archive.urls import is_url, url_path
from nanorec.contract import ExportReport
from nanorec.errors import FormatError

from .ids import family as family_named
from .message import PACKET_HEADER, checked_frame, iter_message_packets
from .meta import read_meta


def iter_native(reader: ArchiveReader) -> Iterator[bytes]:
    """The native CARLA file of an archive, as consecutive chunks of bytes."""
    meta = read_meta(reader)
    fam = family_named(meta["family"])
    orders = meta.get("orders", [])
    reader.advise_sequential()
    damaged: dict[int, list[bytes]] = {}
    for after, data in meta.get("damaged", []):
        damaged.setdefault(int(after), []).append(bytes(data))
    yield meta["header"]["bytes"]
    yield meta["prelude"]
    yield from damaged.get(-1, [])
    for index in range(len(reader)):
        if index % 4096 == 4095:
            reader.release_pages()
        frame = checked_frame(reader[index], index, fam.engine)
        try:
            yield b"".join(
                PACKET_HEADER.pack(pid, len(body)) + body
                for pid, body in iter_message_packets(frame, fam, orders)
            )
        except FormatError as error:
            raise FormatError(f"archive message {index}: {error.message}") from None
        yield from damaged.get(index, [])
    yield meta["tail"]


def export(
    archive: str | os.PathLike[str],
    output: str | os.PathLike[str],
    *,
    overwrite: bool = False,
) -> ExportReport:
    """Write the native CARLA file of `archive` to `output`, byte for byte.

    The output appears only when complete (temporary file + rename). The report is the
    contract's: `identical` compares its sha256 with the one recorded at conversion (None
    when the archive records none), `messages` counts the frames written.
    """
    out = Path(output)
    with ArchiveReader(archive) as reader:
        size, sha = write_hashed(out, iter_native(reader), overwrite=overwrite)
        expected, frames = reader.source_sha256, len(reader)
    return ExportReport(out, size, sha, frames, None if expected is None else sha == expected)


@contextlib.contextmanager
def native_file(path: str | os.PathLike[str]) -> Iterator[Path]:
    """The path of `path`'s native CARLA bytes: `path` itself for a CARLA file, or for a
    nanorec archive its export into a temporary directory (removed afterwards)."""
    if is_url(path):  # an archive read in place (by URL nanorec reads archives only)
        path = url_path(str(path))
    else:
        path = Path(path)
        with path.open("rb") as handle:
            if handle.read(4) != b"PK\x03\x04":
                yield path
                return
    with tempfile.TemporaryDirectory(prefix="nanorec-") as folder:
        native = Path(folder) / path.name.removesuffix(".zip").removesuffix(".nanover")
        export(path, native)
        yield native
