"""Archives named by URL (`s3://`, `gs://`, `https://`, `http://`): how a URL is told from a
local path and kept where a path is expected. Apart from `remote` (the range reads), so that
telling costs nothing: the registry and the command line ask it of every input."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import PurePosixPath
from typing import Final
from urllib.parse import urlsplit

_URL: Final = re.compile(r"^(s3|gs|gcs|https?)://", re.IGNORECASE)


def is_url(path: object) -> bool:
    """Whether `path` names an archive by URL rather than a local path."""
    return isinstance(path, UrlPath) or (isinstance(path, str) and bool(_URL.match(path)))


class UrlPath(PurePosixPath):
    """A URL where an archive's `path` is kept: `str()` and `os.fspath()` give the URL back
    (what reopening it needs), `.name` its last segment (what titles show)."""

    url: str = ""

    def __str__(self) -> str:
        return self.url or super().__str__()

    def __fspath__(self) -> str:
        return str(self)

    def __reduce__(self) -> tuple[Callable[[str], UrlPath], tuple[str]]:
        return url_path, (str(self),)  # the URL kept across processes (a batch's workers)


def url_path(url: str | UrlPath) -> UrlPath:
    """`url` as a `UrlPath`."""
    if isinstance(url, UrlPath):
        return url
    path = UrlPath(urlsplit(url).path or "/")
    path.url = url
    return path
