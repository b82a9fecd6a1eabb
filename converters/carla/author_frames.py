"""What each frame of an authored recording holds: frame times, and every actor's samples
at the frames it exists in, interpolated between its rows and put in the file's units.

Kept apart from the writing (`author.py`) because it is the numerical part: samples are
computed per actor with numpy, then merged into per-kind streams sorted by frame, so that
writing a frame is a few array slices, whatever the number of actors.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from nanorec.errors import UsageError

from .author_table import ActorRows, TrajectoryTable
from .geometry import elapsed_times, normalize_rotation, wrap_degrees

__all__ = ["MAX_FRAMES", "Stream", "Track", "frame_times", "stream", "track"]

#: More frames than this is a mistake (`fps` far too high for the table's span).
MAX_FRAMES = 10_000_000
_EPS = 1e-6  # seconds: a frame this close to an actor's first or last row is at it
_LINEAR_CONTROLS = ("throttle", "steer", "brake")

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]


@dataclass
class Track:
    """One actor's samples at frames `first` .. `first + len(location) - 1`."""

    actor: ActorRows
    first: int
    location: F64  # (n, 3) cm
    rotation: F64  # (n, 3) roll, pitch, yaw in CARLA's ranges
    controls: dict[str, npt.NDArray[np.generic]]  # throttle, steer, brake, hand_brake, gear
    speed: F64  # ground speed (cm/s) from the samples

    @property
    def last(self) -> int:
        return self.first + len(self.location) - 1


def frame_times(times: F64, fps: float | None) -> tuple[F64, F64]:
    """The frames' table times and elapsed seconds: the distinct times of the table, or a
    fixed `fps` step from the first time to the last, summed from float32 steps as a
    CARLA server at that fixed delta does (`geometry.elapsed_times`)."""
    start, end = float(times.min()), float(times.max())
    if fps is None:
        at = np.unique(times)
        return at, at - start
    if not (math.isfinite(fps) and fps > 0):
        raise UsageError(f"--fps must be a positive number of frames per second, not {fps}")
    steps = (end - start) * fps
    if not steps < MAX_FRAMES:  # also a span so long that it overflows
        raise UsageError(
            f"--fps {fps:g} over {end - start:g} s makes {steps + 1:.0f} frames; "
            f"at most {MAX_FRAMES} are written"
        )
    count = math.floor(steps + 1e-9) + 1
    elapsed = elapsed_times(np.full(count, 1.0 / fps))
    return start + elapsed, elapsed


def track(table: TrajectoryTable, actor: ActorRows, times: F64) -> Track | None:
    """`actor`'s samples at the frame `times` between its first and last rows (None when
    no frame falls there). Locations and controls are linear between rows, angles turn the
    shorter way; hand_brake and gear are the row's at or before the frame."""
    columns, rows = table.columns, actor.rows
    t = columns["t"][rows]
    lo = int(np.searchsorted(times, t[0] - _EPS, "left"))
    hi = int(np.searchsorted(times, t[-1] + _EPS, "right"))
    if hi <= lo:
        return None
    j, frac = _segments(t, np.clip(times[lo:hi], t[0], t[-1]))
    # cm; + 0.0 turns a -0.0 into the 0 a server would print
    location = np.stack([_lerp(columns[a][rows], j, frac) for a in "xyz"], axis=-1) * 100.0
    location += 0.0
    angles = [_angles(columns, name, rows, j, frac) for name in ("roll", "pitch", "yaw")]
    step = np.where(frac >= 1.0, j + 1, j)  # the row at or before each frame
    zeros = np.zeros(hi - lo)
    controls: dict[str, npt.NDArray[np.generic]] = {
        name: _lerp(columns[name][rows], j, frac) if name in columns else zeros
        for name in _LINEAR_CONTROLS
    }
    controls["hand_brake"] = (
        columns["hand_brake"][rows][step] if "hand_brake" in columns else zeros.astype(bool)
    )
    gear = columns["gear"][rows][step] if "gear" in columns else zeros.astype(np.int64)
    if "reverse" in columns:  # the file has no reverse flag: a reversing car is in gear -1
        gear = np.where(columns["reverse"][rows][step], -1, gear)
    controls["gear"] = gear
    return Track(
        actor,
        lo,
        location,
        _file_rotation(np.stack(angles, axis=-1)),
        controls,
        _speed(location, times[lo:hi]),
    )


@dataclass
class Stream:
    """Per-sample columns of many tracks, sorted by frame (then track order)."""

    ids: npt.NDArray[np.int64]
    columns: dict[str, npt.NDArray[np.generic]]
    bounds: I64  # frame f's samples are bounds[f]:bounds[f + 1]

    def at(self, frame: int) -> slice:
        return slice(int(self.bounds[frame]), int(self.bounds[frame + 1]))


def stream(
    tracks: list[Track],
    frames: int,
    columns: Callable[[Track], Mapping[str, npt.NDArray[np.generic]]],
) -> Stream:
    """Merge `columns(track)` (arrays of a row per sample) of `tracks` into one stream."""
    if not tracks:
        return Stream(np.empty(0, np.int64), {}, np.zeros(frames + 1, np.int64))
    sizes = [len(t.location) for t in tracks]
    frame_of = np.concatenate([np.arange(t.first, t.last + 1) for t in tracks])
    rank = np.repeat(np.arange(len(tracks)), sizes)
    order = np.lexsort((rank, frame_of))
    ids = np.repeat([t.actor.actor_id for t in tracks], sizes)[order]
    per_track = [columns(t) for t in tracks]
    merged = {name: np.concatenate([c[name] for c in per_track])[order] for name in per_track[0]}
    bounds = np.searchsorted(frame_of[order], np.arange(frames + 1)).astype(np.int64)
    return Stream(ids, merged, bounds)


# ------------------------------------------------------------------------------ numerics


def _segments(t: F64, at: F64) -> tuple[I64, F64]:
    """For each time of `at` (within t[0]..t[-1]): the row j before it and the fraction of
    the way to row j + 1 (a one-row actor: j 0, fraction 0)."""
    if len(t) == 1:
        return np.zeros(len(at), dtype=np.int64), np.zeros(len(at))
    j = np.clip(np.searchsorted(t, at, "right") - 1, 0, len(t) - 2).astype(np.int64)
    frac: F64 = np.clip((at - t[j]) / (t[j + 1] - t[j]), 0.0, 1.0)
    return j, frac


def _lerp(values: F64, j: I64, frac: F64) -> F64:
    """Linear interpolation, exact at the rows themselves (fraction 0 or 1)."""
    a = values[j].astype(np.float64)
    if len(values) == 1:
        return a
    b = values[j + 1].astype(np.float64)
    out: F64 = np.where(frac <= 0.0, a, np.where(frac >= 1.0, b, a + frac * (b - a)))
    return out


def _angles(
    columns: dict[str, npt.NDArray[np.generic]], name: str, rows: I64, j: I64, frac: F64
) -> F64:
    """An angle column interpolated along the shorter arc (0 when the column is absent)."""
    if name not in columns:
        return np.zeros(len(j))
    values = columns[name][rows].astype(np.float64)
    a = values[j]
    if len(values) == 1:
        return a
    b = values[j + 1]
    turn = _wrapped(b - a)
    out: F64 = np.where(frac <= 0.0, a, np.where(frac >= 1.0, b, a + frac * turn))
    return out


def _wrapped(angles: F64) -> F64:
    """Angles wrapped into (-180, 180]; those already there kept exactly (wrapping a
    -1e-10 through a modulo would cost it its digits)."""
    inside = (angles > -180.0) & (angles <= 180.0)
    out: F64 = np.where(inside, angles, wrap_degrees(angles))
    return out


def _file_rotation(rotations: F64) -> F64:
    """(roll, pitch, yaw) as CARLA records them: angles wrapped into (-180, 180], and
    through the quaternion (CARLA's Euler ranges) where a pitch is beyond ±90."""
    wrapped = _wrapped(rotations) + 0.0
    beyond = np.abs(wrapped[:, 1]) > 90.0
    if beyond.any():
        wrapped[beyond] = normalize_rotation(wrapped[beyond])
    return wrapped


def _speed(location: F64, times: F64) -> F64:
    """Ground speed (cm/s, the engine's unit for a walker's speed; spec §1) from each
    sample and the one before (the one after, for the first)."""
    if len(location) < 2:
        return np.zeros(len(location))
    steps = np.diff(times)
    moved = np.hypot(*np.diff(location[:, :2], axis=0).T)
    speed = np.divide(moved, steps, out=np.zeros_like(moved), where=steps > 0)
    out: F64 = np.concatenate([speed[:1], speed])
    return out
