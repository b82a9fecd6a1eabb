"""A source file's sha256 beside its conversion, for every converter: the archive records it
so that `export` can say "identical"."""

from __future__ import annotations

import contextlib
import hashlib
import io
import mmap
import threading
from pathlib import Path
from typing import Final

#: The hashing thread's name (a failed conversion leaves none: see `FileHash.close`).
THREAD_NAME: Final = "nanorec-sha256"


class FileHash:
    """The sha256 of the source file's first `size` bytes (the mapped ones), computed by a
    second thread while this one converts (hashlib releases the GIL): hashing was a fifth of
    a CARLA conversion's time, as long as the rest of a bag of camera images'. It
    hashes through a map of its own, each 8 MiB given back once hashed, so that the pages it
    gets ahead of the conversion do not count in the process's memory (the conversion gives
    back the pages it is done with), and without copying the file out of the page cache
    (plain reads, a sixth more CPU, when the file cannot be mapped). A file under
    `THREAD_FROM` bytes is hashed in the calling thread when the digest is asked for: there
    a thread started and joined costs about what hashing the file does (~0.3 ms of CPU
    against ~0.6 ms for a 300 KB CARLA log), most of the time saved, a thousand times over
    in a batch of small recordings."""

    _CHUNK = 8 << 20
    #: Files of this many bytes or more are hashed by a second thread.
    THREAD_FROM = 4 << 20

    def __init__(self, path: Path, size: int) -> None:
        self._digest = hashlib.sha256()
        self._stop = threading.Event()
        self._error: OSError | None = None
        self._thread: threading.Thread | None = None
        #: What `hexdigest` still has to hash itself (a small file).
        self._later: tuple[Path, int] | None = None
        if size < self.THREAD_FROM:
            self._later = (path, size)
            return
        self._thread = threading.Thread(
            target=self._run, args=(path, size), daemon=True, name=THREAD_NAME
        )
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
        if self._later is not None:
            path, size = self._later
            self._later = None
            self._run(path, size)
        if self._thread is not None:
            self._thread.join()
        if self._error is not None:
            raise self._error
        return self._digest.hexdigest()

    def close(self) -> None:
        """Stops the thread (when conversion failed) and waits for it."""
        self._stop.set()
        self._later = None
        if self._thread is not None:
            self._thread.join()
