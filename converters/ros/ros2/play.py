"""`ros2 bag play` semantics over a converted bag (`Ros2Player`).

On top of `nanorec.player.Player` (recorded time -> wall time, rate, loop, delay, pause,
step, clock): the keys of `ros2 bag play`'s keyboard handler (space pauses and resumes, →
plays the next message while paused, ↑/↓ change the rate by 10 %), and the topic filters
(`topics`, `regex`, `exclude_regex`, `exclude_topics`) resolved to the topics played, as
`rosbag2_transport`'s `PlayOptions` filter them: a topic is played when it is in `topics`
(or `topics` is empty) or matches `regex`, and is neither in `exclude_topics` nor matches
`exclude_regex`; a regex matches the whole topic name (`std::regex_match`, as rosbag2's
player and storage plugins apply it), not a part of it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from nanorec.errors import UsageError
from nanorec.player import Player

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from nanorec.contract import PlayOptions

    from .recording import Ros2Recording

#: The factor ↑ multiplies the rate by (↓ divides), as rosbag2's player.
RATE_STEP = 1.1


def chosen_topics(
    topics_there: Sequence[str],
    *,
    topics: Sequence[str] = (),
    regex: str | None = None,
    exclude_regex: str | None = None,
    exclude_topics: Sequence[str] = (),
) -> list[str] | None:
    """The topics `ros2 bag play`'s filters select, or None for every topic."""
    if not (topics or regex or exclude_regex or exclude_topics):
        return None
    try:
        include = re.compile(regex) if regex else None
        exclude = re.compile(exclude_regex) if exclude_regex else None
    except re.error as error:
        raise UsageError(f"a bad regular expression: {error}") from None
    picked = []
    for name in topics_there:
        wanted = (not topics and include is None) or name in topics
        wanted = wanted or (include is not None and include.fullmatch(name) is not None)
        if exclude is not None and exclude.fullmatch(name) is not None:
            wanted = False
        if wanted and name not in exclude_topics:
            picked.append(name)
    return picked


class Ros2Player(Player):
    def __init__(self, rec: Ros2Recording, **options: Unpack[PlayOptions]) -> None:
        super().__init__(rec, **options)

    def handle_key(self, key: str) -> None:
        """Space pauses/resumes, → steps while paused, ↑/↓ change the rate, q quits."""
        if key == "right":
            self.step()
        elif key == "up":
            self.set_rate(self.rate * RATE_STEP)
        elif key == "down":
            self.set_rate(self.rate / RATE_STEP)
        else:
            super().handle_key(key)
