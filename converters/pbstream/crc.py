"""Every gzip member inflated whole beside the conversion, so a damaged record is reported
when it is converted, not first when it is read.

Convert inflates only the first bytes of a member (what the index needs) and keeps the
member as it is; the CRC-32 and ISIZE of the rest are checked here, on a second thread
(zlib releases the GIL, so on two cores this costs the conversion little), in batches of
records handed over through a bounded queue. Only members the converting thread did not
inflate whole come here (`scan`: the large ones), each checked in one ISA-L call when it
passes (`scan.check_whole`), by `inflate_member` (which says what is wrong) when it does not.
"""

from __future__ import annotations

import mmap
import queue
import threading
from typing import Final

from nanorec.errors import FormatError

from .scan import check_whole
from .stream import declared_size, inflate_member

#: Members declaring more are checked by `inflate_member` alone (in steps, keeping nothing).
_WHOLE_UP_TO: Final = 16 << 20

#: A batch is handed over at this many records or member bytes, whichever comes first (by
#: count alone, a file's few large members waited until most of it was converted, and the
#: conversion then waited ~0.2 s a 100 MB file for their check at its end).
_BATCH: Final = 256
_BATCH_BYTES: Final = 1 << 20
#: (record number, offset of its frame, member start, member end)
Item = tuple[int, int, int, int]


class MemberCheck(threading.Thread):
    """`add` records as they are converted; `problems()` waits and gives those whose member
    does not inflate whole: (record number, frame offset, reason)."""

    def __init__(self, buf: mmap.mmap) -> None:
        super().__init__(daemon=True, name="pbstream-crc")
        self.buf = buf
        self.batch: list[Item] = []
        self.batch_bytes = 0
        self.queue: queue.Queue[list[Item] | None] = queue.Queue(maxsize=64)
        self.found: list[tuple[int, int, str]] = []
        self.start()

    def add(self, number: int, offset: int, start: int, end: int) -> None:
        self.batch.append((number, offset, start, end))
        self.batch_bytes += end - start
        if len(self.batch) >= _BATCH or self.batch_bytes >= _BATCH_BYTES:
            self.queue.put(self.batch)
            self.batch = []
            self.batch_bytes = 0

    def run(self) -> None:
        while (batch := self.queue.get()) is not None:
            for number, offset, start, end in batch:
                try:
                    member = self.buf[start:end]
                    declared = declared_size(member)
                    if declared <= _WHOLE_UP_TO and check_whole(member, declared):
                        continue
                    inflate_member(bytes(member), start)
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
