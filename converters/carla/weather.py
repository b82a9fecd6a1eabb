"""The weather a CARLA recording holds: one value type with `carla.WeatherParameters`' names.

Only recordings of the 2026 line (ue4-dev after PR #9556, ue5-dev after PR #9708) carry a
Weather packet (id 24, spec §5.24): fourteen float32 per record, written once when the
recording starts and again whenever the weather is set. CARLA's replayer applies the
records in file order, so the weather of a frame is the last record at or before it.
No real recording with this packet exists yet in our data; what we know of it comes from
CARLA's sources (`CarlaRecorderWeather.cpp`) and the files our generator writes.

`Weather` is also a read-only mapping of its fields, so `dict(world.weather)` gives the
same keys and values as before it became a value type.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from nanorec.errors import FormatError

__all__ = ["WEATHER_FIELDS", "Weather"]


@dataclass(frozen=True)
class Weather(Mapping[str, float]):
    """One Weather record: `carla.WeatherParameters`' fields, in the file's order.

    As CARLA's Python API documents them: the sun angles in degrees, `fog_distance` in
    metres, cloudiness, precipitation, deposits, wind, fog density, wetness and dust storm
    0-100, the rest (fog falloff, scattering) unitless factors. The values are the file's
    float32 numbers widened to float (no rounding).
    """

    cloudiness: float
    precipitation: float
    precipitation_deposits: float
    wind_intensity: float
    sun_azimuth_angle: float
    sun_altitude_angle: float
    fog_density: float
    fog_distance: float
    fog_falloff: float
    wetness: float
    scattering_intensity: float
    mie_scattering_scale: float
    rayleigh_scattering_scale: float
    dust_storm: float

    @classmethod
    def from_record(cls, record: np.void | tuple[Any, ...]) -> Weather:
        """From one record of the Weather dtype (`fixed_dtype(Kind.WEATHER, engine)`)."""
        values = record.tolist() if isinstance(record, np.void) else record
        if len(values) != len(WEATHER_FIELDS):
            raise FormatError(
                f"a Weather record has {len(WEATHER_FIELDS)} values, not {len(values)}"
            )
        # Built on every seek: fill the frozen instance directly, not through 14 setattrs.
        weather = object.__new__(cls)
        weather.__dict__.update(zip(WEATHER_FIELDS, map(float, values), strict=True))
        return weather

    def __getitem__(self, name: str) -> float:
        if name not in _NAMES:
            raise KeyError(name)
        value: float = getattr(self, name)
        return value

    def __iter__(self) -> Iterator[str]:
        return iter(WEATHER_FIELDS)

    def __len__(self) -> int:
        return len(WEATHER_FIELDS)


WEATHER_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(Weather))
_NAMES = frozenset(WEATHER_FIELDS)
