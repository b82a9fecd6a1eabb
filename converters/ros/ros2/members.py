"""The members a ROS 2 archive holds beside its messages (see `convert.py`), named once.

Why a module: `convert.py` writes them, and what reads an archive back (`meta.py`,
`pieces.py`, `adopt.py`, `export.py`) needs their names without importing the conversion
and both storages' readers.
"""

from __future__ import annotations

import hashlib
from typing import Final

META_MEMBER: Final = "ros2.msgpack.zlib"
FILE_MEMBER: Final = "ros2-file.bin"
RANK_MEMBER: Final = "ros2-rank.bin"
TIME_MEMBER: Final = "ros2-time.bin"
FILE_DTYPE: Final = "<u2"
RANK_DTYPE: Final = "<u4"
META_VERSION: Final = 1


def skeleton_member(index: int) -> str:
    return f"ros2-skeleton-{index}.bin"


def zstd_member(index: int) -> str:
    return f"ros2-zstd-{index}.bin"


def folder_sha256(files: list[tuple[str, str]]) -> str:
    """A bag folder's hash: of each file's name and sha256, in bag order."""
    digest = hashlib.sha256()
    for name, sha in files:
        digest.update(f"{name}\0{sha}\n".encode())
    return digest.hexdigest()
