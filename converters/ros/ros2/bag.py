"""Which files make a ROS 2 bag: its `metadata.yaml` and its storage files, in bag order.

A bag is a folder (rosbag2 writes `metadata.yaml` and `<name>_<N>.db3|.mcap`, each
`<file>.zstd` when compressed per file), or one storage file given alone. The order is the
one `metadata.yaml` lists (`relative_file_paths`); without it (a crashed bag, reindex's
input) the split number `_<N>` decides, as `ros2 bag reindex` does. A `.db3`'s WAL
(`<file>.db3-wal`, rosbag2's `resilient` preset) holds the rows a writer committed since its
last checkpoint: a non-empty one goes with its file (`BagFile.wal`). The `-shm` index, which
SQLite rebuilds from the WAL, and empty WALs (SQLite recreates them) are left out.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from nanorec.errors import FormatError, UnsupportedError

from .metadata import BagMetadata, load_yaml, parse_metadata
from .storage import SQLITE_MAGIC, ZSTD_MAGIC, storage_of

METADATA: Final = "metadata.yaml"
METADATA_KEY: Final = b"rosbag2_bagfile_information"
SUFFIXES: Final = (".db3", ".mcap", ".db3.zstd", ".mcap.zstd")
ZSTD: Final = ".zstd"
WAL: Final = "-wal"
#: The largest metadata.yaml read (rosbag2's are a few KB; 10,000 split files take ~2 MB).
MAX_METADATA: Final = 16 << 20
#: What stands for a metadata.yaml that cannot be read.
REINDEXED: Final = "files found by name, described as `ros2 bag reindex` would"
_SPLIT: Final = re.compile(r"_(\d+)\.(db3|mcap)(\.zstd)?$")


@dataclass(frozen=True)
class BagFile:
    path: Path
    name: str  # as metadata.yaml names it (relative to the folder)
    compressed: bool  # rosbag2's per-file zstd compression (`<file>.zstd`)
    wal: Path | None = None  # a non-empty `<file>-wal` beside a .db3


def with_wal(path: Path, name: str, compressed: bool, problems: list[str]) -> BagFile:
    """The bag file at `path`, with its WAL when it has a non-empty one (one that leads out
    of the file's folder is a problem, never opened)."""
    wal = path.with_name(path.name + WAL)
    has = not compressed and path.name.lower().endswith(".db3") and wal.is_file()
    if has and not within(wal, path.parent):
        problems.append(f"{wal.name} leads outside the bag's folder: not read")
        has = False
    return BagFile(path, name, compressed, wal if has and wal.stat().st_size else None)


def within(path: Path, folder: Path) -> bool:
    """`path`, its links followed, is inside `folder` (its links followed too): found
    without opening either."""
    try:
        return path.resolve().is_relative_to(folder.resolve())
    except (OSError, RuntimeError):  # a link loop
        return False


@dataclass
class BagLayout:
    root: Path
    folder: bool  # a bag folder (else one storage file)
    metadata: bytes | None  # metadata.yaml as it is
    files: list[BagFile]
    notes: list[str] = field(default_factory=list)
    #: Listed or found files left out (outside the folder, listed twice, missing, not a
    #: storage file): the report's warnings, exit status 1 as for damage.
    problems: list[str] = field(default_factory=list)


def _head(path: Path, size: int = 64) -> bytes:
    try:
        return read_regular(path, size, whole=False)
    except (OSError, FormatError):
        return b""


def read_regular(path: Path, limit: int, *, whole: bool = True) -> bytes:
    """The bytes of `path` (`whole`: all of them, else the first `limit`), read only when it
    is a regular file: checked before opening and again once open, and opened non-blocking,
    so a FIFO or device in its place never hangs a reader. FormatError for anything else, and
    (`whole`) for a file of more than `limit` bytes, never read into memory."""
    if not stat.S_ISREG(path.stat().st_mode):
        raise FormatError(f"{path.name} is not a regular file (a FIFO, device or folder)")
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(fd, "rb") as handle:
        size = os.fstat(fd).st_size
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise FormatError(f"{path.name} is not a regular file (a FIFO, device or folder)")
        if whole and size > limit:
            raise FormatError(f"{path.name} is {size} bytes, more than the {limit} read of it")
        data = handle.read(limit + whole)
    if whole and len(data) > limit:  # grew since
        raise FormatError(f"{path.name} is more than the {limit} bytes read of it")
    return data


def is_storage_head(head: bytes) -> bool:
    """A sqlite3 or MCAP file, or a zstd frame (a compressed storage file)."""
    return storage_of(head) is not None or head.startswith(ZSTD_MAGIC)


def is_bag_folder(path: Path) -> bool:
    """A folder holding a rosbag2 `metadata.yaml`, or storage files directly (a bag whose
    writer died before writing `metadata.yaml`, whatever other folders it holds), unless
    one of its folders is a bag too: then it is a folder of recordings."""
    if not path.is_dir():
        return False
    if _has_metadata(path):
        return True
    if not any(_storage_files(path)):
        return False
    return not any(p.is_dir() and within(p, path) and _holds_a_bag(p) for p in path.iterdir())


def _has_metadata(folder: Path) -> bool:
    meta = folder / METADATA
    return within(meta, folder) and METADATA_KEY in _head(meta, 4096)


def _holds_a_bag(folder: Path) -> bool:
    """A sub-folder that is a bag: a metadata.yaml or storage files (one level only)."""
    try:
        return _has_metadata(folder) or any(_storage_files(folder))
    except OSError:  # unreadable: not a bag of ours
        return False


def _storage_files(folder: Path, outside: list[Path] | None = None) -> list[Path]:
    """The folder's storage files by name and first bytes; a link leading out of the folder
    is never opened (collected in `outside`)."""
    found = []
    for path in folder.iterdir():
        name = path.name.lower()
        if not (name.endswith(SUFFIXES) and path.is_file()):
            continue
        if not within(path, folder):
            if outside is not None:
                outside.append(path)
            continue
        if is_storage_head(_head(path)):
            found.append(path)
    return found


def _split_order(path: Path) -> tuple[int, str]:
    match = _SPLIT.search(path.name)
    return (int(match.group(1)) if match else 1 << 62, path.name)


def locate(path: Path) -> BagLayout:
    """The bag at `path` (a folder or one storage file). Of a folder, only files inside it
    are read: a listed name with `..`, an absolute one, or one whose links lead out of the
    folder is a problem naming it and is never opened; so are a name listed twice, a
    missing one and one that is not a storage file (the rest converts)."""
    if not path.is_dir():
        compressed = path.name.endswith(ZSTD) or _head(path).startswith(ZSTD_MAGIC)
        layout = BagLayout(path, False, None, [])
        layout.files.append(with_wal(path, path.name, compressed, layout.problems))
        return layout
    layout = BagLayout(path, True, None, [])
    meta_path = path / METADATA
    listed: list[str] = []
    unread = False
    if meta_path.is_file() and not within(meta_path, path):
        layout.problems.append(f"{METADATA} leads outside the bag's folder: not read")
    elif meta_path.exists():
        try:
            layout.metadata = read_regular(meta_path, MAX_METADATA)
        except FormatError as error:  # a FIFO, a device, a huge file: never read
            layout.problems.append(f"{error.message}: not read; {REINDEXED}")
            unread = True
        else:
            parsed, why = read_metadata(layout.metadata)
            if parsed is None:
                layout.problems.append(f"{METADATA} unreadable ({why}): {REINDEXED}")
            else:
                listed = list(parsed.relative_file_paths)
    if layout.metadata is None and not unread:
        layout.notes.append(f"no {METADATA} (a crashed bag?): files found by name")
    seen: set[Path] = set()
    refused: set[Path] = set()  # listed links leading out, said once
    for name in listed:
        found = _listed(path, name, layout.problems, refused)
        if found is None:
            continue
        if found in seen:
            layout.problems.append(f"{METADATA} lists {name} twice: converted once")
            continue
        seen.add(found)
        layout.files.append(with_wal(found, found.name, name.endswith(ZSTD), layout.problems))
    links: list[Path] = []
    by_name = _storage_files(path, links)
    for link in links:
        if link not in refused:
            layout.problems.append(f"{link.name} leads outside the bag's folder: not read")
    for extra in sorted(by_name, key=_split_order):
        if extra not in seen:
            if listed:
                layout.notes.append(f"{extra.name} is not listed in {METADATA}")
            layout.files.append(
                with_wal(extra, extra.name, extra.name.endswith(ZSTD), layout.problems)
            )
    if not layout.files:
        why = "".join(f"; {problem}" for problem in layout.problems)
        raise FormatError(f"{path}: a bag folder without storage files (.db3, .mcap){why}")
    return layout


def _listed(folder: Path, name: str, problems: list[str], refused: set[Path]) -> Path | None:
    """A listed file: relative to the folder, or (older writers named the folder too) by
    its last component; None, with a problem naming it, when it is not a storage file
    inside the folder (`refused`: the links found leading out)."""
    outside = f"{METADATA} lists {name}, outside the bag's folder: not read"
    if Path(name).is_absolute() or ".." in Path(name).parts:
        problems.append(outside)
        return None
    for candidate in (folder / name, folder / Path(name).name):
        if not candidate.is_file():
            continue
        if not within(candidate, folder):
            problems.append(outside)
            refused.add(candidate)
            return None
        if not is_storage_head(_head(candidate)):
            problems.append(f"{METADATA} lists {name}, not a sqlite3 or MCAP file: left out")
            return None
        return candidate
    problems.append(f"{METADATA} lists {name}, which is not in the folder")
    return None


def read_metadata(text: bytes) -> tuple[BagMetadata | None, str]:
    """metadata.yaml as rosbag2 reads it (strictly: `metadata.parse_metadata`), or None and
    what was wrong. The one reading `convert` and `info` share: a metadata.yaml convert
    takes, info never refuses; one it cannot read, both replace by the storage files."""
    try:
        return parse_metadata(text.decode("utf-8", "replace")), ""
    except (FormatError, UnsupportedError) as error:
        return None, error.message.removeprefix(f"{METADATA}: ").splitlines()[0]


def bagfile_information(metadata: bytes) -> dict[str, Any]:
    """The `rosbag2_bagfile_information` map of a metadata.yaml."""
    try:
        document = load_yaml(metadata.decode("utf-8"), safe=True)
    except UnicodeDecodeError as error:
        raise FormatError(f"not YAML: {error}") from None
    info = document.get(METADATA_KEY.decode()) if isinstance(document, dict) else None
    if not isinstance(info, dict):
        raise FormatError(f"no {METADATA_KEY.decode()} map")
    return info


def compression_of(texts: Iterable[bytes | str | None]) -> tuple[str, str]:
    """rosbag2's (compression_format, compression_mode) from the first of `texts` (metadata
    YAML: metadata.yaml, then each file's stored copy) that parses; ("", "") without one, or
    without PyYAML (a single storage file converts without the `ros` extra's YAML reader, and
    a compressed message still shows by its zstd magic)."""
    for text in texts:
        if not text:
            continue
        try:
            info = bagfile_information(text if isinstance(text, bytes) else text.encode())
        except (FormatError, UnsupportedError):
            continue
        return str(info.get("compression_format") or ""), str(info.get("compression_mode") or "")
    return "", ""


def sniff_file(head: bytes) -> bool:
    """One storage file given alone (whether a sqlite3 file holds rosbag2's tables is
    checked when it is opened), or one compressed per file: a zstd frame whose first bytes
    inflate to one."""
    if storage_of(head) is not None:
        return True
    if not head.startswith(ZSTD_MAGIC):
        return False
    try:
        import zstandard
    except ImportError:  # without the extra, a compressed storage file is not recognised
        return False

    try:
        inflated = zstandard.ZstdDecompressor().decompressobj().decompress(head)
    except zstandard.ZstdError:
        return False
    return storage_of(inflated[: len(SQLITE_MAGIC)]) is not None
