"""CARLA's three recorder queries, reproduced byte for byte without the simulator.

The package: `base` (text forms per release, the server's packet-by-packet read, family
detection, record helpers), `info`, `collisions` and `blocked` (one query each), and
`documents` (the same facts as JSON). This module re-exports their public names.

`client.show_recorder_file_info`, `show_recorder_collisions` and
`show_recorder_actors_blocked` run on the server and return text that users parse, diff
and paste into bug reports. Reproducing that text exactly needs more than the file
layout: the per-release labels (spec §7.3/§7.4), the C library's number formatting and
local time (§7.1, §7.8, see `textfmt`), the hash-map order of the blocked query (see
`hashorder`), and CARLA's slips, which are kept on purpose:

- EventDel erases the id of the *last EventAdd record read*, not the deleted id (§7.5);
- the collision query's stream stays `fixed`/precision 0 after its first row, so its
  trailer prints `Duration: 46 seconds` (§7.5);
- category letters are indexed by the actor type number, so type 4 is `h` and 5 is `a`;
- the blocked query adds the last frame's duration of -1 (§7.6);
- the read loop checks end-of-file only before a header, so at the end the last packet is
  handled once more with a failed stream: stale counts and records are reused (§7.7).
  For a normal file that is a harmless second FrameEnd (a newline in the 2026 form); for
  a file cut after another packet it repeats that packet's lines, as CARLA does. A cut
  inside a packet overlays the bytes that are there onto the previous record (field by
  field reads on a little-endian machine); variable-length records after a cut are not
  reproduced (CARLA reads uninitialised lengths there).

Every function walks the file once from a read-only memory map and yields text chunks, so
a 1 GB recording streams. Packet sizes are trusted for framing (CARLA ignores them for
packets it reads, which only matters for corrupt files).

Label forms (`TextForm`), chosen from the detected release family unless forced:
`0.9.4` (no frame lines, no positions, Parenting prints the child twice, "Unknown packet
id" lines), `0.9.5` (frame lines, `Location (`), `0.9.6` (0.9.6 to 0.9.14: `Location: (`,
`Rotation (`, `Brake `), `0.9.15` (0.9.15, nightlies, 0.9.16 and UE5 0.10: `Rotation: (`,
`Brake: `; the door section wherever the family has a door packet), `2026` (ue4-dev after
Feb 2026: Weather lines, a newline at every FrameEnd, no blank line after WalkerBones).
`labels="old"|"new"` overrides just the colon question.
"""

from __future__ import annotations

import importlib
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .base import (
        FORMS,
        GEAR_SWITCH_TIME_DEFAULT,
        MAGIC,
        NOT_A_RECORDER,
        HashOrderName,
        Labels,
        RecorderHeader,
        Row,
        TextForm,
        Truncation,
    )
    from .blocked import (
        BlockedRow,
        actors_blocked,
        iter_actors_blocked,
    )
    from .collisions import (
        CATEGORY_LETTERS,
        CollisionRow,
        collisions,
        iter_collisions,
    )
    from .documents import (
        actors_blocked_json,
        collisions_json,
        file_info_json,
    )
    from .info import (
        QueryOptions,
        file_info,
        iter_file_info,
    )

#: Each public name -> its module, imported when the name is first used (PEP 562): `nanorec
#: info` needs `base` and `info`, not the collision and blocked queries (~15 ms of start-up).
_HOMES = {
    **dict.fromkeys(
        (
            "FORMS",
            "GEAR_SWITCH_TIME_DEFAULT",
            "MAGIC",
            "NOT_A_RECORDER",
            "HashOrderName",
            "Labels",
            "RecorderHeader",
            "Row",
            "TextForm",
            "Truncation",
        ),
        "base",
    ),
    **dict.fromkeys(
        (
            "BlockedRow",
            "actors_blocked",
            "iter_actors_blocked",
        ),
        "blocked",
    ),
    **dict.fromkeys(
        (
            "CATEGORY_LETTERS",
            "CollisionRow",
            "collisions",
            "iter_collisions",
        ),
        "collisions",
    ),
    **dict.fromkeys(
        (
            "actors_blocked_json",
            "collisions_json",
            "file_info_json",
        ),
        "documents",
    ),
    **dict.fromkeys(
        (
            "QueryOptions",
            "file_info",
            "iter_file_info",
        ),
        "info",
    ),
}


def __getattr__(name: str) -> object:  # the names above are known to the checker
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    importlib.import_module(f"{__name__}.{home}")
    # the names of every module imported so far, over the submodules the import set here
    # (`collisions`, the module, would hide `collisions`, the function)
    for public, module in _HOMES.items():
        loaded = sys.modules.get(f"{__name__}.{module}")
        if loaded is not None:
            globals()[public] = getattr(loaded, public)
    return globals()[name]


__all__ = [
    "CATEGORY_LETTERS",
    "FORMS",
    "GEAR_SWITCH_TIME_DEFAULT",
    "MAGIC",
    "NOT_A_RECORDER",
    "BlockedRow",
    "CollisionRow",
    "HashOrderName",
    "Labels",
    "QueryOptions",
    "RecorderHeader",
    "Row",
    "TextForm",
    "Truncation",
    "actors_blocked",
    "actors_blocked_json",
    "collisions",
    "collisions_json",
    "file_info",
    "file_info_json",
    "iter_actors_blocked",
    "iter_collisions",
    "iter_file_info",
]
