"""Reading a CARLA source file beside its conversion: its sha256 on a second thread, and
where a damaged stretch ends (the next FrameStart that continues the recording)."""

from __future__ import annotations

import contextlib
import hashlib
import io
import mmap
import threading
from pathlib import Path
from typing import Any

from .frames import Frame
from .message import FRAME_START, PACKET_HEADER

FRAME_START_ID = 0  # the same in every release (spec §4)


class FileHash:
    """The sha256 of the source file's first `size` bytes (the mapped ones), computed by a
    second thread while this one converts (hashlib releases the GIL): hashing was a fifth of
    the conversion time. The archive records it so that `export` can say "identical". It
    hashes through a map of its own, each 8 MiB given back once hashed, so that the pages it
    gets ahead of the conversion do not count in the process's memory (the conversion gives
    back the pages it is done with), and without copying the file out of the page cache
    (plain reads, a sixth more CPU, when the file cannot be mapped)."""

    _CHUNK = 8 << 20

    def __init__(self, path: Path, size: int) -> None:
        self._digest = hashlib.sha256()
        self._stop = threading.Event()
        self._error: OSError | None = None
        self._thread = threading.Thread(target=self._run, args=(path, size), daemon=True)
        self._thread.start()

    def _run(self, path: Path, size: int) -> None:
        try:
            with path.open("rb", buffering=0) as handle:
                if not self._mapped(handle, size):
                    self._read(handle, size)
        except OSError as error:
            self._error = error

    def _mapped(self, handle: io.FileIO, size: int) -> bool:
        """Hash through a map; False (nothing hashed) when the file cannot be mapped."""
        if not size:
            return False
        try:
            mapped = mmap.mmap(handle.fileno(), size, access=mmap.ACCESS_READ)
        except (OSError, ValueError):  # not a regular file, or shorter than `size` now
            return False
        with mapped, memoryview(mapped) as view:
            for start in range(0, size, self._CHUNK):
                if self._stop.is_set():
                    break
                self._digest.update(view[start : start + self._CHUNK])
                with contextlib.suppress(OSError, ValueError):
                    mapped.madvise(mmap.MADV_DONTNEED, start, min(self._CHUNK, size - start))
        return True

    def _read(self, handle: io.FileIO, size: int) -> None:
        chunk = bytearray(self._CHUNK)
        view = memoryview(chunk)
        done = 0
        while done < size and not self._stop.is_set():
            got = handle.readinto(view[: min(self._CHUNK, size - done)])
            if not got:
                raise OSError(f"{handle.name} became shorter while being converted")
            self._digest.update(view[:got])
            done += got

    def hexdigest(self) -> str:
        """Waits for the hash of the whole file; raises the OSError that reading it met."""
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._digest.hexdigest()

    def close(self) -> None:
        """Stops the thread (when conversion failed) and waits for it."""
        self._stop.set()
        self._thread.join()


def frame_head(buf: Any, run: Frame) -> int | None:
    """The frame id of a run that opens with a well-formed FrameStart packet (id 0, a 24-byte
    body), else None: a run opening otherwise is where a damaged size field threw the walk."""
    if run.ids[0] != FRAME_START_ID or run.sizes[0] != FRAME_START.size:
        return None
    return int(FRAME_START.unpack_from(buf, run.offsets[0] + 5)[0])


#: The packet header every FrameStart has: id 0, a 24-byte body.
_FRAME_START_HEADER = PACKET_HEADER.pack(FRAME_START_ID, FRAME_START.size)
#: How far past the last good frame id a resynchronised frame may be.
_RESYNC_IDS = 100_000


def resync(buf: Any, search_from: int, last_id: int | None) -> int | None:
    """Offset of the first FrameStart after `search_from` whose frame id follows `last_id`
    (later, and not absurdly far: 8 bytes that random data hardly ever matches), or None."""
    if last_id is None:
        return None
    position = search_from
    while True:
        position = buf.find(_FRAME_START_HEADER, position)
        if position < 0 or position + 5 + FRAME_START.size > len(buf):
            return None
        frame_id = FRAME_START.unpack_from(buf, position + 5)[0]
        if last_id < frame_id <= last_id + _RESYNC_IDS:
            return int(position)
        position += 1
