"""Outputs written to object storage (`-o s3://bucket/run.nanover.zip`, `gs://`): every
writer writes a local file exactly as it does for a local output (bounded memory, unchanged),
in a temporary folder, which is then uploaded a part at a time.

Nothing is visible at the key until the upload completes: a file larger than a part goes up as
a multipart upload, which S3's CompleteMultipartUpload publishes whole (a smaller one as one
PUT); on any error, Ctrl-C or SIGTERM the multipart upload is aborted (obstore's writer aborts
when its block ends by an exception) and the temporary folder removed. Once the whole file is
handed over, closing the writer sends the last part, waits for those in flight and completes:
a signal landing then is handled after it returns (obstore holds the thread meanwhile), so the
object is published, as a local output is once renamed, and the command exits 130 or 143
still (that window: the time to upload up to `PARALLEL` + 1 parts). The transport and its
configuration are the reader's (`remote.store_for`: `AWS_*`, `AWS_ENDPOINT_URL`...).

An object at the key is refused unless `overwrite`: checked before anything is written (a HEAD,
which also finds a store that cannot be reached or refuses the credentials before a long
conversion) and again before the upload completes. Object storage has no create-only
multipart upload, so a writer completing between that last check and ours is not seen.
A folder output (a ROS 2 bag, Parquet tables) is refused: a prefix cannot be published at
once, and a bag whose files appear one by one is a broken bag to whoever reads it meanwhile.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Final
from urllib.parse import urlsplit

from nanorec.archive import atomic
from nanorec.archive.remote import RemoteError, first_line, obstore_module, store_for
from nanorec.errors import UnsupportedError, UsageError

if TYPE_CHECKING:  # obstore is optional (the `remote` extra)
    from obstore.store import ObjectStore, RetryConfig

#: Bytes read from the local file and handed to the upload at a time; also the part size.
PART: Final = 8 << 20
#: Parts in flight at once: with `PART`, what an upload holds in memory (~40 MiB).
PARALLEL: Final = 4
#: The schemes an output may name (HTTP servers take no uploads).
SCHEMES: Final = ("s3", "gs", "gcs")
#: `progress(done, total)` in bytes.
Progress = Callable[[int, int], None]
#: obstore's retry settings for uploads (None: object_store's own, up to 10 retries in 3 min).
RETRY: RetryConfig | None = None


def _target(url: str) -> tuple[ObjectStore, str]:
    """The store and key of output `url`, refusing a scheme that takes no uploads."""
    if urlsplit(url).scheme.lower() not in SCHEMES:
        raise UsageError(f"{url}: an output by URL goes to object storage (s3://, gs://)")
    obstore_module("writing outputs to object storage")
    return store_for(url, RETRY)


def exists(url: str) -> bool:
    """Whether an object is at `url` (one HEAD request): `RemoteError` when the store cannot
    be reached or refuses the request."""
    store, key = _target(url)
    return _exists(store, key, url)


def _exists(store: ObjectStore, key: str, url: str) -> bool:
    from obstore.exceptions import BaseError, NotFoundError, PermissionDeniedError

    try:
        obstore_module().head(store, key)
    except (NotFoundError, FileNotFoundError):  # obstore 0.12 raises the builtin one
        return False
    except BaseError as error:
        more = ""
        if isinstance(error, PermissionDeniedError) or "403 Forbidden" in str(error):
            # S3's answer to a HEAD of a missing key without s3:ListBucket, too
            more = (
                " (credentials that may put but not list are refused a HEAD of a missing "
                "key: overwrite=True writes without asking)"
            )
        raise _refused(url, error, more) from None
    return True


def _refused(url: str, error: Exception, more: str = "") -> RemoteError:
    """The store's answer in one line, without the XML body S3 sends with it; `more`: what
    else to say."""
    said = first_line(error).split(": <?xml", 1)[0]
    if "169.254.169.254" in said:  # no keys in the environment: the instance's role was asked
        keys = "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"
        if "GCS" in said:
            keys = "GOOGLE_APPLICATION_CREDENTIALS"
        said = f"no credentials (set {keys}): {said}"
    return RemoteError(f"{url}: the store refused the upload: {said}{more}")


def upload(
    local: Path, url: str, *, overwrite: bool = False, progress: Progress | None = None
) -> int:
    """Upload file `local` to `url` in parts of `PART` bytes (`PARALLEL` in flight), published
    only when complete, aborted on any error; returns the size. `OutputExistsError` when an
    object is there (before or just before completing) and `overwrite` is false.
    `progress(done, total)`: bytes handed to the upload so far."""
    from obstore.exceptions import BaseError, NotFoundError

    store, key = _target(url)
    if not overwrite and _exists(store, key, url):
        raise atomic.output_exists(url)
    obstore = obstore_module()
    size, total = 0, local.stat().st_size
    try:
        with (
            local.open("rb") as source,
            obstore.open_writer(store, key, buffer_size=PART, max_concurrency=PARALLEL) as sink,
        ):
            for block in iter(lambda: source.read(PART), b""):
                sink.write(block)
                size += len(block)
                if progress is not None:
                    progress(size, total)
            if not overwrite and _exists(store, key, url):  # appeared while we were uploading
                raise atomic.output_exists(url, " (it appeared while uploading)")
    except (NotFoundError, FileNotFoundError):  # a 404 answering the upload's first request
        raise RemoteError(f"{url}: the store refused the upload: no such bucket") from None
    except BaseError as error:
        raise _refused(url, error) from None
    except OSError as error:  # obstore's writer reports a refused part as a bare IOError
        if error.errno is not None or error.filename is not None:
            raise  # the local file's
        raise _refused(url, error) from None
    return size


@contextlib.contextmanager
def staged(
    url: str, *, overwrite: bool = False, verb: str = "", progress: Progress | None = None
) -> Iterator[Path]:
    """Yield a local path (in a new temporary folder, named as `url`'s last segment) to write
    the output at; when the block ends without error, upload it to `url` (see `upload`). The
    folder is removed however the block ends (and, like a partial file, on the command line's
    way out after a signal: `atomic.claim`). `verb`: the command writing it, for its errors;
    `progress`: the upload's (see `upload`)."""
    if not overwrite and exists(url):
        raise atomic.output_exists(url)
    name = url.rstrip("/").rpartition("/")[2]
    folder = Path(tempfile.mkdtemp(prefix="nanorec-upload-"))
    atomic.claim(folder)
    try:
        local = folder / name
        yield local
        if local.is_dir():
            raise UnsupportedError(
                f"{url}: {verb or 'this output'} writes a folder here (a ROS 2 bag, Parquet "
                "tables), which object storage cannot publish at once: write it to a local "
                "folder and copy that"
            )
        if local.exists():
            upload(local, url, overwrite=overwrite, progress=progress)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        atomic.release(folder)


def join(folder: str, relative: str) -> str:
    """The URL of `relative` (a POSIX path) under the URL `folder` (a batch's prefix)."""
    return folder.rstrip("/") + "/" + relative.lstrip("/")


__all__ = ["PARALLEL", "PART", "SCHEMES", "exists", "join", "staged", "upload"]
