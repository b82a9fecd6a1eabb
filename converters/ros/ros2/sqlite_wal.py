"""A SQLite write-ahead log (`<file>.db3-wal`) read as SQLite reads it after a crash: which
page of the database each committed frame replaces (https://www.sqlite.org/fileformat2.html,
"The Write-Ahead Log").

Why: rosbag2's `resilient` storage preset puts the database in WAL mode, so the rows a
writer committed since its last checkpoint are only in the WAL. A frame counts when its salts
are the header's and its cumulative checksum holds; frames count up to the last commit frame
(one whose "database size after commit" is not zero) before the first one that does not:
the rest is a transaction the writer never finished, which SQLite discards too.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from nanorec.contract import Region
from nanorec.errors import FormatError

from .sqlite_btree import Overlay
from .storage import Damage

MAGIC_LE, MAGIC_BE = 0x377F0682, 0x377F0683  # checksums of little / big-endian words
WAL_HEADER = struct.Struct(">IIIIIIII")  # magic, version, page size, seq, salts, checksums
FRAME_HEADER = struct.Struct(">IIIIII")  # page, size after commit, salts, checksums
VERSION = 3007000


@dataclass
class Wal:
    """The committed content of a WAL: for each page its newest committed frame's data
    offset (from the WAL's start), and the database size in pages after the last commit."""

    page_size: int
    pages: dict[int, int] = field(default_factory=dict)
    db_pages: int = 0
    frames: int = 0  # frames present whole
    committed: int = 0  # frames up to the last valid commit frame
    valid: int = 0  # frames whose salts and checksums hold


def _checksum(data: bytes | memoryview, big: bool, s1: int, s2: int) -> tuple[int, int]:
    """SQLite's WAL checksum over `data` (a multiple of 8 bytes), continuing (s1, s2)."""
    words = struct.unpack(f"{'>' if big else '<'}{len(data) // 4}I", data)
    mask = 0xFFFFFFFF
    for i in range(0, len(words), 2):
        s1 = (s1 + words[i] + s2) & mask
        s2 = (s2 + words[i + 1] + s1) & mask
    return s1, s2


def read_wal(buf: bytes | memoryview) -> Wal | None:
    """The WAL in `buf`, or None when it holds no header (empty, or cut inside it).

    Raises FormatError when the header is not a SQLite WAL's."""
    view = memoryview(buf)
    if len(view) < WAL_HEADER.size:
        return None
    magic, version, page_size, _, salt1, salt2, c1, c2 = WAL_HEADER.unpack_from(view)
    if magic not in (MAGIC_LE, MAGIC_BE) or version != VERSION:
        raise FormatError("not a SQLite WAL (magic or version)", offset=0)
    if page_size < 512 or page_size > 65536 or page_size & (page_size - 1):
        raise FormatError(f"SQLite WAL page size {page_size} is not a power of two", offset=8)
    big = magic == MAGIC_BE
    wal = Wal(page_size)
    if _checksum(view[:24], big, 0, 0) != (c1, c2):
        return wal  # a header being written: no frame can be trusted
    s1, s2 = c1, c2
    frame = FRAME_HEADER.size + page_size
    pending: dict[int, int] = {}
    for at in range(WAL_HEADER.size, len(view) - frame + 1, frame):
        wal.frames += 1
        page, commit, f1, f2, k1, k2 = FRAME_HEADER.unpack_from(view, at)
        if (f1, f2) != (salt1, salt2) or page == 0:
            break
        s1, s2 = _checksum(view[at : at + 8], big, s1, s2)
        s1, s2 = _checksum(view[at + 24 : at + frame], big, s1, s2)
        if (s1, s2) != (k1, k2):
            break
        wal.valid += 1
        pending[page] = at + FRAME_HEADER.size
        if commit:
            wal.pages.update(pending)
            pending.clear()
            wal.db_pages = commit
            wal.committed = wal.valid
    return wal


def wal_overlay(view: memoryview, main_size: int, damage: Damage) -> Overlay | None:
    """The pages the WAL held in `view[main_size:]` (the database file, then its WAL) puts
    over the database's, as an `Overlay`; None when it commits nothing. What it holds past
    its last commit is noted in `damage`, as a loss when it is a valid, uncommitted
    transaction (rows a writer had written but not committed)."""
    wal = read_wal(view[main_size:])
    if wal is None:
        return None
    if main_size >= 18:
        size = int.from_bytes(view[16:18], "big")
        if (65536 if size == 1 else size) != wal.page_size:
            damage.notes.append("the WAL's page size is not the database's: WAL not read")
            return None
    frame = FRAME_HEADER.size + wal.page_size
    damage.notes.append(
        f"WAL: {wal.committed} committed frames read over the file ({len(wal.pages)} pages)"
    )
    if wal.valid > wal.committed:
        start = main_size + WAL_HEADER.size + wal.committed * frame
        length = (wal.valid - wal.committed) * frame
        damage.losses.append(
            Region(
                start,
                length,
                f"WAL: {wal.valid - wal.committed} frames of a transaction never committed "
                "(SQLite drops it too): an unknown number of messages lost",
            )
        )
        damage.lost_bytes += length
    if not wal.pages:
        return None
    pages = {page: main_size + at for page, at in wal.pages.items()}
    return Overlay(main_size, pages, wal.db_pages)
