"""Write a file so that it appears under its name only when complete.

Nothing the user had is ever lost: output goes to a temporary file in the same
directory (so the final rename is atomic on POSIX and Windows), which is flushed,
fsynced and renamed over the target only on success; on any error it is removed.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from nanorec.errors import OutputExistsError


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def atomic_output(path: str | os.PathLike[str], *, overwrite: bool = False) -> Iterator[BinaryIO]:
    """Yield a binary file that replaces `path` when the block ends without error.

    Raises `OutputExistsError` before writing anything when `path` exists and
    `overwrite` is false.
    """
    target = Path(path)
    if target.exists() and not overwrite:
        raise OutputExistsError(f"{target} exists (use --force to overwrite it)")
    fd, temp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".partial", dir=target.parent)
    try:
        os.chmod(temp, 0o666 & ~_umask())  # mkstemp makes 0600; give the usual permissions
        with os.fdopen(fd, "wb") as stream:
            yield stream
            stream.flush()
            os.fsync(stream.fileno())
        if target.exists() and not overwrite:  # appeared while we were writing
            raise OutputExistsError(f"{target} exists (use --force to overwrite it)")
        os.replace(temp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
        raise
