"""The listening socket of `nanorec view`, bound before its server exists.

A browser's connection waits in the socket's backlog until the server answers it, so the
URL can be printed as soon as the socket listens: the HTTP server's modules (`http.server`
and what it imports: ~25 ms) and the format's commands are then imported while the browser
starts loading the page. Only the standard library's `socket` is imported here.
"""

from __future__ import annotations

import socket

from nanorec.errors import UsageError

HOST = "127.0.0.1"
#: Connections waiting for the server: a page asks its files and answers a few at a time.
BACKLOG = 16


def listen(port: int = 0) -> socket.socket:
    """A TCP socket listening on 127.0.0.1:`port` (0: a free one). Raises `UsageError` for a
    port out of range, `OSError` for one that is taken."""
    if not 0 <= port <= 65535:
        raise UsageError(f"--port takes 0 to 65535 (0: a free one), not {port}")
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        # as http.server's HTTPServer: a port just left by a stopped view is taken again
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((HOST, port))
        sock.listen(BACKLOG)
    except BaseException:
        sock.close()
        raise
    return sock


def url_of(sock: socket.socket) -> str:
    """The page's URL on the listening `sock`."""
    return f"http://{HOST}:{sock.getsockname()[1]}/"
