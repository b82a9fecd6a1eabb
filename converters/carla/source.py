"""Reading a CARLA source file beside its conversion: where a damaged stretch ends (the next
FrameStart that continues the recording). Its sha256 is `nanorec.archive.filehash.FileHash`'s."""

from __future__ import annotations

import mmap
from typing import TypeAlias

from nanorec.buffers import Buffer

from .frames import Frame
from .message import FRAME_START, PACKET_HEADER

#: A whole recording as the converter holds it: mapped, or bytes (an empty file cannot be
#: mapped). Unlike a `Buffer`, it can `find`.
FileBytes: TypeAlias = bytes | mmap.mmap

FRAME_START_ID = 0  # the same in every release (spec §4)


def frame_head(buf: Buffer, run: Frame) -> int | None:
    """The frame id of a run that opens with a well-formed FrameStart packet (id 0, a 24-byte
    body), else None: a run opening otherwise is where a damaged size field threw the walk."""
    if run.ids[0] != FRAME_START_ID or run.sizes[0] != FRAME_START.size:
        return None
    return int(FRAME_START.unpack_from(buf, run.offsets[0] + 5)[0])


#: The packet header every FrameStart has: id 0, a 24-byte body.
_FRAME_START_HEADER = PACKET_HEADER.pack(FRAME_START_ID, FRAME_START.size)
#: How far past the last good frame id a resynchronised frame may be.
_RESYNC_IDS = 100_000


def resync(buf: FileBytes, search_from: int, last_id: int | None) -> int | None:
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
