"""CARLA world states as JSON-ready dicts, for `nanorec play` and anyone streaming frames.

The pacing itself (rate, pause, step, loop) is `nanorec.player.Player`, shared by every
format; this module says what one CARLA frame looks like on the wire.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from typing import TYPE_CHECKING, Any, cast

from nanorec.errors import UsageError

from .world_json import DEFAULT_PARTS, PARTS, actor_dict, world_dict

if TYPE_CHECKING:
    from nanorec.player import Player

    from .recording import CarlaRecording


def iter_dicts(player: Player, parts: Collection[str] = DEFAULT_PARTS) -> Iterator[dict[str, Any]]:
    """Each frame `player` plays as `world_dict(world, parts)` (JSON-ready)."""
    check_parts(parts)
    rec = cast("CarlaRecording", player.rec)
    return player.paced(lambda number: world_dict(rec.frame(number), parts))


def check_parts(parts: Collection[str]) -> None:
    """Raise `UsageError` unless every name in `parts` is one of `PARTS`."""
    unknown = [part for part in parts if part not in PARTS]
    if unknown:
        raise UsageError(f"unknown part {unknown[0]!r}; valid: {', '.join(PARTS)}")


__all__ = [
    "DEFAULT_PARTS",
    "PARTS",
    "actor_dict",
    "check_parts",
    "iter_dicts",
    "world_dict",
]
