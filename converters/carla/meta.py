"""The side members of a CARLA archive and the file's own bytes kept outside the frames.

`carla.msgpack.zlib` holds the header (its exact bytes and decoded fields), the release
family, the frame keys with their kinds and dtypes, the table of packet sequences, and
every byte that is not part of a complete frame (a prelude before the first FrameStart,
damaged stretches, the tail of a crashed recording): what `export.py` needs besides the
messages to give the native file back.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from nanorec.archive.reader import ArchiveReader
from nanorec.errors import FormatError

from .header import Header
from .ids import FAMILIES, SHAPES, Engine, Family, Shape
from .message import KIND_KEYS, msgpack_text
from .records import FIXED_DTYPES
from .walk import Truncation

META_MEMBER = "carla.msgpack.zlib"  # zlib: small, read once at open
WORLD_MEMBER = "carla-world.msgpack.zlib"  # zlib: it repeats spawn records (loaded once)
META_VERSION = 1
HEAD_KEY = "carla"  # the first message's extra entry (see `emit.first_head`)


def archive_meta(
    header: Header,
    header_bytes: bytes,
    fam: Family,
    prelude: bytes,
    tail: bytes,
    truncation: Truncation | None,
    orders: Mapping[bytes, int],
    damaged: list[list[Any]] | None = None,
) -> dict[str, Any]:
    """The `carla.msgpack.zlib` member's value (`ArchiveWriter.add_meta`): what the archive
    needs to give the native file back."""
    engine = fam.engine
    return {
        "version": META_VERSION,
        "family": fam.name,
        "engine": engine.value,
        "ids": {str(pid): kind.value for pid, kind in fam.ids.items()},
        "header": {
            "bytes": header_bytes,
            "version": header.version,
            "magic": msgpack_text(header.magic),
            "date": header.date,
            "map_name": msgpack_text(header.map_name),
        },
        "keys": frame_keys(engine),
        "orders": sorted(orders, key=orders.__getitem__),
        "prelude": prelude,
        "tail": tail,
        "damaged": damaged or [],
        "truncation": None
        if truncation is None
        else {"offset": truncation.offset, "reason": truncation.reason},
    }


@functools.cache
def frame_keys(engine: Engine) -> Mapping[str, Mapping[str, Any]]:
    """The frame keys with their kinds, shapes and dtypes (`archive_meta`'s "keys"): the same
    for every file of an engine, so made once (numpy's `dtype.descr`, for each fixed kind,
    was ~0.4 ms of every small conversion). Shared: not to be changed."""
    kinds = {}
    for kind, key in KIND_KEYS.items():
        shape = SHAPES[kind]
        entry: dict[str, Any] = {"kind": kind.value, "shape": shape.value}
        if shape in (Shape.SINGLE, Shape.FIXED):
            entry["dtype"] = FIXED_DTYPES[engine][kind].descr
        kinds[key] = entry
    return kinds


def read_meta(reader: ArchiveReader) -> dict[str, Any]:
    """The `carla.msgpack.zlib` member of an archive; FormatError if it is missing or damaged."""
    if META_MEMBER not in reader.member_names:
        raise FormatError(f"{reader.path} is not a CARLA archive (no {META_MEMBER} member)")
    meta = reader.meta(META_MEMBER)
    try:
        meta["header"]["bytes"]
        if meta["family"] not in FAMILIES:
            family = meta["family"]
            raise FormatError(f"damaged {META_MEMBER} member: unknown release family {family!r}")
    except (ValueError, KeyError, TypeError) as error:
        raise FormatError(f"damaged {META_MEMBER} member: {error!r}") from None
    return dict(meta)
