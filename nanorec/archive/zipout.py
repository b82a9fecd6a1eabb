"""`ZipOutput`: the zip file an `ArchiveWriter` is writing, from partial file to final name.

It exists so that everything about bytes reaching the disk as a zip lives in one place,
whatever the archive's members mean: the `.<name>.partial` file beside the final path (claimed
before it is created, see `nanorec.archive.atomic`), the output buffer (written with `writev`, no
joining copy; the messages' flushes by a second thread, see `nanorec.archive.writebehind`), the
background `fdatasync` that overlaps disk writes with the conversion, local
headers (patched in place once a member's size is known), whole and streamed members, the
central directory and end records, the final fsync and the atomic rename (`publish`).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Final
from zipfile import ZIP_DEFLATED, ZIP_STORED

from nanorec.archive import atomic
from nanorec.archive.crc import crc32
from nanorec.archive.deflate import Compressor, deflater
from nanorec.archive.wire import inflates_acceptably
from nanorec.archive.writebehind import WriteBehind, write_all
from nanorec.archive.zipdirectory import CentralHeader, EndRecords
from nanorec.archive.zipfile64 import LocalHeader

#: Flush buffered output when it reaches this many bytes (see also
# `nanorec.archive.message_stream`).
FLUSH_BYTES: Final = 1 << 20

#: Start a background fdatasync each time this many more bytes are written.
WRITEBACK_BYTES: Final = 16 << 20

#: A streamed member's chunks are deflated on a thread only past this many bytes (see
#: `_deflated`).
_INLINE_BYTES: Final = 1 << 20

#: A member written whole is handed to its deflater this much at a time (a multiple of
#: `nanorec.archive.blocks` pieces, so the pieces are those of the data given at once).
_DEFLATE_STEP: Final = 4 << 20


def partial_path(path: str | os.PathLike[str]) -> Path:
    """Where `ArchiveWriter` writes before the final rename: `.<name>.partial` beside `path`."""
    final = Path(path)
    return final.with_name(f".{final.name}.partial")


class ZipOutput:
    """A new zip at `partial` (see `partial_path`), published at `path` by `publish()`.

    Raises `OutputExistsError` at construction when `path` (or a partial file left by an
    interrupted write) exists and `overwrite` is false; `OSError` if the directory is not
    writable. `durable` starts background `fdatasync`s while writing.

    Bytes are buffered in `parts` (`pending` of them) and written by `flush_buffer`; a caller
    that takes care of the flushing policy itself may append to `parts` and add to `pending`
    directly (the message path does, per message).
    """

    def __init__(self, path: Path, partial: Path, *, overwrite: bool, durable: bool) -> None:
        self.path = path
        self.partial_path = partial
        self.overwrite = overwrite
        self.durable = durable
        #: Build zip64 central headers and end records even when not needed (tests).
        self.force_zip64 = False
        self._fd = -1
        if not overwrite and path.exists():
            raise atomic.output_exists(path)
        atomic.check_partial(
            partial,
            overwrite=overwrite,
            left=f"recover it with `nanorec recover {partial} -o OUT` or remove it "
            "(overwrite=True removes it)",
        )
        atomic.claim(partial)  # before it exists: see nanorec.archive.atomic
        try:
            self._fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except OSError:
            atomic.release(partial)  # not ours
            raise
        atomic.lock(self._fd)  # held until the file is closed: see nanorec.archive.atomic
        # buffered output, written at flush with writev (no joining copy)
        self.parts: list[bytes | memoryview] = []
        self.pending = 0  # bytes in parts
        self.position = 0  # file offset of the first buffered byte
        self._synced = 0  # bytes a background fdatasync was started for
        self._writeback: threading.Thread | None = None
        self._writeback_error: OSError | None = None
        self._central: list[CentralHeader] = []
        self._behind = WriteBehind(self._fd)
        #: Where the data of the member `write_streamed` wrote last starts (the paged
        #: layout records it: `nanorec.archive.pages`).
        self.last_data_start = 0

    # -- the buffer ------------------------------------------------------------------------

    def emit(self, data: bytes) -> None:
        self.parts.append(data)
        self.pending += len(data)
        if self.pending >= FLUSH_BYTES:
            self.flush_buffer()

    def emit_compressed(self, data: Sequence[bytes | memoryview]) -> None:
        for part in data:
            if part:
                self.parts.append(part)
                self.pending += len(part)

    def flush_buffer(self, *, behind: bool = False) -> None:
        """Write the buffered parts to the file; `behind`: hand them to the write-behind
        thread instead (written in order, before any other write reaches the file; their
        buffers must not change, see `nanorec.archive.writebehind`)."""
        if behind:
            if self.parts:
                self._behind.submit(list(self.parts))
        else:
            self._behind.drain()
            write_all(self._fd, self.parts)
        self.position += self.pending
        self.parts.clear()
        self.pending = 0
        if self.durable and self.position - self._synced >= WRITEBACK_BYTES:
            self._start_writeback()

    def tell(self) -> int:
        return self.position + self.pending

    def drain(self) -> None:
        """Wait until every flushed byte is written to the file (raises its `OSError`)."""
        self._behind.drain()

    # -- durability ------------------------------------------------------------------------

    def _start_writeback(self) -> None:
        """Have a second thread `fdatasync` what is written so far, while this one goes on:
        the disk writes then overlap the conversion instead of all waiting for the final
        fsync at close (a fifth of a fast conversion's time). One at a time; an error is
        raised by `_join_writeback` (a later fsync might not report it again)."""
        if self._writeback is not None and self._writeback.is_alive():
            return
        self._join_writeback()
        self._synced = self.position
        fd = self._fd

        def sync() -> None:
            try:
                os.fdatasync(fd)
            except OSError as error:
                self._writeback_error = error

        self._writeback = threading.Thread(target=sync, name="nanorec-writeback", daemon=True)
        self._writeback.start()

    def _join_writeback(self) -> None:
        """Wait for the background `fdatasync` (before the fd is synced again or closed)."""
        if self._writeback is not None:
            self._writeback.join()
            self._writeback = None
        error, self._writeback_error = self._writeback_error, None
        if error is not None:
            raise error

    def fsync(self) -> None:
        """`fsync` the file (after the background `fdatasync`, whose error it raises)."""
        self._behind.drain()
        self._join_writeback()
        os.fsync(self._fd)

    def close(self) -> None:
        """Close the file (the partial file stays). Idempotent."""
        self._behind.close()  # what was handed over is written first (an error is ignored)
        if self._writeback is not None:  # its error, if any, no longer matters
            self._writeback.join()
            self._writeback = None
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    # -- members ---------------------------------------------------------------------------

    def finish_member(self, header: LocalHeader, offset: int) -> None:
        """Overwrite the (flushed) local header at `offset` with `header`, its final form,
        and list the member in the central directory."""
        self._behind.drain()  # the header's first form must be written before it is patched
        os.pwrite(self._fd, header.build(), offset)
        self._central.append(self._central_for(header, offset))

    def _central_for(self, header: LocalHeader, offset: int) -> CentralHeader:
        return CentralHeader(
            name=header.name,
            crc32=header.crc32,
            compressed_size=header.compressed_size,
            uncompressed_size=header.uncompressed_size,
            local_header_offset=offset,
            method=header.method,
            force_zip64=self.force_zip64,
        )

    def write_streamed(
        self, name: str, chunks: Iterable[bytes], *, compress: bool = False, fast: bool = False
    ) -> LocalHeader:
        """Write a member of not-yet-known size: placeholder header, data, header patched.
        `fast`: deflated the fast way (`deflate.deflater(fast=True)`) rather than at level 6.
        A chunk is deflated on another thread while the next is made: it must stay unchanged
        once given (fresh `bytes`, not a reused buffer)."""
        offset = self.tell()
        header = LocalHeader(name=name, zip64=True, method=ZIP_DEFLATED if compress else ZIP_STORED)
        self.emit(header.build())
        start = self.last_data_start = self.tell()
        crc = size = 0

        def counted() -> Iterator[bytes]:
            nonlocal crc, size
            for chunk in chunks:
                crc = crc32(chunk, crc)
                size += len(chunk)
                yield chunk

        for data in _deflated(counted(), deflater(fast=fast)) if compress else counted():
            self.emit(data)
        stored = self.tell() - start
        header = replace(header, crc32=crc, compressed_size=stored, uncompressed_size=size)
        self.flush_buffer()
        self.finish_member(header, offset)
        return header

    def write_whole(
        self, name: str, data: bytes, *, compress: bool = False, fast: bool = False
    ) -> None:
        """Write a member of known bytes. `compress`: deflated (the fast way if `fast`), unless
        that is no smaller or so small that readers would take it for a zip bomb: then the
        deflated bytes are taken back (the file truncated) and `data` is stored. The deflate
        is streamed to the file, so a large member costs no compressed copy in memory."""
        if compress:
            self.flush_buffer()  # what came before stays whatever is taken back
        offset = self.tell()
        size = len(data)
        header = LocalHeader(
            name=name,
            crc32=crc32(data),
            compressed_size=size,  # a placeholder of the final header's length
            uncompressed_size=size,
            method=ZIP_DEFLATED if compress else ZIP_STORED,
        )
        self.emit(header.build())
        if compress:
            start = self.tell()
            compressor = deflater(fast=fast)
            with memoryview(data) as view:
                for at in range(0, size, _DEFLATE_STEP):
                    self.emit(compressor.compress(view[at : at + _DEFLATE_STEP]))
            self.emit(compressor.flush())
            deflated = self.tell() - start
            if deflated < size and inflates_acceptably(size, deflated):
                self.flush_buffer()
                self.finish_member(replace(header, compressed_size=deflated), offset)
                return
            self._rewind(offset)
            header = replace(header, method=ZIP_STORED)
            self.emit(header.build())
        self.emit(data)
        self._central.append(self._central_for(header, offset))

    def _rewind(self, offset: int) -> None:
        """Drop everything from `offset` on (buffered or written; nothing before `offset`
        may still be buffered)."""
        self._behind.drain()
        self.parts.clear()
        self.pending = 0
        if self.position > offset:
            os.ftruncate(self._fd, offset)
            os.lseek(self._fd, offset, os.SEEK_SET)
            self.position = offset

    def write_central_directory(self) -> None:
        """Emit the central directory of the members written so far and the end records."""
        cd_offset = self.tell()
        for header in self._central:
            self.emit(header.build())
        cd_size = self.tell() - cd_offset
        end = EndRecords(entries=len(self._central), cd_size=cd_size, cd_offset=cd_offset)
        self.emit(end.build(force_zip64=self.force_zip64))

    # -- the final name --------------------------------------------------------------------

    def _left_at(self) -> str:
        return f" (it appeared while writing: the archive is left at {self.partial_path})"

    def publish(self) -> None:
        """Move the finished partial file to its final name, atomically."""
        if self.overwrite:
            os.replace(self.partial_path, self.path)
        else:
            try:
                # link() fails if the target exists, so nothing can be clobbered in between.
                os.link(self.partial_path, self.path)
            except FileExistsError:
                raise atomic.output_exists(self.path, self._left_at()) from None
            except OSError:
                # File systems without hard links: check, then rename.
                if self.path.exists():
                    raise atomic.output_exists(self.path, self._left_at()) from None
                os.replace(self.partial_path, self.path)
            else:
                self.partial_path.unlink()
        if self.durable:
            _fsync_directory(self.path.parent)


def _fsync_directory(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _deflated(chunks: Iterable[bytes], compressor: Compressor) -> Iterator[bytes]:
    """`chunks` deflated in order, the stream ended. Past the first `_INLINE_BYTES`, each
    chunk is deflated on a thread while the next is made (`chunks` is often a generator
    encoding the index: the index of a million messages took ~0.4 s of a conversion's end
    with one core idle), so a chunk must stay unchanged once given. Below that the chunks are
    deflated here: a thread and a hand-over per chunk (the description's ~25) were a third of
    writing a small archive. The compressor gets the same calls either way: the same bytes."""
    chunks = iter(chunks)
    seen = 0
    for chunk in chunks:
        yield compressor.compress(chunk)
        seen += len(chunk)
        if seen >= _INLINE_BYTES:
            break
    else:
        yield compressor.flush()
        return
    last: bytes | None = None
    deflating: Future[bytes] | None = None
    with ThreadPoolExecutor(1, thread_name_prefix="nanorec-member") as pool:
        for chunk in chunks:
            if last is not None:
                if deflating is not None:
                    yield deflating.result()
                deflating = pool.submit(compressor.compress, last)
            last = chunk
        if deflating is not None:
            yield deflating.result()
    if last is not None:
        yield compressor.compress(last)
    yield compressor.flush()


__all__ = ["FLUSH_BYTES", "WRITEBACK_BYTES", "ZipOutput", "partial_path"]
