"""Make an archive recovered from a killed `convert` a CARLA archive again.

A killed writer leaves its messages (every complete one, each with its timestamp) but not
the members written at close: `carla.msgpack.zlib` (header, family, packet-sequence table,
crashed tail) and `carla-world.msgpack.zlib` (event tables). The messages hold all of it:
the first one carries the header, family and prelude (`convert._head`), each packet
sequence appears as bytes where it is first used, and the event tables are a replay of the
frames. So both members are rebuilt here, from the messages alone.
"""

from __future__ import annotations

from nanorec.archive.reader import ArchiveReader
from nanorec.archive.wire import pack_meta
from nanorec.errors import FormatError, NanorecError
from nanorec.untyped import Payload

from .header import Header
from .ids import FAMILIES
from .ids import family as family_named
from .message import ORDER_KEY
from .meta import HEAD_KEY, META_MEMBER, WORLD_MEMBER, archive_meta
from .world_tables import WorldTablesBuilder


def rebuild_members(reader: ArchiveReader) -> dict[str, bytes] | None:
    """The CARLA members of `reader`'s archive rebuilt from its messages, or None when the
    messages are not CARLA frames written by nanorec (then the archive is not ours).

    Raises `FormatError` when they are ours but damaged (a frame that is not a map...)."""
    if not len(reader):
        return None
    first = reader[0]
    head = first.get(HEAD_KEY)
    if not isinstance(head, dict) or not isinstance(first.get("frame"), dict):
        return None
    try:
        header_bytes = bytes(head["header"])
        name = str(head["family"])
        prelude = bytes(head.get("prelude", b""))
    except (KeyError, TypeError, ValueError):
        return None
    if name not in FAMILIES:
        raise FormatError(f"the first message names an unknown CARLA family {name!r}")
    fam = family_named(name)
    header = Header.parse(header_bytes)
    world = WorldTablesBuilder(fam.engine)
    orders: dict[bytes, int] = {}
    for number in range(len(reader)):
        frame: Payload = reader[number].get("frame")
        if not isinstance(frame, dict):
            raise FormatError(f"message {number} of a CARLA archive holds no frame")
        try:
            world.observe(number, frame)
        except (NanorecError, ValueError, KeyError, TypeError) as error:
            raise FormatError(f"message {number}: damaged frame ({error})") from None
        order = frame.get(ORDER_KEY)
        if isinstance(order, bytes):
            orders.setdefault(order, len(orders))
    return {
        WORLD_MEMBER: pack_meta(world.to_value()),
        META_MEMBER: pack_meta(archive_meta(header, header_bytes, fam, prelude, b"", None, orders)),
    }
