"""Decode CARLA recorder packets into columnar tables and encode them back, byte for byte.

Decoding is columnar and streaming. The walker (`walk.py`) finds the packets of a run of
frames (a *batch*); then, per packet id, every packet of the batch is decoded at once:

- FIXED/SINGLE kinds: one structured array holding every record of that id in the batch,
  plus per-packet record counts. Records are gathered with one numpy fancy-index over an
  overlapping view of the file buffer (`walk.gather`); the count fields are checked
  against the sizes for all packets at once.
- AnimVehicleWheels (VAR, but on the hot path of 0.9.15+ files: one record per vehicle
  per frame): record boundaries are found for all packets in lock step, one record index
  at a time, then ids, wheel counts and wheels are gathered like fixed records.
- the other VAR kinds (EventAdd, PhysicsControl, WalkerBones): the typed records of
  `records.py`, parsed in Python only for packets that have records.
- ids the family does not know (forks, user packets >= 100), and known ids whose body
  does not fit the layout, are carried as raw bodies and reported, never dropped.

Encoding rebuilds every byte from the decoded values (never from the input bytes):
packet sizes are re-derived from the encoded bodies, headers, counts and records are
scattered into one output buffer with numpy, VAR bodies are serialized by `records.py`,
raw bodies and the truncated tail are written verbatim. A batch that round-trips to its
input bytes proves the decoded values are complete.
"""

from __future__ import annotations

import contextlib
import mmap
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from nanorec.buffers import Buffer

from .decode import decode_packets
from .detect import Detection, resolve
from .encode import decode_body, encode_batch, encode_body
from .header import Header
from .ids import Family
from .tables import (
    DEFAULT_BATCH_BYTES,
    Batch,
    EmptyTable,
    FixedTable,
    RawTable,
    Table,
    VarTable,
    WheelsTable,
)
from .walk import Truncation, iter_walk, walk


def iter_batches(
    buf: Buffer,
    family: str | Family | None = None,
    start: int | None = None,
    *,
    strict: bool = False,
    batch_bytes: int = DEFAULT_BATCH_BYTES,
) -> Iterator[Batch]:
    """Decode the packets of a whole file `buf` in runs of whole frames.

    `start` is the offset of the first packet (the header size; parsed when None);
    `family` a release family (name or value; detected when None). Memory stays bounded
    by `batch_bytes` (plus one frame): pass an mmap for big files, or use `Reader`. The
    last batch carries the truncation and the truncated tail, if any. Raises
    `BadMagicError`/`TruncatedError` for a bad header (when it parses it), and with
    `strict` as `decode_packets` does.
    """
    if start is None:
        start = Header.parse(buf).size
    if not isinstance(family, Family):
        family = resolve(buf, start, family).family
    for packets in iter_walk(buf, start, batch_bytes=batch_bytes):
        tail = b""
        if packets.truncation is not None:
            tail = bytes(buf[packets.end : len(buf)])
        yield decode_packets(buf, packets, family, strict=strict, tail=tail)


@dataclass(frozen=True, eq=False)
class Recording:
    """A whole decoded recording: header, detected (or forced) family, batches."""

    header: Header
    detection: Detection
    batches: tuple[Batch, ...]

    @property
    def family(self) -> Family:
        return self.detection.family

    @property
    def truncation(self) -> Truncation | None:
        return self.batches[-1].truncation if self.batches else None


def _family_and_header(buf: Buffer, family: str | Family | None) -> tuple[Header, Detection]:
    header = Header.parse(buf)
    return header, resolve(buf, header.size, family)


def decode(
    source: bytes | bytearray | memoryview | str | os.PathLike[str],
    *,
    family: str | Family | None = None,
    strict: bool = False,
) -> Recording:
    """Decode a small recording (bytes, or a path read into memory) in one batch.

    `family` forces a release family (name or value); by default it is detected. Raises
    `BadMagicError`/`TruncatedError` for a bad header, `UnsupportedError` for an unknown
    family name, and with `strict` `FormatError`/`TruncatedError` for a packet that does
    not fit; `OSError` for an unreadable path.
    """
    buf = Path(source).read_bytes() if isinstance(source, (str, os.PathLike)) else source
    header, detection = _family_and_header(buf, family)
    packets = walk(buf, header.size)
    tail = bytes(buf[packets.end :]) if packets.truncation is not None else b""
    batch = decode_packets(buf, packets, detection.family, strict=strict, tail=tail)
    return Recording(header, detection, (batch,))


def encode(recording: Recording) -> bytes:
    """The file bytes of `recording`, rebuilt from its decoded values."""
    family = recording.family
    parts: list[bytes | bytearray] = [recording.header.serialize()]
    parts += [encode_batch(batch, family) for batch in recording.batches]
    return b"".join(parts)


class Reader:
    """A CARLA recorder file opened with mmap, decoded batch by batch.

    Use as a context manager. `header` and `detection` are read at open; `iter_batches`
    streams the packets. Raises like `decode` (`OSError` passes through).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        family: str | Family | None = None,
        strict: bool = False,
        batch_bytes: int = DEFAULT_BATCH_BYTES,
    ) -> None:
        self.path = Path(path)
        self.strict = strict
        self.batch_bytes = batch_bytes
        self._file = open(self.path, "rb")  # noqa: SIM115 - closed by close()
        self._map: mmap.mmap | None = None
        try:
            size = os.fstat(self._file.fileno()).st_size
            if size:
                self._map = mmap.mmap(self._file.fileno(), 0, access=mmap.ACCESS_READ)
            self.buf: Buffer = self._map if self._map is not None else b""
            self.size = size
            self.header, self.detection = _family_and_header(self.buf, family)
        except BaseException:
            self.close()
            raise

    @property
    def family(self) -> Family:
        return self.detection.family

    def iter_batches(self) -> Iterator[Batch]:
        """Decode the file's packets in runs of whole frames (see `codec.iter_batches`).

        Once the caller asks for the next batch, the file pages of the previous one are
        released from this process (they stay in the page cache), so the resident size
        stays bounded by a batch rather than growing to the file size.
        """
        released = 0
        for batch in iter_batches(
            self.buf,
            self.family,
            self.header.size,
            strict=self.strict,
            batch_bytes=self.batch_bytes,
        ):
            yield batch
            released = self._release(released, batch.packets.end)

    def _release(self, start: int, end: int) -> int:
        """Drop the mapped pages of [start, end) rounded to pages; returns the new start."""
        end -= end % mmap.PAGESIZE
        if self._map is None or end <= start or not hasattr(self._map, "madvise"):
            return start
        self._map.madvise(mmap.MADV_DONTNEED, start, end - start)
        return end

    def close(self) -> None:
        if self._map is not None:
            # A caller still holding a view keeps the map alive; it goes with the view.
            with contextlib.suppress(BufferError):
                self._map.close()
            self._map = None
        self._file.close()

    def __enter__(self) -> Reader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read(
    path: str | os.PathLike[str],
    *,
    family: str | Family | None = None,
    strict: bool = False,
    batch_bytes: int = DEFAULT_BATCH_BYTES,
) -> Recording:
    """Decode the file at `path` through mmap, batch by batch (see `Reader`, `decode`)."""
    with Reader(path, family=family, strict=strict, batch_bytes=batch_bytes) as reader:
        batches = tuple(reader.iter_batches())
        return Recording(reader.header, reader.detection, batches)


__all__ = [
    "DEFAULT_BATCH_BYTES",
    "Batch",
    "EmptyTable",
    "FixedTable",
    "RawTable",
    "Reader",
    "Recording",
    "Table",
    "VarTable",
    "WheelsTable",
    "decode",
    "decode_body",
    "decode_packets",
    "encode",
    "encode_batch",
    "encode_body",
    "iter_batches",
    "read",
]
