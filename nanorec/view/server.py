"""The HTTP server of `nanorec view`: the standard library's `ThreadingHTTPServer` on
127.0.0.1, answering `/api/...` from `ViewApi` and the page from the package's `static/`
files (read with `importlib.resources`, so an installed wheel serves them too).

Only loopback: the page shows a recording's content to whoever can reach the port; and
only to requests naming 127.0.0.1 or localhost as their host, so that a web page elsewhere
cannot read it through a name it points at 127.0.0.1 (DNS rebinding).
"""

from __future__ import annotations

import socket
import webbrowser
from collections.abc import Callable
from functools import cache
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import Any
from urllib.parse import parse_qs, urlsplit

from nanorec.contract import Recording
from nanorec.view.api import ViewApi
from nanorec.view.listen import HOST, listen, url_of

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
    """Serves one recording's page until `shutdown()`, on `sock` (a socket `listen` made,
    owned from then on) or else on a socket listening on `port`."""

    daemon_threads = True  # a browser's kept-alive connection must not hold the exit

    def __init__(self, api: ViewApi, port: int = 0, sock: socket.socket | None = None) -> None:
        self.api = api
        listening = listen(port) if sock is None else sock
        try:
            super().__init__(listening.getsockname(), _Handler, bind_and_activate=False)
        except BaseException:
            listening.close()
            raise
        self.socket.close()  # the unbound one TCPServer made: `listening` serves instead
        self.socket = listening
        self.server_name, self.server_port = HOST, self.server_address[1]

    @property
    def url(self) -> str:
        return url_of(self.socket)

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
    recording: Recording | None,
    *,
    port: int = 0,
    browser: bool = True,
    ready: Callable[[str], None] = print,
    opening: Callable[[], Recording] | None = None,
    sock: socket.socket | None = None,
) -> None:
    """Serve `recording`'s page on 127.0.0.1:`port` (0: a free port), or on `sock` (see
    `ViewServer`), until Ctrl-C (which returns normally); `ready(url)` is called once it
    listens, then the browser opened.

    With `opening` (`recording` None), the recording is what `opening()` returns, opened
    while the browser loads the page (`ViewApi.opening`); what opening it raises stops the
    server and is raised here."""
    if opening is None:
        server = ViewServer(ViewApi(recording), port, sock)
    else:
        server = ViewServer(ViewApi(None), port, sock)  # the port taken before a thread starts
        server.api = ViewApi.opening(opening, then=server.shutdown)
    try:
        ready(server.url)
        if browser:
            webbrowser.open(server.url)
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    if server.api.failure is not None:
        raise server.api.failure
