"""Write a file so that it appears under its name only when complete.

Nothing the user had is ever lost: output goes to `.<name>.partial` in the same
directory (so the final rename is atomic on POSIX and Windows), which is flushed,
fsynced and renamed over the target only on success; on any error it is removed. A partial
file left by a killed process (SIGKILL, power loss) has that same name, so the next run
names it instead of silently adding another.

A partial file (or folder) is locked (`flock`) while it is written: a second writer of the
same output finds it locked and is told another nanorec is writing it, whatever `overwrite`
says, instead of taking a live file for a killed one's. An output that exists is said one
way everywhere (`output_exists`).

A signal can end the process between any two steps, even between a partial file's creation
and the `try` that would remove it, so every partial file being written is also listed
(`claim` just before it is created, `release` once it is published, removed or deliberately
kept): `remove_unfinished`, which the command line runs on its way out, removes what is left.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import BinaryIO, Final

from nanorec.errors import OutputExistsError

try:
    import fcntl
except ImportError:  # Windows: no flock; a live partial file is taken for a left one
    fcntl = None  # type: ignore[assignment]

#: Partial files this process is writing (see the module docstring).
_UNFINISHED: set[Path] = set()
#: `write_hashed` joins smaller pieces up to this many bytes before a write.
_WRITE_BYTES: Final = 1 << 20


def claim(partial: Path) -> None:
    """List `partial` as being written (call it before creating the file)."""
    _UNFINISHED.add(partial)


def release(partial: Path) -> None:
    """`partial` was published, removed or is deliberately kept: no longer this process's."""
    _UNFINISHED.discard(partial)


def remove_unfinished() -> None:
    """Remove every partial file still being written: the process is ending early."""
    for partial in list(_UNFINISHED):
        with contextlib.suppress(FileNotFoundError):
            _remove(partial)
        release(partial)


def output_exists(path: object, more: str = "") -> OutputExistsError:
    """The one wording of an output that is already there (the command line says --force
    where the library says overwrite=True); `more`: what else the caller must say."""
    return OutputExistsError(f"{path} exists; pass overwrite=True to replace it{more}")


def lock(fd: int) -> None:
    """Hold an exclusive lock on the partial file (or folder) open as `fd` while it is
    written (released when `fd` is closed, or the process ends however it ends)."""
    if fcntl is not None:
        with contextlib.suppress(OSError):  # a file system without locks: written unlocked
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)


def is_locked(partial: Path) -> bool:
    """Whether another process holds `partial`'s lock: it is being written now."""
    if fcntl is None:
        return False
    try:
        fd = os.open(partial, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        os.close(fd)
    return False


def check_partial(partial: Path, *, overwrite: bool, left: str) -> None:
    """Before writing through `partial`: refuse when another nanorec is writing it (its
    lock is held), or when one left by an interrupted write is there and `overwrite` is
    false (`left`: what to do with it); with `overwrite`, remove the left one."""
    if not (partial.exists() or partial.is_symlink()):
        return
    if is_locked(partial):
        raise OutputExistsError(
            f"{partial} is being written by another nanorec now: wait for it, or write "
            "another output"
        )
    if not overwrite:
        raise OutputExistsError(f"{partial} exists, left by an interrupted write: {left}")
    _remove(partial)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()


@contextlib.contextmanager
def atomic_output(path: str | os.PathLike[str], *, overwrite: bool = False) -> Iterator[BinaryIO]:
    """Yield a binary file that replaces `path` when the block ends without error.

    Raises `OutputExistsError` before writing anything when `path` exists and
    `overwrite` is false.
    """
    target = Path(path)
    if target.exists() and not overwrite:
        raise output_exists(target)
    if not target.parent.is_dir():
        raise FileNotFoundError(errno.ENOENT, "no such directory", str(target.parent))
    temp = target.with_name(f".{target.name}.partial")
    check_partial(temp, overwrite=overwrite, left="remove it (overwrite=True removes it)")
    claim(temp)
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)  # umask applies
    except OSError:
        release(temp)  # not created by us (another writer's, or no permission)
        raise
    try:
        lock(fd)
        with os.fdopen(fd, "wb") as stream:
            yield stream
            stream.flush()
            os.fsync(stream.fileno())
        if target.exists() and not overwrite:  # appeared while we were writing
            raise output_exists(target)
        os.replace(temp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
        raise
    finally:
        release(temp)


@contextlib.contextmanager
def atomic_folder(path: str | os.PathLike[str], *, overwrite: bool = False) -> Iterator[Path]:
    """`atomic_output` for a folder of files (a ROS 2 bag): yield `.<name>.partial`, which
    replaces `path` when the block ends without error (a folder replaced whole)."""
    target = Path(path)
    if target.exists() and not overwrite:
        raise output_exists(target)
    if not target.parent.is_dir():
        raise FileNotFoundError(errno.ENOENT, "no such directory", str(target.parent))
    temp = target.with_name(f".{target.name}.partial")
    check_partial(temp, overwrite=overwrite, left="remove it (overwrite=True removes it)")
    claim(temp)
    held = -1
    try:
        temp.mkdir()
        held = os.open(temp, os.O_RDONLY)
        lock(held)
        yield temp
        if target.exists():
            if not overwrite:  # appeared while we were writing
                raise output_exists(target)
            _remove(target)
        os.replace(temp, target)
    except BaseException:
        shutil.rmtree(temp, ignore_errors=True)
        raise
    finally:
        if held >= 0:
            os.close(held)
        release(temp)


def write_hashed(
    path: str | os.PathLike[str], pieces: Iterable[bytes | memoryview], *, overwrite: bool = False
) -> tuple[int, str]:
    """Write `pieces` one after the other to `path` (through `atomic_output`); returns the
    size and sha256 of what was written, computed on the way (no second read). Small pieces
    are joined up to `_WRITE_BYTES` first: a write and a hash update per CARLA frame (~4 KB)
    were a quarter of exporting a small recording."""
    import hashlib  # OpenSSL's: ~5 ms that every command paid at start-up

    digest = hashlib.sha256()
    size = 0
    pending: list[bytes | memoryview] = []
    held = 0
    with atomic_output(path, overwrite=overwrite) as stream:

        def write(data: bytes | memoryview) -> None:
            stream.write(data)
            digest.update(data)

        for piece in pieces:
            length = len(piece)
            size += length
            if length >= _WRITE_BYTES:  # large: not copied
                if pending:
                    write(b"".join(pending))
                    pending, held = [], 0
                write(piece)
                continue
            # a view may not outlive the next step of `pieces` (its producer may release it)
            pending.append(piece if type(piece) is bytes else bytes(piece))
            held += length
            if held >= _WRITE_BYTES:
                write(b"".join(pending))
                pending, held = [], 0
        if pending:
            write(b"".join(pending))
    return size, digest.hexdigest()


def file_sha256(path: str | os.PathLike[str]) -> str:
    """The sha256 of a file, read 1 MiB at a time."""
    import hashlib

    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
