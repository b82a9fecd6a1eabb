"""Two real HTTP endpoints on 127.0.0.1 for reading archives in place: a small Range-capable
file server that logs each request and the bytes it sent (`RangeServer`, optionally one that
ignores `Range`), and moto's S3 server (`moto_s3`), whose traffic the reader's own counters
measure (`RemoteSource.requests`, `bytes_read`)."""

from __future__ import annotations

import contextlib
import os
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

_RANGE = re.compile(r"^bytes=(\d*)-(\d*)$")


@dataclass
class Logged:
    """One request the server answered."""

    method: str
    path: str
    range: str | None
    status: int
    sent: int


@dataclass
class RangeServer:
    """Serves `root` on 127.0.0.1: GET/HEAD, one byte range (`bytes=a-b`, `a-`, `-n`), an ETag
    (size and mtime) honoured by If-Match; `ignore_range` answers 200 with the whole body."""

    root: Path
    ignore_range: bool = False
    log: list[Logged] = field(default_factory=list)
    port: int = 0

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.port}/{name}"

    @property
    def requests(self) -> int:
        return len(self.log)

    @property
    def sent(self) -> int:
        return sum(entry.sent for entry in self.log)

    def reset(self) -> None:
        self.log.clear()

    @contextlib.contextmanager
    def running(self) -> Iterator[RangeServer]:
        server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        server.daemon_threads = True
        self.port = server.server_address[1]
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            server.shutdown()
            server.server_close()

    def _handler(self) -> Any:
        owner = self
        lock = threading.Lock()

        class Handler(SimpleHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_HEAD(self) -> None:
                self._serve(body=False)

            def do_GET(self) -> None:
                self._serve(body=True)

            def _serve(self, *, body: bool) -> None:
                path = owner.root / self.path.lstrip("/").split("?")[0]
                asked = self.headers.get("Range")
                if not path.is_file():
                    self._answer(404, b"", asked, body)
                    return
                stat = path.stat()
                size = stat.st_size
                etag = f'"{size:x}-{stat.st_mtime_ns:x}"'
                match = self.headers.get("If-Match")
                if match and match not in ("*", etag):
                    self._answer(412, b"", asked, body)
                    return
                start, stop, status = 0, size, 200
                found = _RANGE.match(asked or "")
                if found and not owner.ignore_range:
                    first, last = found.groups()
                    if first:
                        start = int(first)
                        stop = min(size, int(last) + 1) if last else size
                    else:
                        start = max(0, size - int(last))
                    if start >= size:
                        self._answer(416, b"", asked, body, {"Content-Range": f"bytes */{size}"})
                        return
                    status = 206
                with path.open("rb") as handle:
                    handle.seek(start)
                    data = handle.read(stop - start)
                headers = {"ETag": etag, "Accept-Ranges": "bytes"}
                if status == 206:
                    headers["Content-Range"] = f"bytes {start}-{stop - 1}/{size}"
                self._answer(status, data, asked, body, headers)

            def _answer(
                self,
                status: int,
                data: bytes,
                asked: str | None,
                body: bool,
                headers: dict[str, str] | None = None,
            ) -> None:
                self.send_response(status)
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                # logged before the body goes: a client has its answer only after the log
                sent = len(data) if body else 0
                with lock:
                    owner.log.append(Logged(self.command, self.path, asked, status, sent))
                self.end_headers()
                if body and data:
                    with contextlib.suppress(OSError):  # a client that hung up early
                        self.wfile.write(data)

        return Handler


@contextlib.contextmanager
def moto_s3() -> Iterator[str]:
    """moto's S3 server on 127.0.0.1, with the environment an S3 client reads pointed at it
    (`AWS_ENDPOINT_URL`, dummy credentials); yields the endpoint."""
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    saved = {key: os.environ.get(key) for key in _AWS_ENV}
    os.environ.update(
        AWS_ENDPOINT_URL=endpoint,
        AWS_ACCESS_KEY_ID="testing",
        AWS_SECRET_ACCESS_KEY="testing",
        AWS_DEFAULT_REGION="us-east-1",
        AWS_REGION="us-east-1",
    )
    try:
        yield endpoint
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        server.stop()


_AWS_ENV = (
    "AWS_ENDPOINT_URL",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_DEFAULT_REGION",
    "AWS_REGION",
)


def put_object(endpoint: str, bucket: str, key: str, data: bytes) -> None:
    """Create `bucket` (if new) and put `data` at `key`, through boto3 (moto's dependency)."""
    import boto3

    client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
    with contextlib.suppress(client.exceptions.BucketAlreadyOwnedByYou):
        client.create_bucket(Bucket=bucket)
    client.put_object(Bucket=bucket, Key=key, Body=data)
