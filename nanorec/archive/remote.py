"""Archives read in place by URL (`s3://`, `gs://`, `https://`, `http://` on loopback): the
`ByteSource` over range requests that `ArchiveFile` reads through a `RangeBuffer`.

The transport is obstore (the `remote` extra): the Rust `object_store` that the mcap CLI uses,
S3, GCS and HTTP in one client, configured as the cloud's own tools are (`AWS_*` variables,
`AWS_ENDPOINT_URL` for an S3-compatible endpoint, `GOOGLE_*` for GCS), nothing of nanorec's
own. Opening costs one request: the archive's last `TAIL` bytes by a suffix range, whose answer
also gives the object's size and ETag. Every later range is asked `If-Match` that ETag (or
checked against the size when the server gives none), so an object replaced under a reader is
an error, never a mix of two archives; a server that ignores `Range` is refused at once."""

from __future__ import annotations

import fnmatch
import ipaddress
import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from types import ModuleType
from typing import TYPE_CHECKING, Final, TypedDict
from urllib.parse import urlsplit

from nanorec.errors import NanorecError, TruncatedError, UnsupportedError, UsageError

if TYPE_CHECKING:  # obstore is optional (the `remote` extra)
    from obstore import GetOptions, GetResult
    from obstore.store import ClientConfig, ObjectStore, RetryConfig

#: The suffix fetched at open: the zip's end records, central directory and (usually) the
#: description of an archive of up to a few hundred thousand messages.
TAIL: Final = 256 << 10
#: Range requests in flight at once for one read.
PARALLEL: Final = 8


class RemoteError(NanorecError):
    """A remote archive could not be read by ranges: the server ignores `Range`, the object
    changed while it was read, or the store refused a request."""


def obstore_module(doing: str = "reading archives by URL") -> ModuleType:
    """obstore, or `UnsupportedError` saying that `doing` needs the `remote` extra."""
    try:
        import obstore
    except ImportError:
        raise UnsupportedError(f"{doing} needs obstore: pip install 'nanorec[remote]'") from None
    return obstore


class _FromUrl(TypedDict, total=False):
    """The keywords `store_for` gives obstore's `from_url` (an S3 store's take `endpoint`)."""

    client_options: ClientConfig | None
    retry_config: RetryConfig
    endpoint: str


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def store_for(url: str, retry: RetryConfig | None = None) -> tuple[ObjectStore, str]:
    """The obstore store holding `url`'s object and the object's path in it (the reader's
    and `upload`'s one configuration); `retry`: obstore's `RetryConfig`, else its own."""
    obstore = obstore_module()
    from obstore.store import HTTPStore, from_url

    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    folder, _, name = url.rpartition("/")
    if not name or not parts.netloc or not parts.path.strip("/"):
        raise UsageError(f"{url} names no object (expected SCHEME://HOST/.../NAME)")
    if scheme == "http" and not _loopback(parts.hostname or ""):
        raise UsageError(f"{url}: plain http is read only from this machine; use https")
    if scheme in ("http", "https"):
        client: ClientConfig | None = {"allow_http": True} if scheme == "http" else None
        return HTTPStore.from_url(folder, client_options=client), name
    if scheme == "gcs":
        folder = "gs" + folder[3:]
    options: ClientConfig | None = None
    endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
    if scheme == "s3" and endpoint and urlsplit(endpoint).scheme == "http":
        if not _loopback(urlsplit(endpoint).hostname or ""):
            raise UsageError(f"AWS_ENDPOINT_URL {endpoint}: plain http only on this machine")
        options = {"allow_http": True}
    kwargs: _FromUrl = {"client_options": options}
    if retry is not None:
        kwargs["retry_config"] = retry
    if scheme == "s3" and endpoint:
        kwargs["endpoint"] = endpoint
    del obstore
    return from_url(folder, **kwargs), name


def glob_urls(pattern: str) -> list[str]:
    """The objects whose URLs match `pattern` (`*`, `?`, `[...]` in its last segment, as
    `fnmatch`), sorted: one listing of the store under the pattern's folder."""
    folder, _, name = pattern.rpartition("/")
    if any(char in folder for char in "*?["):
        raise UsageError(f"{pattern}: a pattern is taken in the last segment only")
    store, _ = store_for(folder + "/x")
    listed = obstore_module().list(store, prefix=None).collect()
    names = sorted(item["path"] for item in listed if "/" not in item["path"])
    return [f"{folder}/{found}" for found in names if fnmatch.fnmatchcase(found, name)]


def first_line(error: Exception) -> str:
    """The sentence of an obstore error, without its debug dump."""
    text = str(error)
    return text.splitlines()[0] if text else type(error).__name__


class RemoteSource:
    """The object at `url` read by ranges (a `ByteSource`), `requests` and `bytes_read`
    counted. Opening fetches its last `TAIL` bytes (`tail`)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._obstore = obstore_module()
        self._store, self._path = store_for(url)
        self.requests = 0
        self.bytes_read = 0
        try:
            result = self._get({"range": {"suffix": TAIL}})
        except RemoteError as error:
            if " 416 " not in error.message:
                raise
            # a suffix range of an empty object is not satisfiable: say what it means
            raise TruncatedError(f"{url} is empty", offset=0, actual=0) from None
        meta = result.meta
        self._size: int = int(meta["size"])
        self._etag: str | None = meta.get("e_tag")
        start, stop = result.range
        self.tail = bytes(result.bytes())
        self.bytes_read += len(self.tail)
        if stop - start != len(self.tail) or len(self.tail) > min(TAIL, self._size):
            raise self._ignored_range(len(self.tail))
        self._pool: ThreadPoolExecutor | None = None

    @property
    def size(self) -> int:
        return self._size

    def read(self, offset: int, length: int) -> bytes:
        if length <= 0 or offset >= self._size:
            return b""
        stop = min(self._size, offset + length)
        options: GetOptions = {"range": (offset, stop)}
        if self._etag:
            options["if_match"] = self._etag
        result = self._get(options)
        if int(result.meta["size"]) != self._size:
            raise self._changed(f"its size is now {result.meta['size']}, was {self._size}")
        data = bytes(result.bytes())
        self.bytes_read += len(data)
        if len(data) != stop - offset:
            raise self._ignored_range(len(data), offset, stop - offset)
        return data

    def read_many(self, ranges: Sequence[tuple[int, int]]) -> list[bytes]:
        if len(ranges) <= 1:
            return [self.read(offset, length) for offset, length in ranges]
        if self._pool is None:
            self._pool = ThreadPoolExecutor(PARALLEL, thread_name_prefix="nanorec-range")
        return list(self._pool.map(lambda r: self.read(*r), ranges))

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False)
            self._pool = None

    def _get(self, options: GetOptions) -> GetResult:
        from obstore.exceptions import (
            BaseError,
            NotFoundError,
            NotSupportedError,
            PreconditionError,
        )

        self.requests += 1
        try:
            result: GetResult = self._obstore.get(self._store, self._path, options=options)
        except NotFoundError:
            raise FileNotFoundError(f"{self.url}: no such object") from None
        except PreconditionError:
            raise self._changed("its ETag no longer matches") from None
        except NotSupportedError as error:  # obstore's word for a 200 answering a range
            if "range" not in str(error).lower():
                raise RemoteError(f"{self.url}: {first_line(error)}") from None
            raise self._ignored_range(-1) from None
        except BaseError as error:
            raise RemoteError(f"{self.url}: {first_line(error)}") from None
        return result

    def _changed(self, why: str) -> RemoteError:
        return RemoteError(f"{self.url} changed while it was read ({why}): open it again")

    def _ignored_range(self, got: int, offset: int = -1, wanted: int = TAIL) -> RemoteError:
        what = "a range" if offset < 0 else f"{wanted} bytes at {offset}"
        return RemoteError(
            f"{self.url}: the server ignores Range requests (asked {what}, "
            f"{'it answered with the whole object' if got < 0 else f'got {got} bytes'}): an "
            "archive is read in place "
            "only from a server that serves ranges; download it first",
            offset=None if offset < 0 else offset,
        )


__all__ = [
    "TAIL",
    "RemoteError",
    "RemoteSource",
    "first_line",
    "glob_urls",
    "obstore_module",
    "store_for",
]
