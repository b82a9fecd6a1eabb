"""The HTTP server of `nanorec view`: the standard library's `ThreadingHTTPServer` on
127.0.0.1, answering `/api/...` from `ViewApi` and the page from the package's `static/`
files (read with `importlib.resources`, so an installed wheel serves them too).

Only loopback: the page shows a recording's content to whoever can reach the port; and
only to requests naming 127.0.0.1 or localhost as their host, so that a web page elsewhere
cannot read it through a name it points at 127.0.0.1 (DNS rebinding).
"""

from __future__ import annotations

import webbrowser
from collections.abc import Callable
from functools import cache
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import Any
from urllib.parse import parse_qs, urlsplit

from nanorec.errors import UsageError
from nanorec.view.api import ViewApi

HOST = "127.0.0.1"
#: The page's files (nothing else under static/ is served), by URL path.
ASSETS = {
    "/": ("index.html", "text/html; charset=utf-8"),
    "/index.html": ("index.html", "text/html; charset=utf-8"),
    "/app.js": ("app.js", "text/javascript; charset=utf-8"),
    "/style.css": ("style.css", "text/css; charset=utf-8"),
}


@cache
def asset(name: str) -> bytes:
    """The bytes of static file `name`, as shipped in the package."""
    return resources.files("nanorec.view.static").joinpath(name).read_bytes()


def page_weight() -> int:
    """Bytes of every file the page loads."""
    return sum(len(asset(name)) for name in {name for name, _ in ASSETS.values()})


class ViewServer(ThreadingHTTPServer):
    """Serves one recording's page until `shutdown()`."""

    daemon_threads = True  # a browser's kept-alive connection must not hold the exit

    def __init__(self, api: ViewApi, port: int = 0) -> None:
        if not 0 <= port <= 65535:
            raise UsageError(f"--port takes 0 to 65535 (0: a free one), not {port}")
        self.api = api
        super().__init__((HOST, port), _Handler)

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.server_address[1]}/"

    def handle_error(self, request: object, client_address: object) -> None:
        """A connection the browser dropped is no news (the default prints a traceback)."""


class _Handler(BaseHTTPRequestHandler):
    server: ViewServer
    server_version = "nanorec-view"
    protocol_version = "HTTP/1.1"  # keep-alive: a seek is one request on an open socket
    # headers and body are two writes: with Nagle's algorithm the body waits for the
    # browser's delayed ACK of the headers, 40 ms a seek (measured: fetch median 52 -> 10 ms)
    disable_nagle_algorithm = True

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        name = (self.headers.get("Host") or "").rpartition(":")[0]  # any port: a tunnel's
        if name not in (HOST, "localhost"):
            # a page elsewhere whose name was made to point here (DNS rebinding) gets nothing
            body = b'{"error":"this server answers 127.0.0.1 only","status":403}'
            self._send(HTTPStatus.FORBIDDEN, body, "application/json")
        elif url.path.startswith("/api/"):
            answer = self.server.api.answer(url.path, parse_qs(url.query))
            self._send(answer.status, answer.body, "application/json")
        elif url.path in ASSETS:
            name, mime = ASSETS[url.path]
            self._send(HTTPStatus.OK, asset(name), mime)
        else:
            body = b'{"error":"not found","status":404}'
            self._send(HTTPStatus.NOT_FOUND, body, "application/json")

    def _send(self, status: int, body: bytes, mime: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", mime)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: a request per seek would flood the terminal."""


def serve(
    recording: Any,
    *,
    port: int = 0,
    browser: bool = True,
    ready: Callable[[str], None] = print,
) -> None:
    """Serve `recording`'s page on 127.0.0.1:`port` (0: a free port) until Ctrl-C (which
    returns normally); `ready(url)` is called once it listens, then the browser opened."""
    server = ViewServer(ViewApi(recording), port)
    try:
        ready(server.url)
        if browser:
            webbrowser.open(server.url)
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
