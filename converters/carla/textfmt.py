"""C-compatible text formatting for reproducing CARLA's query output byte for byte.

CARLA builds its query text with a C++ `std::stringstream`, so every number goes through
the server's C library: `%g` (precision 6) by default, `%.0f` after `std::fixed` with
`setprecision(0)`, and the date through `strftime("%x %X")` on `localtime` (spec §7.1,
§7.8). Python's own `%g`/`%.0f` already round the *exact* binary value half to even,
which is what glibc does, so the glibc mode is a thin wrapper that only adds glibc's
`-nan`. The Windows mode differs in two documented ways: exact ties round half away from
zero (a Windows server printed -9144.125 as `-9144.13`, spec §7.8), and NaNs print the
UCRT way. Everything here is pure and cheap: these functions run once per printed number.
"""

from __future__ import annotations

import math
import struct
from datetime import datetime, timedelta, timezone, tzinfo
from decimal import ROUND_HALF_UP, Decimal

from nanorec.timezones import parse_zone

_U64 = struct.Struct("<Q")
_F64 = struct.Struct("<d")
_SIGN = 1 << 63
_QUIET = 1 << 51
_MANTISSA = (1 << 52) - 1


def _nan_text(x: float, windows: bool) -> str:
    bits = _U64.unpack(_F64.pack(x))[0]
    negative = bool(bits & _SIGN)
    if not windows:
        # glibc prints the sign bit of a NaN and nothing about its payload.
        return "-nan" if negative else "nan"
    # The UCRT (VS2015+) classifies NaNs before printing: the x86 "indefinite" value
    # (sign set, only the quiet bit in the mantissa; what 0/0 produces) prints `nan(ind)`,
    # a signalling NaN `nan(snan)`, any other quiet NaN `nan`; the sign is printed in front.
    # Source: Microsoft's printf documentation ("Infinity and NaN formatting", UCRT).
    mantissa = bits & _MANTISSA
    sign = "-" if negative else ""
    if negative and mantissa == _QUIET:
        return f"{sign}nan(ind)"
    if not mantissa & _QUIET:
        return f"{sign}nan(snan)"
    return f"{sign}nan"


def _is_tie(x: float, digits: int) -> Decimal | None:
    """The exact value of `x` if it lies exactly halfway at `digits` significant digits."""
    exact = Decimal(x)
    _sign, coefficient, _exponent = exact.as_tuple()
    text = "".join(map(str, coefficient)).rstrip("0")
    if len(text) == digits + 1 and text.endswith("5"):
        return exact
    return None


def fmt_g(x: float, *, windows: bool = False) -> str:
    """`x` as a default-formatted C++ stream prints a double: C `%g` (precision 6).

    glibc rounds the exact binary value half to even (as Python does); with `windows`,
    exact ties round half away from zero as the Windows C runtime does.
    """
    if x != x:
        return _nan_text(x, windows)
    if windows and math.isfinite(x) and x != 0.0:
        exact = _is_tie(x, 6)
        if exact is not None:
            quantum = Decimal(1).scaleb(exact.adjusted() - 5)
            return format(float(exact.quantize(quantum, rounding=ROUND_HALF_UP)), "g")
    return format(x, "g")


def fmt_f0(x: float, *, windows: bool = False) -> str:
    """`x` as C `%.0f` (what `std::fixed` with `setprecision(0)` prints).

    Exact .5 ties round half to even (glibc) or, with `windows`, away from zero.
    """
    if x != x:
        return _nan_text(x, windows)
    if windows and math.isfinite(x) and abs(x) < 2.0**52:
        whole = math.trunc(x)
        if abs(x - whole) == 0.5:
            return format(whole + math.copysign(1.0, x), ".0f")
    return format(x, ".0f")


def pad_right(text: str, width: int) -> str:
    """`std::setw(width) << std::right << text`: spaces in front, never truncates.

    The width counts bytes of the UTF-8 text, as the C++ stream does.
    """
    size = len(text.encode("utf-8", "surrogateescape"))
    return " " * (width - size) + text if size < width else text


def pad_left(text: str, width: int) -> str:
    """`std::setw(width) << std::left << text`: spaces behind, never truncates (bytes)."""
    size = len(text.encode("utf-8", "surrogateescape"))
    return text + " " * (width - size) if size < width else text


def _civil_from_days(days: int) -> tuple[int, int, int]:
    """Proleptic Gregorian (year, month, day) of a day count from 1970-01-01."""
    z = days + 719468
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = mp + 3 if mp < 10 else mp - 9
    return yoe + era * 400 + (month <= 2), month, day


def format_date(seconds: int, zone: tzinfo | None = None) -> str:
    """`strftime("%x %X", localtime(seconds))` in the C locale: `MM/DD/YY HH:MM:SS`.

    `seconds` is Unix time (the header's date); `zone` is the server's local zone
    (default UTC). Dates outside Python's datetime range use the zone's offset at the
    nearest representable instant, as a proleptic Gregorian date.
    """
    zone = zone or timezone.utc
    try:
        local = datetime.fromtimestamp(seconds, zone)
        year, month, day = local.year, local.month, local.day
        hour, minute, second = local.hour, local.minute, local.second
    except (OverflowError, OSError, ValueError):
        bound = datetime(9999 if seconds > 0 else 1, 6, 1, tzinfo=timezone.utc)
        offset = bound.astimezone(zone).utcoffset() or timedelta(0)
        total = seconds + int(offset.total_seconds())
        days, rest = divmod(total, 86400)
        year, month, day = _civil_from_days(days)
        hour, rest = divmod(rest, 3600)
        minute, second = divmod(rest, 60)
    return f"{month:02d}/{day:02d}/{year % 100:02d} {hour:02d}:{minute:02d}:{second:02d}"


__all__ = ["fmt_f0", "fmt_g", "format_date", "pad_left", "pad_right", "parse_zone"]
