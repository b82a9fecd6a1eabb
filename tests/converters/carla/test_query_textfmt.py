"""The C-compatible number and date formatting behind the query text, checked against C.

`fmt_g`/`fmt_f0` must equal the C library's `snprintf("%g")`/`"%.0f"` for every double,
because CARLA's text is produced by the server's C library; here the local glibc is the
reference, called through ctypes, on random bit patterns, float32-widened values, exact
ties and the special values.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import math
import random
import struct
import sys
from datetime import timedelta, timezone

import pytest

from nanorec.converters.carla.textfmt import (
    fmt_f0,
    fmt_g,
    format_date,
    pad_left,
    pad_right,
    parse_zone,
)


def _libc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    name = ctypes.util.find_library("c")
    return ctypes.CDLL(name) if name else None


LIBC = _libc()
needs_glibc = pytest.mark.skipif(LIBC is None, reason="needs the C library (glibc)")


def c_format(fmt: bytes, x: float) -> str:
    assert LIBC is not None
    buf = ctypes.create_string_buffer(512)
    LIBC.snprintf(buf, 512, fmt, ctypes.c_double(x))
    return buf.value.decode()


SPECIAL = [
    -9144.125,
    -8781.625,
    1e-05,
    1.23456789e-05,
    1234567.0,
    1234565.0,
    1234575.0,
    123456.5,
    0.5,
    1.5,
    2.5,
    -2.5,
    -0.0,
    0.0,
    -0.4,
    1e300,
    5e-324,
    float("inf"),
    float("-inf"),
    float("nan"),
    -float("nan"),
    0.05000000074505806,
    25.00000037252903,
]


def _values() -> list[float]:
    rng = random.Random(20261121)
    values = list(SPECIAL)
    for _ in range(6000):
        values.append(struct.unpack("<d", rng.getrandbits(64).to_bytes(8, "little"))[0])
        values.append(struct.unpack("<f", rng.getrandbits(32).to_bytes(4, "little"))[0])
        values.append(rng.randint(-(10**8), 10**8) / 8)  # many exact ties
        values.append(rng.uniform(-1e5, 1e5))
    return values


@needs_glibc
def test_g_and_f0_equal_glibc_printf() -> None:
    mismatches = [
        (x, fmt, ours, c_format(fmt, x))
        for x in _values()
        for fmt, ours in ((b"%g", fmt_g(x)), (b"%.0f", fmt_f0(x)))
        if ours != c_format(fmt, x)
    ]
    assert mismatches == []


@needs_glibc
@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (-9144.125, "-9144.12"),  # exact tie: half to even (spec §7.8)
        (-8781.625, "-8781.62"),
        (1e-05, "1e-05"),
        (1234567.0, "1.23457e+06"),
        (-0.0, "-0"),
        (float("inf"), "inf"),
        (float("-inf"), "-inf"),
        (float("nan"), "nan"),
        (-float("nan"), "-nan"),
    ],
)
def test_g_known_values(value: float, expected: str) -> None:
    assert fmt_g(value) == expected == c_format(b"%g", value)


def test_windows_ties_round_away_from_zero() -> None:
    # A Windows server printed these exact binary values with the 6th digit rounded up.
    assert fmt_g(-9144.125, windows=True) == "-9144.13"
    assert fmt_g(-8781.625, windows=True) == "-8781.63"
    assert fmt_g(1234565.0, windows=True) == "1.23457e+06"
    assert fmt_g(9999995.0, windows=True) == "1e+07"
    assert fmt_g(0.1, windows=True) == "0.1"  # not a tie: same as glibc
    assert fmt_f0(2.5, windows=True) == "3"
    assert fmt_f0(-0.5, windows=True) == "-1"
    assert fmt_f0(2.5) == "2"


def test_windows_nan_forms() -> None:
    def from_bits(bits: int) -> float:
        return float(struct.unpack("<d", struct.pack("<Q", bits))[0])

    assert fmt_g(from_bits(0xFFF8000000000000), windows=True) == "-nan(ind)"
    assert fmt_g(from_bits(0x7FF8000000000000), windows=True) == "nan"
    assert fmt_g(from_bits(0x7FF0000000000001), windows=True) == "nan(snan)"
    assert fmt_g(from_bits(0xFFF8000000000001), windows=True) == "-nan"
    assert fmt_g(float("inf"), windows=True) == "inf"
    assert fmt_f0(float("-inf"), windows=True) == "-inf"
    assert math.isnan(from_bits(0xFFF8000000000000))


def test_padding_counts_utf8_bytes_and_never_truncates() -> None:
    assert pad_right("Id", 6) == "    Id"
    assert pad_left("Actor 2", 35) == "Actor 2" + " " * 28
    assert pad_right("4294967295", 6) == "4294967295"
    assert pad_left("é", 3) == "é "  # two bytes + one space


def test_date_is_c_locale_x_and_X_in_the_zone() -> None:
    stamp = 1599118659  # 2020-09-03 07:37:39 UTC
    assert format_date(stamp) == "09/03/20 07:37:39"
    assert format_date(stamp, parse_zone("Europe/Berlin")) == "09/03/20 09:37:39"
    assert format_date(stamp, parse_zone("+02:00")) == "09/03/20 09:37:39"
    assert format_date(stamp, parse_zone("-0530")) == "09/03/20 02:07:39"
    assert format_date(stamp, parse_zone("America/New_York")) == "09/03/20 03:37:39"
    assert format_date(0, parse_zone("UTC")) == "01/01/70 00:00:00"
    assert format_date(10**15).count("/") == 2  # far outside datetime: still C-shaped


def test_parse_zone_rejects_bad_names() -> None:
    assert parse_zone(None) is timezone.utc
    assert parse_zone("+02:00").utcoffset(None) == timedelta(hours=2)
    with pytest.raises(ValueError, match="unknown time zone 'Mars/Base'"):
        parse_zone("Mars/Base")
    with pytest.raises(ValueError, match="out of range"):
        parse_zone("+25:00")
