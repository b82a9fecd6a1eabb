"""Archive -> ROS 2 bag: every file of the bag back byte for byte (a `.db3` that came
with a WAL joins back as the file then its WAL, split here into the two files again).

Only when the output is what the bag was: its storage and shape (`writer.bag_target`: an
output named `.mcap` for a sqlite3 bag, `--storage`, one `.db3` for a bag folder...) and its
skeletons (an archive recovered from a killed conversion has none, `adopt.py`). Otherwise
every message is written as a new bag (`cut.py`), and the report's note says why.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

from nanorec.archive.atomic import atomic_folder, write_hashed
from nanorec.archive.reader import ArchiveReader
from nanorec.contract import ExportReport
from nanorec.errors import FormatError

from .bag import METADATA
from .cut import export_selection
from .members import folder_sha256
from .meta import Ros2Meta
from .pieces import file_pieces
from .writer import Target, bag_target


class _Split:
    """Pieces of one stream written as two files: the first `size` bytes, then the rest."""

    def __init__(self, pieces: Iterator[bytes | memoryview], size: int) -> None:
        self.pieces = pieces
        self.size = size
        self.rest: bytes | memoryview = b""

    def head(self) -> Iterator[bytes | memoryview]:
        left = self.size
        for piece in self.pieces:
            if len(piece) >= left:
                yield piece[:left]
                self.rest = piece[left:]
                return
            left -= len(piece)
            yield piece
        if left:
            raise FormatError("a .db3 file joins back shorter than it was")

    def tail(self) -> Iterator[bytes | memoryview]:
        if self.rest:
            yield self.rest
        yield from self.pieces


def _write_file(
    reader: ArchiveReader, meta: Ros2Meta, index: int, target: Path, overwrite: bool = False
) -> list[tuple[str, str, int]]:
    """Bag file `index` written at `target` (and its WAL beside it): (name, sha256, size)
    of each file written."""
    entry = meta.files[index]
    pieces = file_pieces(reader, meta, index)
    wal = entry.get("wal")
    if wal is None:
        size, sha = write_hashed(target, pieces, overwrite=overwrite)
        return [(entry["name"], sha, size)]
    split = _Split(iter(pieces), entry["size"])
    size, sha = write_hashed(target, split.head(), overwrite=overwrite)
    wal_target = target.with_name(target.name + "-wal")
    wal_size, wal_sha = write_hashed(wal_target, split.tail(), overwrite=overwrite)
    return [(entry["name"], sha, size), (wal["name"], wal_sha, wal_size)]


def export_exact(
    reader: ArchiveReader, output: Path, *, overwrite: bool, storage: str | None = None
) -> ExportReport:
    """The bag as it was: a folder again (metadata.yaml and every storage file), or the one
    storage file it was; a new bag of every message when it cannot be (see the module).
    `storage`: `--storage`, sqlite3 or mcap."""
    meta = Ros2Meta(reader)
    why = _not_exact(meta, bag_target(output, storage, source=_storage(meta),
                                      source_folder=meta.folder))  # fmt: skip
    if why is not None:
        report = export_selection(
            reader, output, selection=None, overwrite=overwrite, storage=storage
        )
        report.details.setdefault("notes", []).append(why)
        return report
    expected = reader.source_sha256
    if not meta.folder:
        written = _write_file(reader, meta, 0, output, overwrite)
        size = sum(n for _, _, n in written)
        sha = written[0][1] if len(written) == 1 else folder_sha256([w[:2] for w in written])
        return ExportReport(output, size, sha, len(reader), _same(sha, expected))
    hashes: list[tuple[str, str]] = []
    total = 0
    with atomic_folder(output, overwrite=overwrite) as folder:
        if meta.metadata is not None:
            (folder / METADATA).write_bytes(meta.metadata)
            hashes.append((METADATA, hashlib.sha256(meta.metadata).hexdigest()))
            total += len(meta.metadata)
        for index, entry in enumerate(meta.files):
            if Path(entry["name"]).name != entry["name"]:
                raise FormatError(f"a bag file named {entry['name']!r} (not a plain name)")
            for name, sha, size in _write_file(reader, meta, index, folder / entry["name"]):
                hashes.append((name, sha))
                total += size
    sha = folder_sha256(hashes)
    return ExportReport(
        output, total, sha, len(reader), _same(sha, expected), {"files": [n for n, _ in hashes]}
    )


def _storage(meta: Ros2Meta) -> str:
    """The bag's storage (its first file's: rosbag2 writes one storage per bag)."""
    return str(meta.files[0]["storage"])


def _not_exact(meta: Ros2Meta, target: Target) -> str | None:
    """Why the export cannot be the bag's own bytes, or None when it can."""
    count = f"{len(meta.reader)} messages"
    if meta.adopted:
        return (
            f"recovered from a killed conversion: its {count} written as a new bag (the "
            "storage files' layout is lost), not byte-exact"
        )
    storages = sorted({str(e["storage"]) for e in meta.files})
    if storages != [target.storage]:
        return (
            f"the bag is {'+'.join(storages)}: its {count} written as a new {target.storage} "
            "bag, not byte-exact"
        )
    if meta.folder and not target.folder:
        return f"the bag is a folder: its {count} written as one new storage file, not byte-exact"
    return None


def _same(sha: str, expected: str | None) -> bool | None:
    return None if expected is None else sha == expected
