"""Time zones named on the command line (`--tz`): IANA names, offsets, UTC."""

from __future__ import annotations

import re
from datetime import timedelta, timezone, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from nanorec.errors import UsageError

_OFFSET = re.compile(r"^(?:UTC|GMT)?([+-])(\d{1,2})(?::?(\d{2}))?$")


def parse_zone(name: str | None) -> tzinfo:
    """A time zone from an IANA name (`Europe/Berlin`), an offset (`+02:00`, `-0530`,
    `UTC+1`) or `UTC`/`Z`; `None` means UTC. Raises ValueError naming the bad value."""
    if name is None or name.strip().upper() in ("", "UTC", "Z", "GMT"):
        return timezone.utc
    text = name.strip()
    match = _OFFSET.match(text.upper())
    if match:
        sign, hours, minutes = match.groups()
        delta = timedelta(hours=int(hours), minutes=int(minutes or 0))
        if delta >= timedelta(hours=24):
            raise UsageError(f"time zone offset {name!r} is out of range (must be under 24 h)")
        return timezone(-delta if sign == "-" else delta)
    try:
        return ZoneInfo(text)
    except (ZoneInfoNotFoundError, ValueError):
        raise UsageError(
            f"unknown time zone {name!r}: give an IANA name such as Europe/Berlin "
            "or an offset such as +02:00"
        ) from None
