"""`WriteBehind`: a file's appends written by a second thread while the caller goes on.

It exists so that the kernel's copy of a fast writer's output (a fifth of a stored CARLA
conversion's time, `os.writev` into the page cache) overlaps the building of the next bytes
instead of following it: `os.writev` releases the GIL, so on a second core it costs the
converting thread nothing. Batches are written in the order given, at most `depth` of them
waiting or being written (bounded memory: `ZipOutput` hands over ~1 MiB at a time); `drain`
waits for all of them, and raises the first error met (disk full...) there or at the next
`submit`. The buffers of a batch must not change until it is written (the writer's message
buffers are immutable bytes, or views of arrays its callers no longer change).

`write_all` is the same write done on the calling thread (short writes completed).
"""

from __future__ import annotations

import os
import threading
from collections import deque
from collections.abc import Sequence
from typing import Final

#: Buffers per `os.writev` call (under every system's IOV_MAX).
IOV_BATCH: Final = 512


def write_all(fd: int, parts: Sequence[bytes | memoryview]) -> None:
    """Append `parts` to `fd`, one `os.writev` per `IOV_BATCH` of them (a short write
    finished the plain way)."""
    for start in range(0, len(parts), IOV_BATCH):
        batch = parts[start : start + IOV_BATCH]
        done = os.writev(fd, batch)
        size = sum(len(part) for part in batch)
        if done < size:
            with memoryview(b"".join(batch)) as view:
                while done < size:
                    done += os.write(fd, view[done:])


class WriteBehind:
    """Appends batches of buffers to `fd` on a thread of its own (started at the first
    `submit`), in order, at most `depth` batches ahead of the caller."""

    def __init__(self, fd: int, depth: int = 2) -> None:
        self._fd = fd
        self._depth = depth
        self._cond = threading.Condition()
        self._queue: deque[list[bytes | memoryview]] = deque()  # the first one being written
        self._error: OSError | None = None
        self._closing = False
        self._thread: threading.Thread | None = None

    def submit(self, batch: list[bytes | memoryview]) -> None:
        """Queue `batch` (the caller's list is not kept: hand over a list it won't change);
        waits while `depth` batches are queued. Raises an earlier batch's `OSError`."""
        with self._cond:
            while len(self._queue) >= self._depth and self._error is None:
                self._cond.wait()
            self._raise()
            self._queue.append(batch)
            self._cond.notify_all()
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="nanorec-write", daemon=True)
            self._thread.start()

    def drain(self) -> None:
        """Wait until every batch is written; raises the first `OSError` met."""
        with self._cond:
            while self._queue and self._error is None:
                self._cond.wait()
            self._raise()

    def close(self) -> None:
        """Stop the thread once the queued batches are written (or one failed); errors are
        not raised (`drain` first to see them). Idempotent."""
        with self._cond:
            self._closing = True
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def _raise(self) -> None:
        error = self._error
        if error is not None:
            raise OSError(error.errno, error.strerror, error.filename) from error

    def _run(self) -> None:
        cond = self._cond
        queue = self._queue
        while True:
            with cond:
                while not queue and not self._closing:
                    cond.wait()
                if not queue:
                    return
                batch = queue[0]
            try:
                write_all(self._fd, batch)
            except OSError as error:
                with cond:
                    self._error = error
                    queue.clear()  # nothing after a failed write: the file would have a gap
                    cond.notify_all()
                return
            with cond:
                queue.popleft()
                cond.notify_all()


__all__ = ["IOV_BATCH", "WriteBehind", "write_all"]
