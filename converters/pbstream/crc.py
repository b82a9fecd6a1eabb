"""Every gzip member inflated whole beside the conversion, so a damaged record is reported
when it is converted, not first when it is read.

Convert inflates only the first bytes of a member (what the index needs) and keeps the
member as it is; the CRC-32 and ISIZE of the rest are checked here, on a second thread
(zlib releases the GIL, so on two cores this costs the conversion little), in batches of
records handed over through a bounded queue.
"""

from __future__ import annotations

import queue
import threading
from typing import Any, Final

from nanorec.errors import FormatError

from .stream import inflate_member

_BATCH: Final = 256
#: (record number, offset of its frame, member start, member end)
Item = tuple[int, int, int, int]


class MemberCheck(threading.Thread):
    """`add` records as they are converted; `problems()` waits and gives those whose member
    does not inflate whole: (record number, frame offset, reason)."""

    def __init__(self, buf: Any) -> None:
        super().__init__(daemon=True, name="pbstream-crc")
        self.buf = buf
        self.batch: list[Item] = []
        self.queue: queue.Queue[list[Item] | None] = queue.Queue(maxsize=64)
        self.found: list[tuple[int, int, str]] = []
        self.start()

    def add(self, number: int, offset: int, start: int, end: int) -> None:
        self.batch.append((number, offset, start, end))
        if len(self.batch) >= _BATCH:
            self.queue.put(self.batch)
            self.batch = []

    def run(self) -> None:
        while (batch := self.queue.get()) is not None:
            for number, offset, start, end in batch:
                try:
                    inflate_member(bytes(self.buf[start:end]), start)
                except FormatError as error:
                    self.found.append((number, offset, error.message))
                except (ValueError, BufferError):  # the mapping closed under us: stop
                    return

    def __enter__(self) -> MemberCheck:
        return self

    def __exit__(self, *exc: object) -> None:
        """Ends the thread whatever happened (a failed conversion leaves none behind)."""
        if self.is_alive():
            self.problems()

    def problems(self) -> list[tuple[int, int, str]]:
        if self.batch:
            self.queue.put(self.batch)
            self.batch = []
        self.queue.put(None)
        self.join()
        return sorted(self.found)
