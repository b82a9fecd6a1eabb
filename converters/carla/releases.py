"""The CARLA releases `nanorec carla author` writes for, by number, and their families.

Apart from `author.py` so that the command's help (which lists them) costs no import of
the writer when any other `nanorec carla` command starts.
"""

from __future__ import annotations

from collections.abc import Mapping

from nanorec.errors import UnknownNameError

from .ids import FAMILIES, Family

__all__ = ["DEFAULT_RELEASE", "RELEASES", "RELEASE_NUMBERS", "release_family"]

#: CARLA releases by number, and the family each one writes.
RELEASE_NUMBERS: Mapping[str, str] = {
    **{f"0.9.{minor}": "0.9.4-0.9.9" for minor in range(4, 10)},
    **{f"0.9.{minor}": "0.9.10-0.9.13" for minor in range(10, 14)},
    "0.9.14": "0.9.14",
    "0.9.15": "0.9.15",
    "0.9.16": "0.9.16",
    "0.10.0": "ue5-0.10",
}
#: What `release` takes: a release number or a family name (nightlies, ue4-dev 2026...).
RELEASES: Mapping[str, str] = {**RELEASE_NUMBERS, **{name: name for name in FAMILIES}}
#: The latest CARLA release (the UE4 line's 0.9.16, September 2025).
DEFAULT_RELEASE = "0.9.16"


def release_family(release: str) -> Family:
    """The family `release` (a release number such as 0.9.15, or a family name) writes."""
    name = RELEASES.get(release)
    if name is None:
        raise UnknownNameError(f"unknown CARLA release {release!r}; known: {', '.join(RELEASES)}")
    return FAMILIES[name]
